package sweeper

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/pager"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// listTask is one paged list: a resource, in one namespace or across all of them.
type listTask struct {
	resource  rules.Resource
	namespace string
	// fieldSelector keeps excluded namespaces out of a list across all namespaces.
	fieldSelector string
	// content lists full objects through the dynamic client instead of metadata: those matching
	// labelSelector, keeping fields (all if nil).
	content       bool
	labelSelector string
	fields        []string
	// ownNamespacesOnly keeps only the objects of the namespaces the run's shard owns.
	ownNamespacesOnly bool
	// annotations are those the objects keep.
	annotations rules.KeptAnnotations
}

type listResult struct {
	objects []*rules.Object
	err     error
}

// observe lists every object of every resource, page by page and with at most --concurrency
// lists at a time. Lists go through the metadata client (names, labels, finalizers,
// ownerReferences, deletionTimestamp: no spec or status bytes), except for what rules read in
// full (content): those objects come from the dynamic client, trimmed to the fields the rules
// read. Objects keep the annotations the rules read, no others. A list that fails is reported, the
// view records it, and the run goes on.
func (e *Engine) observe(ctx context.Context, inv inventory, content map[schema.GroupResource]contentPlan) (*rules.View, []report.Error, error) {
	filter := namespaceFilter{include: e.Config.IncludeNamespaces, exclude: e.Config.ExcludeNamespaces}
	whole, annotations := e.wholeResources(), e.keptAnnotations()
	tasks, walked, err := e.listTasks(ctx, inv.resources, filter, content, whole)
	if err != nil {
		return nil, nil, err
	}
	for i := range tasks {
		tasks[i].annotations = annotations
	}

	results := make([]listResult, len(tasks))
	progress := newProgress(e.Progress, len(tasks))
	stop := progress.show(ctx)
	var g errgroup.Group
	g.SetLimit(e.Config.Concurrency)
	for i, task := range tasks {
		g.Go(func() error {
			results[i] = e.list(ctx, task, filter)
			progress.done(len(results[i].objects))
			return nil
		})
	}
	_ = g.Wait() // tasks report their errors in their results
	stop()

	coverage := rules.Coverage{Unlisted: inv.unlisted, UndiscoveredGroups: inv.undiscovered, Namespaces: walked,
		Shard: e.shardCoverage(inv.resources, whole), KeptAnnotations: annotations}
	if filter.active() {
		coverage.Partial = []schema.GroupResource{rules.Namespaces.GroupResource()} // filtered by name
	}
	var objects []*rules.Object
	var problems []report.Error
	// Objects listed in full by selector replace their metadata.
	full := map[types.UID]*rules.Object{}
	for i, res := range results {
		if tasks[i].labelSelector != "" {
			for _, obj := range res.objects {
				full[obj.UID] = obj
			}
		} else {
			objects = append(objects, res.objects...)
		}
		if res.err != nil {
			task := tasks[i]
			coverage.Failed = append(coverage.Failed, task.resource.GroupResource())
			problems = append(problems, report.Error{Stage: report.StageObserve, Resource: task.String(), Message: res.err.Error()})
		}
	}
	for i, obj := range objects {
		if replacement, ok := full[obj.UID]; ok {
			objects[i] = replacement
			delete(full, obj.UID)
		}
	}
	for _, obj := range full { // created between the two lists
		objects = append(objects, obj)
	}
	if err := ctx.Err(); err != nil {
		return nil, problems, fmt.Errorf("list objects: %w", err)
	}
	return rules.NewView(e.Clock.Now(), inv.resources, coverage, objects), problems, nil
}

// listTasks splits the walk into lists. Without namespace filters, each resource is one list
// across the cluster. With them, namespace patterns are first resolved against the namespaces
// that exist, so that an excluded namespace is never listed: included namespaces are listed one
// by one, excluded ones are kept out by a field selector. It also returns the namespaces walked,
// nil meaning all. Whole are the resources the shard lists in full.
func (e *Engine) listTasks(ctx context.Context, resources []rules.Resource, filter namespaceFilter, content map[schema.GroupResource]contentPlan, whole map[schema.GroupResource]bool) ([]listTask, []string, error) {
	var walked, excluded []string
	if filter.active() {
		namespaces, err := e.namespaces(ctx)
		if err != nil {
			return nil, nil, err
		}
		walked = []string{}
		for _, ns := range namespaces {
			if filter.allows(ns) {
				walked = append(walked, ns)
			} else {
				excluded = append(excluded, ns)
			}
		}
	}
	selector := make([]string, 0, len(excluded))
	for _, ns := range excluded {
		selector = append(selector, "metadata.namespace!="+ns)
	}

	var tasks []listTask
	shard := e.Config.Shard
	for _, r := range resources {
		sharding := shard.plan(r, whole)
		if sharding == listedElsewhere {
			continue
		}
		plan := content[r.GroupResource()] // zero for a resource no rule reads: metadata only
		lists := []listTask{{resource: r, content: plan.all, fields: plan.fields}}
		for _, s := range plan.selectors {
			lists = append(lists, listTask{resource: r, content: true, labelSelector: s, fields: plan.fields})
		}
		for i := range lists {
			lists[i].ownNamespacesOnly = sharding == keepOwnNamespaces
		}
		for _, task := range lists {
			switch {
			case !r.Namespaced:
				tasks = append(tasks, task)
			case len(filter.include) > 0:
				for _, ns := range walked {
					task.namespace = ns
					tasks = append(tasks, task)
				}
			default:
				task.fieldSelector = strings.Join(selector, ",")
				tasks = append(tasks, task)
			}
		}
	}
	return tasks, walked, nil
}

// shardCoverage says what the run's shard left to the others, nil for a whole sweep.
func (e *Engine) shardCoverage(resources []rules.Resource, whole map[schema.GroupResource]bool) *rules.ShardCoverage {
	shard := e.Config.Shard
	if !shard.sharded() {
		return nil
	}
	coverage := &rules.ShardCoverage{Owns: shard.ownsNamespace}
	for _, r := range resources {
		switch shard.plan(r, whole) {
		case keepOwnNamespaces:
			coverage.Namespaced = append(coverage.Namespaced, r.GroupResource())
		case listedElsewhere:
			coverage.Elsewhere = append(coverage.Elsewhere, r.GroupResource())
		}
	}
	return coverage
}

func (e *Engine) namespaces(ctx context.Context) ([]string, error) {
	var names []string
	client := e.Clients.Metadata.Resource(rules.Namespaces.GroupVersionResource)
	err := newPager(client.List, e.Config.PageSize).EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		names = append(names, obj.(*metav1.PartialObjectMetadata).Name)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list namespaces to resolve --include-namespaces/--exclude-namespaces: %w", err)
	}
	return names, nil
}

// newPager pages through a list function of any typed, metadata or dynamic client.
func newPager[L runtime.Object](list func(context.Context, metav1.ListOptions) (L, error), pageSize int64) *pager.ListPager {
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return list(ctx, opts)
	})
	p.PageSize = pageSize
	return p
}

// list runs one task. Namespace filtering is also applied to what comes back, which covers
// namespaces created after they were resolved and Namespace objects themselves.
func (e *Engine) list(ctx context.Context, task listTask, filter namespaceFilter) listResult {
	var res listResult
	shard := e.Config.Shard
	add := func(obj *rules.Object) {
		scope := namespaceOf(task.resource.GroupVersionResource, obj.Namespace, obj.Name)
		if (scope == "" || filter.allows(scope)) && (!task.ownNamespacesOnly || shard.ownsNamespace(scope)) {
			res.objects = append(res.objects, obj)
		}
	}
	opts := metav1.ListOptions{FieldSelector: task.fieldSelector, LabelSelector: task.labelSelector}
	if len(opts.FieldSelector) > maxFieldSelector {
		opts.FieldSelector = "" // an over-long URL; filter on our side instead
	}
	listAll := func() error {
		res.objects = nil
		return eachObject(ctx, e.Clients, e.Config.PageSize, task, opts, add)
	}
	res.err = listAll()
	if apierrors.IsResourceExpired(res.err) || apierrors.IsGone(res.err) {
		// The continue token of a later page expired (etcd compacted past the list's revision):
		// the pages already read are of another revision, so the list starts over, once. client-go's
		// pager falls back to a full list only in List, not in EachListItem.
		e.Logger.InfoContext(ctx, "list expired while paging; listing again from the start", "list", task.String(), "error", res.err)
		res.err = listAll()
	}
	if res.err != nil && opts.FieldSelector != "" && (apierrors.IsBadRequest(res.err) || uriTooLong(res.err)) {
		// Some aggregated APIs do not support field selectors, and a proxy may refuse a long URL;
		// filter on our side instead.
		opts.FieldSelector = ""
		res.err = listAll()
	}
	return res
}

// maxFieldSelector is the longest field selector sent (many --exclude-namespaces): URLs are
// commonly limited to 8 KiB on the way to the API server.
const maxFieldSelector = 4096

// uriTooLong reports whether err is a 414 Request-URI Too Long.
func uriTooLong(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code == http.StatusRequestURITooLong
}

// eachObject lists the task's objects page by page and hands each to fn.
func eachObject(ctx context.Context, clients *Clients, pageSize int64, task listTask, opts metav1.ListOptions, fn func(*rules.Object)) error {
	gvr := task.resource.GroupVersionResource
	resource, in := task.resource, newInterner() // shared by the list's objects
	in.annotations = task.annotations
	if task.content {
		client := dynamicClient(clients.Dynamic, gvr, task.namespace)
		return newPager(client.List, pageSize).EachListItem(ctx, opts, func(obj runtime.Object) error {
			fn(in.contentObject(&resource, obj.(*unstructured.Unstructured), task.fields))
			return nil
		})
	}
	client := resourceClient(clients.Metadata, gvr, task.namespace)
	return newPager(client.List, pageSize).EachListItem(ctx, opts, func(obj runtime.Object) error {
		fn(in.object(&resource, &obj.(*metav1.PartialObjectMetadata).ObjectMeta))
		return nil
	})
}

// newObject keeps what rules read of an object's metadata, every annotation included: it is one
// object read again, which costs little, and no rule reads more of it than of the view's.
func newObject(r *rules.Resource, meta metav1.ObjectMeta) *rules.Object {
	return newInterner().object(r, &meta)
}

// newContentObject splits a full object into its metadata and the rest, of which it keeps only
// fields (all if nil); of its annotations, every one, as newObject.
func newContentObject(r *rules.Resource, u *unstructured.Unstructured, fields []string) *rules.Object {
	return newInterner().contentObject(r, u, fields)
}

// object keeps what rules read of a listed object's metadata, of its annotations those the
// interner keeps, shared with the other objects of its list.
func (in *interner) object(r *rules.Resource, meta *metav1.ObjectMeta) *rules.Object {
	m := rules.MetaOf(meta)
	m.Namespace = in.string(m.Namespace)
	m.Labels = in.stringMap(m.Labels)
	m.Annotations = in.stringMap(in.annotations.Of(m.Annotations))
	m.OwnerReferences = in.ownerReferences(m.OwnerReferences)
	m.Finalizers = in.finalizerList(m.Finalizers)
	return &rules.Object{Resource: r, Meta: m}
}

// contentObject is object for a full object, of which it keeps only fields (all if nil).
func (in *interner) contentObject(r *rules.Resource, u *unstructured.Unstructured, fields []string) *rules.Object {
	meta := metav1.ObjectMeta{
		Namespace:                  u.GetNamespace(),
		Name:                       u.GetName(),
		UID:                        u.GetUID(),
		ResourceVersion:            u.GetResourceVersion(),
		CreationTimestamp:          u.GetCreationTimestamp(),
		DeletionTimestamp:          u.GetDeletionTimestamp(),
		DeletionGracePeriodSeconds: u.GetDeletionGracePeriodSeconds(),
		Labels:                     u.GetLabels(),
		Annotations:                u.GetAnnotations(),
		OwnerReferences:            u.GetOwnerReferences(),
		Finalizers:                 u.GetFinalizers(),
	}
	obj := in.object(r, &meta)
	if fields == nil {
		obj.Content = maps.Clone(u.Object)
		delete(obj.Content, "metadata")
		return obj
	}
	// A copy of the few fields kept, so that the rest of the object can be freed.
	obj.Content = map[string]any{}
	for _, f := range fields {
		path := strings.Split(f, ".")
		if v, found, _ := unstructured.NestedFieldNoCopy(u.Object, path...); found {
			_ = unstructured.SetNestedField(obj.Content, v, path...) // copies v; cannot fail on an empty map
		}
	}
	return obj
}

// resourceClient is the metadata client of a resource, in namespace if it is not empty.
func resourceClient(client metadata.Interface, gvr schema.GroupVersionResource, namespace string) metadata.ResourceInterface {
	if namespace == "" {
		return client.Resource(gvr)
	}
	return client.Resource(gvr).Namespace(namespace)
}

// dynamicClient is the dynamic client of a resource, in namespace if it is not empty.
func dynamicClient(client dynamic.Interface, gvr schema.GroupVersionResource, namespace string) dynamic.ResourceInterface {
	if namespace == "" {
		return client.Resource(gvr)
	}
	return client.Resource(gvr).Namespace(namespace)
}

func (t listTask) String() string {
	s := t.resource.String()
	if t.labelSelector != "" {
		s += " (" + t.labelSelector + ")"
	}
	if t.namespace != "" {
		s += " in " + t.namespace
	}
	return s
}
