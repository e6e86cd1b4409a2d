package sweeper

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/pager"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

var namespacesResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// listTask is one paged list: a resource, in one namespace or across all of them.
type listTask struct {
	resource  rules.Resource
	namespace string
	// fieldSelector keeps excluded namespaces out of a list across all namespaces.
	fieldSelector string
}

type listResult struct {
	objects []*rules.Object
	err     error
}

// observe lists every object of every resource through the metadata client (names, labels,
// finalizers, ownerReferences, deletionTimestamp: no spec or status bytes), page by page and
// with at most --concurrency lists at a time. A list that fails is reported and the resource is
// marked as not fully observed, as is every namespaced resource under a namespace filter; the
// run goes on.
func (e *Engine) observe(ctx context.Context, resources []rules.Resource) (*rules.View, []ReportError, error) {
	filter := namespaceFilter{include: e.Options.IncludeNamespaces, exclude: e.Options.ExcludeNamespaces}
	tasks, err := e.listTasks(ctx, resources, filter)
	if err != nil {
		return nil, nil, err
	}

	results := make([]listResult, len(tasks))
	var g errgroup.Group
	g.SetLimit(e.Options.Concurrency)
	for i, task := range tasks {
		g.Go(func() error {
			results[i] = e.list(ctx, task, filter)
			return nil
		})
	}
	_ = g.Wait() // tasks report their errors in their results

	var objects []*rules.Object
	var problems []ReportError
	var partial []schema.GroupResource
	if filter.active() {
		for _, r := range resources {
			if r.Namespaced {
				partial = append(partial, r.GroupResource())
			}
		}
	}
	for i, res := range results {
		objects = append(objects, res.objects...)
		if res.err != nil {
			task := tasks[i]
			partial = append(partial, task.resource.GroupResource())
			problems = append(problems, ReportError{Stage: StageObserve, Resource: task.String(), Message: res.err.Error()})
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, problems, fmt.Errorf("list objects: %w", err)
	}
	return rules.NewView(e.Clock.Now(), resources, partial, objects), problems, nil
}

// listTasks splits the walk into lists. Without namespace filters, each resource is one list
// across the cluster. With them, namespace patterns are first resolved against the namespaces
// that exist, so that an excluded namespace is never listed: included namespaces are listed one
// by one, excluded ones are kept out by a field selector.
func (e *Engine) listTasks(ctx context.Context, resources []rules.Resource, filter namespaceFilter) ([]listTask, error) {
	var allowed, excluded []string
	if filter.active() {
		namespaces, err := e.namespaces(ctx)
		if err != nil {
			return nil, err
		}
		for _, ns := range namespaces {
			if filter.allows(ns) {
				allowed = append(allowed, ns)
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
	for _, r := range resources {
		switch {
		case !r.Namespaced:
			tasks = append(tasks, listTask{resource: r})
		case len(filter.include) > 0:
			for _, ns := range allowed {
				tasks = append(tasks, listTask{resource: r, namespace: ns})
			}
		default:
			tasks = append(tasks, listTask{resource: r, fieldSelector: strings.Join(selector, ",")})
		}
	}
	return tasks, nil
}

func (e *Engine) namespaces(ctx context.Context) ([]string, error) {
	var names []string
	err := e.pager(e.Clients.Metadata.Resource(namespacesResource)).EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		names = append(names, obj.(*metav1.PartialObjectMetadata).Name)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list namespaces to resolve --include-namespaces/--exclude-namespaces: %w", err)
	}
	return names, nil
}

func (e *Engine) pager(client metadata.ResourceInterface) *pager.ListPager {
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.List(ctx, opts)
	})
	p.PageSize = e.Options.PageSize
	return p
}

// list runs one task. Namespace filtering is also applied to what comes back, which covers
// namespaces created after they were resolved and Namespace objects themselves.
func (e *Engine) list(ctx context.Context, task listTask, filter namespaceFilter) listResult {
	client := resourceClient(e.Clients.Metadata, task.resource.GroupVersionResource, task.namespace)
	var res listResult
	keep := func(obj runtime.Object) error {
		m := obj.(*metav1.PartialObjectMetadata)
		name := m.Namespace
		if task.resource.GroupVersionResource == namespacesResource {
			name = m.Name
		}
		if name != "" && !filter.allows(name) {
			return nil
		}
		res.objects = append(res.objects, newObject(task.resource, m))
		return nil
	}
	opts := metav1.ListOptions{FieldSelector: task.fieldSelector}
	res.err = e.pager(client).EachListItem(ctx, opts, keep)
	if res.err != nil && task.fieldSelector != "" && apierrors.IsBadRequest(res.err) {
		// Some aggregated APIs do not support field selectors; filter on our side instead.
		res.objects = nil
		opts.FieldSelector = ""
		res.err = e.pager(client).EachListItem(ctx, opts, keep)
	}
	return res
}

// newObject keeps what rules need of a listed object. Managed fields and the last-applied
// annotation are dropped: rules never read them and they are often most of an object's metadata.
func newObject(r rules.Resource, m *metav1.PartialObjectMetadata) *rules.Object {
	obj := &rules.Object{Resource: r, ObjectMeta: m.ObjectMeta}
	obj.ManagedFields = nil
	delete(obj.Annotations, "kubectl.kubernetes.io/last-applied-configuration")
	return obj
}

// resourceClient is the metadata client of a resource, in namespace if it is not empty.
func resourceClient(client metadata.Interface, gvr schema.GroupVersionResource, namespace string) metadata.ResourceInterface {
	if namespace == "" {
		return client.Resource(gvr)
	}
	return client.Resource(gvr).Namespace(namespace)
}

func (t listTask) String() string {
	if t.namespace != "" {
		return t.resource.String() + " in " + t.namespace
	}
	return t.resource.String()
}
