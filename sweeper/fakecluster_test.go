package sweeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// The engine's fast tier: the engine driven by client-go's fake clients, in milliseconds, under
// -race. What it shows is the engine's own logic (the apply and re-plan loop, the Confirmer,
// sharding); what crosses the API (the real server's preconditions, admission, RBAC) stays the
// proof of the suites under test/, against real control planes.

// Widgets and gadgets are custom resources no rule draws facts from (rules.IsFact): a shard keeps
// the widgets of its namespaces, and only the gadgets' owner lists them.
var (
	widgets = rules.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"},
		Kind: "Widget", Namespaced: true}
	gadgets = rules.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"},
		Kind: "Gadget", Namespaced: false}
)

// fakeResources are the resources the fake cluster serves.
var fakeResources = []rules.Resource{rules.Namespaces, rules.ConfigMaps, rules.Deployments, rules.Secrets,
	rules.ValidatingWebhookConfigurations, rules.CustomResourceDefinitions, widgets, gadgets}

// fakeNow is the server's time in the fast tests; every object is older than a day.
var fakeNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// fakeCluster is the API server of the fast tests: client-go's fake dynamic and metadata clients
// over one store, the dynamic fake's object tracker, so that what one writes the other reads, as
// both read etcd through one API server. The tracker is simpler than an API server where the
// engine relies on the difference; serve and list make up for that, and no more:
//   - every write sets a new metadata.resourceVersion (the tracker keeps objects as sent);
//   - a JSON patch that cannot be applied (a failed test operation) is a 422, as the API server
//     answers it; the tracker returns json-patch's bare error, which the engine would take for a
//     write whose answer was lost;
//   - a delete checks its Preconditions (409 Conflict); an object with finalizers is marked
//     deleted, not removed, and goes once its last finalizer does;
//   - lists honour the field selectors metadata.name and metadata.namespace; the fakes filter by
//     label only;
//   - a patch or delete with dryRun=All is checked as any other (its preconditions, its patch's
//     tests) and changes nothing, as the API server answers a server-side dry run. The metadata
//     fake drops a patch's options, so the engine is handed recordingMetadata, which passes them
//     on, and records every patch and delete with its options as the engine sent it (sentWrites).
//
// Refusals, time-outs and lost races are the tests' to inject, with PrependReactor.
type fakeCluster struct {
	dynamic  *dynamicfake.FakeDynamicClient
	metadata *metadatafake.FakeMetadataClient
	kube     *kubefake.Clientset // the Events' client, once an engine is made
	store    clienttesting.ObjectTracker
	kinds    map[schema.GroupVersionResource]string

	mu      sync.Mutex // over each request, so that a read-modify-write of the store is one
	version int64      // the last resourceVersion given
	uids    int

	sentMu sync.Mutex
	sent   []sentWrite // the patches and deletes sent through recordingMetadata, in order
}

// newFakeCluster serves fakeResources, with the namespace kube-system (the cluster's identity)
// and objects.
func newFakeCluster(t *testing.T, objects ...*unstructured.Unstructured) *fakeCluster {
	t.Helper()
	listKinds := map[schema.GroupVersionResource]string{}
	kinds := map[schema.GroupVersionResource]string{}
	for _, r := range fakeResources {
		listKinds[r.GroupVersionResource] = r.Kind + "List"
		kinds[r.GroupVersionResource] = r.Kind
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	c := &fakeCluster{dynamic: dyn, store: dyn.Tracker(), kinds: kinds, version: 100}
	dyn.PrependReactor("*", "*", c.serveDynamic)
	c.metadata = metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	// The metadata client reads and writes the same store, answering with metadata only.
	c.metadata.ReactionChain = []clienttesting.Reactor{&clienttesting.SimpleReactor{Verb: "*", Resource: "*", Reaction: c.serveMetadata}}

	c.add(t, fakeObject(rules.Namespaces, "", metav1.NamespaceSystem))
	for _, obj := range objects {
		c.add(t, obj)
	}
	return c
}

// clients are the clients of the fake cluster, discovery serving fakeResources; no Events.
func (c *fakeCluster) clients() *Clients {
	var lists []*metav1.APIResourceList
	for _, r := range fakeResources {
		lists = append(lists, &metav1.APIResourceList{GroupVersion: r.GroupVersion().String(), APIResources: []metav1.APIResource{
			{Name: r.Resource, Kind: r.Kind, Namespaced: r.Namespaced, Verbs: []string{"get", "list", "patch", "delete"}}}})
	}
	return &Clients{Discovery: preferredResources{lists: lists}, Metadata: recordingMetadata{c}, Dynamic: c.dynamic}
}

// engine is an engine that writes (--dry-run=none) to the fake cluster with rules, its pre-images
// kept in files; change modifies its config.
func (c *fakeCluster) engine(t *testing.T, change func(*Config), rs ...rules.Rule) *Engine {
	cfg := Config{DryRun: report.DryRunNone, Concurrency: 4, PageSize: 100, WriteConcurrency: 4,
		Namespace: "operator-sweeper", BackupDir: t.TempDir(), BackupRetention: time.Hour}
	if change != nil {
		change(&cfg)
	}
	if c.kube == nil {
		// Made only for an engine, which records Events: the first costs a second or two under
		// -race (it parses the OpenAPI models for managed fields), once per test binary.
		c.kube = kubefake.NewClientset()
	}
	clients := c.clients()
	clients.Events = c.kube.EventsV1()
	return &Engine{Config: cfg, Clients: clients, Rules: rs, Clock: clocktesting.NewFakePassiveClock(fakeNow),
		Logger: slog.New(slog.DiscardHandler)}
}

// fakeObject is an object of resource as a client creates it, changed by mutate: a day old, and
// of a UID that names it (fakeUID).
func fakeObject(r rules.Resource, namespace, name string, mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": r.GroupVersion().String(), "kind": r.Kind}}
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetUID(fakeUID(r, namespace, name))
	u.SetCreationTimestamp(metav1.NewTime(fakeNow.Add(-24 * time.Hour)))
	for _, m := range mutate {
		m(u)
	}
	return u
}

// fakeUID is the UID fakeObject gives an object: "widget-shop-w".
func fakeUID(r rules.Resource, namespace, name string) types.UID {
	return types.UID(strings.ToLower(r.Kind) + "-" + namespace + "-" + name)
}

// withFinalizers sets an object's finalizers.
func withFinalizers(finalizers ...string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) { u.SetFinalizers(finalizers) }
}

// withLabels sets an object's labels, as key, value, ….
func withLabels(kv ...string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		labels := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			labels[kv[i]] = kv[i+1]
		}
		u.SetLabels(labels)
	}
}

// add creates obj in the store as a client would: with a resourceVersion.
func (c *fakeCluster) add(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	require.NoError(t, c.create(obj))
}

// create is add for a reactor, which must not fail the test from the engine's goroutine.
func (c *fakeCluster) create(obj *unstructured.Unstructured) error {
	_, _, err := c.serve(clienttesting.NewCreateAction(c.resourceOf(obj), obj.GetNamespace(), obj))
	return err
}

// resourceOf is the resource of an object of a served kind.
func (c *fakeCluster) resourceOf(obj *unstructured.Unstructured) schema.GroupVersionResource {
	for gvr, kind := range c.kinds {
		if kind == obj.GetKind() && gvr.GroupVersion().String() == obj.GetAPIVersion() {
			return gvr
		}
	}
	panic("the fake cluster does not serve " + obj.GetAPIVersion() + " " + obj.GetKind())
}

// get is an object as the server holds it now; nil if there is none.
func (c *fakeCluster) get(t *testing.T, r rules.Resource, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := c.store.Get(r.GroupVersionResource, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return obj.(*unstructured.Unstructured)
}

// change changes an object in the store, as another client's write would: with a new
// resourceVersion. A test's reactor calls it while the client's request is under way.
func (c *fakeCluster) change(r rules.Resource, namespace, name string, mutate func(*unstructured.Unstructured)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	obj, err := c.store.Get(r.GroupVersionResource, namespace, name)
	if err != nil {
		return err
	}
	u := obj.(*unstructured.Unstructured)
	mutate(u)
	return c.write(r.GroupVersionResource, u)
}

// replace deletes an object and creates another of the same name, with a new UID.
func (c *fakeCluster) replace(r rules.Resource, namespace, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	obj, err := c.store.Get(r.GroupVersionResource, namespace, name)
	if err != nil {
		return err
	}
	u := obj.(*unstructured.Unstructured)
	if err := c.store.Delete(r.GroupVersionResource, namespace, name); err != nil {
		return err
	}
	c.uids++
	u.SetUID(types.UID(fmt.Sprintf("uid-%d", c.uids)))
	c.version++
	u.SetResourceVersion(fmt.Sprint(c.version))
	return c.store.Create(r.GroupVersionResource, u, namespace)
}

// remove deletes an object at once, as a deletion that found no finalizer.
func (c *fakeCluster) remove(r rules.Resource, namespace, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.store.Delete(r.GroupVersionResource, namespace, name)
}

// write stores u with a new resourceVersion; an object being deleted whose last finalizer is
// gone goes, as the API server removes it.
func (c *fakeCluster) write(gvr schema.GroupVersionResource, u *unstructured.Unstructured) error {
	if u.GetDeletionTimestamp() != nil && len(u.GetFinalizers()) == 0 {
		return c.store.Delete(gvr, u.GetNamespace(), u.GetName())
	}
	c.version++
	u.SetResourceVersion(fmt.Sprint(c.version))
	return c.store.Update(gvr, u, u.GetNamespace())
}

// serve answers a request of either client but a list (see list), in whole objects; false for
// what it leaves to the tracker. A patch or delete with dryRun=All is answered as it would be,
// its preconditions and tests checked, and the store is left as it was: the API server runs a
// dry-run request through admission and validation, and persists nothing.
func (c *fakeCluster) serve(action clienttesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var dryRun []string
	switch a := action.(type) {
	case clienttesting.PatchActionImpl:
		dryRun = a.PatchOptions.DryRun
	case clienttesting.DeleteActionImpl:
		dryRun = a.DeleteOptions.DryRun
	}
	if !slices.Equal(dryRun, []string{metav1.DryRunAll}) {
		return c.serveLocked(action)
	}
	gvr, ns, name := action.GetResource(), action.GetNamespace(), action.(interface{ GetName() string }).GetName()
	before, err := c.store.Get(gvr, ns, name)
	if err != nil {
		return c.serveLocked(action) // its 404
	}
	version := c.version
	handled, obj, err := c.serveLocked(action)
	c.version = version
	if _, gerr := c.store.Get(gvr, ns, name); gerr != nil {
		return handled, obj, errors.Join(err, c.store.Create(gvr, before, ns))
	}
	return handled, obj, errors.Join(err, c.store.Update(gvr, before, ns))
}

// serveLocked is serve, c.mu held, persisting what it is asked.
func (c *fakeCluster) serveLocked(action clienttesting.Action) (bool, runtime.Object, error) {
	gvr, ns := action.GetResource(), action.GetNamespace()
	switch a := action.(type) {
	case clienttesting.GetActionImpl:
		obj, err := c.store.Get(gvr, ns, a.GetName())
		return true, obj, err
	case clienttesting.CreateActionImpl:
		u, ok := a.GetObject().(*unstructured.Unstructured)
		if !ok {
			return true, nil, fmt.Errorf("the fake cluster creates unstructured objects, not %T", a.GetObject())
		}
		u = u.DeepCopy()
		if u.GetUID() == "" {
			c.uids++
			u.SetUID(types.UID(fmt.Sprintf("uid-%d", c.uids)))
		}
		c.version++
		u.SetResourceVersion(fmt.Sprint(c.version))
		return true, u, c.store.Create(gvr, u, ns)
	case clienttesting.PatchActionImpl:
		if a.GetPatchType() != types.JSONPatchType {
			return false, nil, nil
		}
		_, obj, err := clienttesting.ObjectReaction(c.store)(a)
		var status apierrors.APIStatus
		switch {
		case err != nil && !errors.As(err, &status):
			// The API server's answer to a JSON patch it cannot apply, a failed test included
			// (k8s.io/apiserver endpoints/handlers/patch.go).
			return true, nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", gvr.GroupResource(), a.GetName(), err.Error(), 0, false)
		case err != nil:
			return true, nil, err
		}
		u := obj.(*unstructured.Unstructured)
		return true, u, c.write(gvr, u)
	case clienttesting.DeleteActionImpl:
		obj, err := c.store.Get(gvr, ns, a.GetName())
		if err != nil {
			return true, nil, err
		}
		u := obj.(*unstructured.Unstructured)
		if p := a.DeleteOptions.Preconditions; p != nil {
			if p.UID != nil && *p.UID != u.GetUID() {
				return true, nil, apierrors.NewConflict(gvr.GroupResource(), a.GetName(),
					fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, u.GetUID()))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != u.GetResourceVersion() {
				return true, nil, apierrors.NewConflict(gvr.GroupResource(), a.GetName(),
					fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, u.GetResourceVersion()))
			}
		}
		if len(u.GetFinalizers()) == 0 {
			return true, nil, c.store.Delete(gvr, ns, a.GetName())
		}
		if u.GetDeletionTimestamp() == nil {
			now := metav1.NewTime(fakeNow)
			u.SetDeletionTimestamp(&now)
			return true, nil, c.write(gvr, u)
		}
		return true, nil, nil
	}
	return false, nil, nil
}

// list answers a list: the objects of a resource in a namespace (all if empty) that match the
// field selector.
func (c *fakeCluster) list(gvr schema.GroupVersionResource, ns string, selector fields.Selector) (*unstructured.UnstructuredList, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	obj, err := c.store.List(gvr, gvr.GroupVersion().WithKind(c.kinds[gvr]), ns)
	if err != nil {
		return nil, err
	}
	all := obj.(*unstructured.UnstructuredList)
	list := &unstructured.UnstructuredList{Object: all.Object}
	for _, item := range all.Items {
		if selector == nil || selector.Matches(fields.Set{"metadata.name": item.GetName(), "metadata.namespace": item.GetNamespace()}) {
			list.Items = append(list.Items, item)
		}
	}
	return list, nil
}

// serveDynamic answers the dynamic client.
func (c *fakeCluster) serveDynamic(action clienttesting.Action) (bool, runtime.Object, error) {
	if a, ok := action.(clienttesting.ListActionImpl); ok {
		list, err := c.list(a.GetResource(), a.GetNamespace(), a.ListRestrictions.Fields)
		return true, list, err
	}
	return c.serve(action)
}

// serveMetadata answers the metadata client: what serve answers, as metadata.
func (c *fakeCluster) serveMetadata(action clienttesting.Action) (bool, runtime.Object, error) {
	if a, ok := action.(clienttesting.ListActionImpl); ok {
		list, err := c.list(a.GetResource(), a.GetNamespace(), a.ListRestrictions.Fields)
		if err != nil {
			return true, nil, err
		}
		out := &metav1.List{}
		out.ResourceVersion = list.GetResourceVersion()
		for i := range list.Items {
			m, err := metadataOf(&list.Items[i])
			if err != nil {
				return true, nil, err
			}
			out.Items = append(out.Items, runtime.RawExtension{Object: m})
		}
		return true, out, nil
	}
	handled, obj, err := c.serve(action)
	if !handled {
		return true, nil, fmt.Errorf("the fake cluster does not serve %s %s to the metadata client", action.GetVerb(), action.GetResource())
	}
	if u, ok := obj.(*unstructured.Unstructured); ok && err == nil {
		m, err := metadataOf(u)
		return true, m, err
	}
	return true, nil, err
}

// metadataOf is u as the metadata client reads it.
func metadataOf(u *unstructured.Unstructured) (*metav1.PartialObjectMetadata, error) {
	m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}}
	data, err := json.Marshal(u.Object["metadata"])
	if err != nil {
		return nil, err
	}
	return m, json.Unmarshal(data, &m.ObjectMeta)
}

// sent is a write request as the metadata client sent it: its verb and object, and its body (a
// JSON patch) or its preconditions (a delete).
type sent struct {
	verb, namespace, name string
	patch                 []jsonPatchOp
	preconditions         *metav1.Preconditions
}

// writes are the writes sent through the metadata client, in order, to resource. A patch's test of
// the resourceVersion is left out, whose value is the fake's: what each write tests of the object
// as observed is TestEveryWriteCarriesDryRunAndPreconditions'.
func (c *fakeCluster) writes(t *testing.T, r rules.Resource) []sent {
	t.Helper()
	var out []sent
	for _, action := range c.metadata.Actions() {
		if action.GetResource() != r.GroupVersionResource {
			continue
		}
		switch a := action.(type) {
		case clienttesting.PatchActionImpl:
			s := sent{verb: "patch", namespace: a.GetNamespace(), name: a.GetName()}
			require.NoError(t, json.Unmarshal(a.GetPatch(), &s.patch))
			s.patch = slices.DeleteFunc(s.patch, func(op jsonPatchOp) bool { return op.Op == "test" && op.Path == "/metadata/resourceVersion" })
			out = append(out, s)
		case clienttesting.DeleteActionImpl:
			out = append(out, sent{verb: "delete", namespace: a.GetNamespace(), name: a.GetName(), preconditions: a.DeleteOptions.Preconditions})
		}
	}
	return out
}

// sentWrite is a patch or a delete as the engine handed it to the metadata client, options and
// all: what the metadata fake drops of a patch (its options) and what the fast tests check of
// every write (the dry run it asks for, the preconditions it carries).
type sentWrite struct {
	verb            string
	resource        schema.GroupVersionResource
	namespace, name string
	dryRun          []string
	// tests are a patch's test operations, by path: its preconditions (the engine's patches are
	// JSON patches).
	tests map[string]any
	// preconditions are a delete's.
	preconditions *metav1.Preconditions
	// err is what the body of a patch that is no JSON patch failed to decode with.
	err error
}

// recordingMetadata is the metadata client the engine is handed: the fake cluster's, which
// records each patch and delete (sentWrites) before the fake serves it. A patch goes to the fake's
// reactors as the fake's own Patch sends it, but with its options, which that one drops
// (testing.NewPatchAction): the fake cluster needs them to answer a dry run as one.
type recordingMetadata struct{ c *fakeCluster }

func (m recordingMetadata) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return recordingResource{ResourceInterface: m.c.metadata.Resource(gvr), c: m.c, gvr: gvr}
}

// recordingResource is recordingMetadata's client of one resource, in one namespace (all if
// empty); reads go to the fake as they are.
type recordingResource struct {
	metadata.ResourceInterface
	c         *fakeCluster
	gvr       schema.GroupVersionResource
	namespace string
}

func (r recordingResource) Namespace(ns string) metadata.ResourceInterface {
	return recordingResource{ResourceInterface: r.c.metadata.Resource(r.gvr).Namespace(ns), c: r.c, gvr: r.gvr, namespace: ns}
}

func (r recordingResource) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*metav1.PartialObjectMetadata, error) {
	w := sentWrite{verb: "patch", resource: r.gvr, namespace: r.namespace, name: name, dryRun: slices.Clone(opts.DryRun), tests: map[string]any{}}
	var ops []jsonPatchOp
	if w.err = json.Unmarshal(data, &ops); w.err == nil {
		for _, op := range ops {
			if op.Op == "test" {
				w.tests[op.Path] = op.Value
			}
		}
	}
	r.c.record(w)
	if len(subresources) > 0 {
		return r.ResourceInterface.Patch(ctx, name, pt, data, opts, subresources...)
	}
	obj, err := r.c.metadata.Invokes(clienttesting.NewPatchActionWithOptions(r.gvr, r.namespace, name, pt, data, opts), nil)
	if err != nil || obj == nil {
		return nil, err
	}
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return nil, fmt.Errorf("unexpected return value type %T", obj)
	}
	return m, nil
}

func (r recordingResource) Delete(ctx context.Context, name string, opts metav1.DeleteOptions, subresources ...string) error {
	r.c.record(sentWrite{verb: "delete", resource: r.gvr, namespace: r.namespace, name: name, dryRun: slices.Clone(opts.DryRun),
		preconditions: opts.Preconditions.DeepCopy()})
	return r.ResourceInterface.Delete(ctx, name, opts, subresources...)
}

// record keeps a write sent through recordingMetadata.
func (c *fakeCluster) record(w sentWrite) {
	c.sentMu.Lock()
	defer c.sentMu.Unlock()
	c.sent = append(c.sent, w)
}

// sentWrites are the patches and deletes the engine sent through the metadata client, in order,
// as it sent them.
func (c *fakeCluster) sentWrites() []sentWrite {
	c.sentMu.Lock()
	defer c.sentMu.Unlock()
	return slices.Clone(c.sent)
}

// reads counts the lists of resource by name (a field selector metadata.name=name) sent through
// the metadata client: the Confirmer's reads of a fact.
func (c *fakeCluster) reads(r rules.Resource, name string) int {
	n := 0
	for _, action := range c.metadata.Actions() {
		if a, ok := action.(clienttesting.ListActionImpl); ok && a.GetResource() == r.GroupVersionResource &&
			a.ListRestrictions.Fields.String() == "metadata.name="+name {
			n++
		}
	}
	return n
}

// patchOf is the JSON patch of a RemoveFinalizers on an object of uid with finalizers, leaving
// remaining, as the engine sends it.
func patchOf(uid types.UID, finalizers, remaining []string) []jsonPatchOp {
	return []jsonPatchOp{
		{Op: "test", Path: "/metadata/uid", Value: string(uid)},
		{Op: "test", Path: "/metadata/finalizers", Value: toAny(finalizers)},
		{Op: "replace", Path: "/metadata/finalizers", Value: toAny(remaining)},
	}
}

// toAny is a list of strings as JSON decodes it.
func toAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// findingOf is the report's finding about the object name.
func findingOf(t *testing.T, r *report.Report, name string) report.FindingResult {
	t.Helper()
	for _, f := range r.Findings {
		if f.Object.Name == name {
			return f
		}
	}
	require.Failf(t, "no finding", "about %s; the findings: %v", name, r.Findings)
	return report.FindingResult{}
}

// assertResult checks how a finding's action ended: its outcome, its reason and a detail its error
// contains, whether it was re-read and re-planned, and a line its evidence has ("" for none
// asked).
func assertResult(t *testing.T, f report.FindingResult, outcome report.Outcome, reason report.Reason, detail string, replanned bool, evidenceLine string) {
	t.Helper()
	assert.Equal(t, outcome, f.Outcome, f.Error)
	assert.Equal(t, reason, f.FailReason+f.SkipReason)
	assert.Contains(t, f.Error, detail)
	assert.Equal(t, replanned, evidence(f, "it was re-read and re-planned before acting"), "re-planned: %q", f.Evidence)
	if evidenceLine != "" {
		assert.True(t, evidence(f, evidenceLine), "evidence %q, want a line with %q", f.Evidence, evidenceLine)
	}
}

// evidence says whether a finding's evidence has a line that contains s.
func evidence(f report.FindingResult, s string) bool {
	for _, line := range f.Evidence {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// runFor runs the engine with a deadline: a test that hangs fails instead.
func runFor(t *testing.T, e *Engine) *report.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return e.Run(ctx)
}
