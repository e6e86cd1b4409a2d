package sweeper

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// BenchmarkViewBytesPerObject measures the memory a View retains per object: a million
// synthetic objects' metadata, decoded page by page from PartialObjectMetadataList JSON with the
// metadata client's codecs, kept as eachObject keeps them (an interner per list) and indexed by
// rules.NewView. The metric, B/object, is the live heap after a GC with the view alive less the
// live heap before: what a run holds while rules plan, not the garbage of decoding. (The metadata
// client negotiates protobuf with a real API server; both decoders allocate every string anew,
// so what is retained is the same.) Its time is mostly making and decoding the JSON.
func BenchmarkViewBytesPerObject(b *testing.B) {
	const n = 1_000_000
	var retained uint64
	for b.Loop() {
		benchView = nil // the view of an earlier run (-count) is not this one's
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		view := syntheticView(b, n)
		runtime.GC()
		runtime.ReadMemStats(&after)
		if view.Len() != n {
			b.Fatalf("view holds %d objects, want %d", view.Len(), n)
		}
		retained = after.HeapAlloc - before.HeapAlloc
		benchView = view
	}
	b.ReportMetric(float64(retained)/n, "B/object")
}

// benchView keeps the last view alive after the benchmark, so that the inuse_space of
// -memprofile (written after a GC) shows what a view holds.
var benchView *rules.View

// syntheticResources are the resources of the synthetic cluster, with their share of its objects
// (in percent).
var syntheticResources = []struct {
	resource rules.Resource
	percent  int
}{
	{rules.Pods, 30},
	{rules.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, Kind: "ReplicaSet", Namespaced: true}, 20},
	{rules.ConfigMaps, 25},
	{rules.Secrets, 25},
}

// syntheticView lists n synthetic objects the way the engine does and returns their view.
func syntheticView(tb testing.TB, n int) *rules.View {
	tb.Helper()
	const pageSize = 500
	decoder := metainternalversionscheme.Codecs.UniversalDeserializer()
	gen := newSyntheticCluster()
	kept := everyRulesAnnotations(tb)
	var objects []*rules.Object
	var resources []rules.Resource
	for _, share := range syntheticResources {
		resources = append(resources, share.resource)
		total := n * share.percent / 100
		// One list per resource, as eachObject runs it.
		resource, in := share.resource, newInterner()
		in.annotations = kept
		for page := 0; page < total; page += pageSize {
			data := gen.page(share.resource, min(pageSize, total-page))
			obj, _, err := decoder.Decode(data, nil, nil)
			if err != nil {
				tb.Fatal(err)
			}
			list, ok := obj.(*metav1.PartialObjectMetadataList)
			if !ok {
				tb.Fatalf("decoded a %T", obj)
			}
			for i := range list.Items {
				objects = append(objects, in.object(&resource, &list.Items[i].ObjectMeta))
			}
		}
	}
	return rules.NewView(time.Now(), resources, rules.Coverage{}, objects)
}

// everyRulesAnnotations are the annotations objects keep in a sweep with every rule.
func everyRulesAnnotations(tb testing.TB) rules.KeptAnnotations {
	tb.Helper()
	var e Engine
	for _, reg := range rules.Registry() {
		rule, err := reg.New(nil, rules.Settings{})
		if err != nil {
			tb.Fatal(err)
		}
		e.Rules = append(e.Rules, rule)
	}
	return e.keptAnnotations()
}

// syntheticCluster makes pages of realistic metadata. Its objects belong to 200 releases of 20
// apps, each in a namespace of its own, and carry the labels of their release (the
// app.kubernetes.io family, Helm's chart for a Helm release) and of their component: 3 to 5
// labels, from small sets of values, as in a cluster, where labels follow the release. Pods add
// the pod-template-hash of their ReplicaSet, about three pods to one, which they name as their
// owner, and ReplicaSets their Deployment. Annotations are Helm's release annotations or
// kubectl's last-applied-configuration or a description; finalizers are on one object in ten;
// names are about 30 characters; every object has managedFields.
type syntheticCluster struct {
	rand     *rand.Rand
	seq      int
	releases []syntheticRelease
}

type syntheticRelease struct {
	app, instance, namespace, partOf, version string
	helm                                      bool
}

func newSyntheticCluster() *syntheticCluster {
	g := &syntheticCluster{rand: rand.New(rand.NewPCG(1, 2))}
	for i := range 200 {
		app := syntheticApps[i%len(syntheticApps)]
		partOf := g.pick(syntheticParts)
		g.releases = append(g.releases, syntheticRelease{
			app:       app,
			instance:  fmt.Sprintf("%s-%d", app, i/len(syntheticApps)),
			namespace: fmt.Sprintf("%s-%s-%d", partOf, app, i/len(syntheticApps)),
			partOf:    partOf,
			version:   g.pick(syntheticVersions),
			helm:      g.rand.IntN(2) == 0,
		})
	}
	return g
}

var (
	syntheticApps       = []string{"checkout", "cart", "catalog", "payments", "search", "shipping", "accounts", "reviews", "frontend", "gateway", "ledger", "notifier", "billing", "inventory", "auth", "profile", "media", "reporting", "scheduler", "ingest"}
	syntheticComponents = []string{"server", "worker", "database", "cache", "frontend", "migrations"}
	syntheticParts      = []string{"shop", "platform", "observability", "identity", "data"}
	syntheticVersions   = []string{"1.0.0", "1.1.0", "1.2.3", "2.0.0", "2.1.4", "3.0.1"}
	syntheticFinalizers = []string{"example.com/cleanup", "kubernetes.io/pvc-protection", "foregroundDeletion", "batch.kubernetes.io/job-tracking"}
)

func (g *syntheticCluster) pick(values []string) string { return values[g.rand.IntN(len(values))] }

// page returns a PartialObjectMetadataList of size objects of resource, as JSON.
func (g *syntheticCluster) page(r rules.Resource, size int) []byte {
	list := metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "98765432", Continue: "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6OTg3NjU0MzIsInN0YXJ0IjoiYSJ9"},
		Items:    make([]metav1.PartialObjectMetadata, size),
	}
	for i := range list.Items {
		list.Items[i] = metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: g.meta(r),
		}
	}
	data, err := json.Marshal(&list)
	if err != nil {
		panic(err)
	}
	return data
}

func (g *syntheticCluster) meta(r rules.Resource) metav1.ObjectMeta {
	g.seq++
	rel := g.releases[g.rand.IntN(len(g.releases))]
	c := g.rand.IntN(len(syntheticComponents))
	component := syntheticComponents[c]
	created := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(g.rand.IntN(365*24*3600)) * time.Second)
	meta := metav1.ObjectMeta{
		Namespace:         rel.namespace,
		Name:              fmt.Sprintf("%s-%s-%08x-%05d", rel.instance, component, g.rand.Uint32(), g.seq%100_000),
		UID:               types.UID(fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", g.seq, g.rand.Uint32()&0xffff, g.rand.Uint32()&0xffff, g.rand.Uint32()&0xffff, g.rand.Uint64()&0xffffffffffff)),
		ResourceVersion:   fmt.Sprint(10_000_000 + g.seq),
		CreationTimestamp: metav1.NewTime(created),
		Labels: map[string]string{
			"app.kubernetes.io/name":     rel.app,
			"app.kubernetes.io/instance": rel.instance,
		},
	}
	if rel.helm {
		meta.Labels["app.kubernetes.io/managed-by"] = "Helm"
		meta.Labels["helm.sh/chart"] = rel.app + "-" + rel.version
	}
	if c%2 == 0 {
		meta.Labels["app.kubernetes.io/component"] = component
	}
	if len(meta.Labels) < 5 && c%3 == 0 {
		meta.Labels["app.kubernetes.io/part-of"] = rel.partOf
	}
	if len(meta.Labels) < 3 {
		meta.Labels["app.kubernetes.io/version"] = rel.version
	}

	meta.Annotations = map[string]string{}
	switch {
	case rel.helm:
		meta.Annotations["meta.helm.sh/release-name"] = rel.instance
		meta.Annotations["meta.helm.sh/release-namespace"] = rel.namespace
	case g.rand.IntN(3) == 0:
		meta.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = g.lastApplied(r, meta)
	default:
		meta.Annotations["description"] = "the " + component + " of " + rel.app
	}

	// The Deployment of a release's component and its ReplicaSets: 300,000 pods in a million
	// objects, about three to a ReplicaSet.
	deployment := rel.instance + "-" + component
	deploymentUID := fmt.Sprintf("%08x-0000-4000-8000-%012x", crc32.ChecksumIEEE([]byte(deployment)), 0)
	revision := g.rand.IntN(80)
	hash := fmt.Sprintf("%07x%03x", crc32.ChecksumIEEE([]byte(deployment))&0xfffffff, revision)
	switch r.Resource {
	case "pods":
		meta.Labels["pod-template-hash"] = hash
		meta.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: deployment + "-" + hash,
			UID: types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", crc32.ChecksumIEEE([]byte(deployment)), revision+1)), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	case "replicasets":
		meta.Labels["pod-template-hash"] = hash
		meta.Annotations["deployment.kubernetes.io/revision"] = fmt.Sprint(1 + revision)
		meta.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: deployment,
			UID: types.UID(deploymentUID), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	}
	if g.rand.IntN(10) == 0 {
		meta.Finalizers = []string{g.pick(syntheticFinalizers)}
	}

	manager := "kubectl-client-side-apply"
	if rel.helm {
		manager = "helm"
	}
	meta.ManagedFields = []metav1.ManagedFieldsEntry{{
		Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: r.GroupVersion().String(), Time: &meta.CreationTimestamp,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(g.fields(meta)),
	}}
	if r.Resource == "pods" || r.Resource == "replicasets" {
		meta.ManagedFields = append(meta.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: r.GroupVersion().String(), Time: &meta.CreationTimestamp,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:availableReplicas":{},"f:conditions":{},"f:observedGeneration":{},"f:readyReplicas":{},"f:replicas":{}}}`),
			Subresource: "status",
		})
	}
	return meta
}

// fields is the FieldsV1 of a manager that set meta's labels and annotations, and some data.
func (g *syntheticCluster) fields(meta metav1.ObjectMeta) string {
	var b strings.Builder
	b.WriteString(`{"f:data":{".":{},"f:config.yaml":{},"f:settings.json":{}},"f:metadata":{"f:annotations":{`)
	for i, k := range slices.Sorted(maps.Keys(meta.Annotations)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"f:` + k + `":{}`)
	}
	b.WriteString(`},"f:labels":{`)
	for i, k := range slices.Sorted(maps.Keys(meta.Labels)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"f:` + k + `":{}`)
	}
	b.WriteString(`}}}`)
	return b.String()
}

// lastApplied is what kubectl apply records: the whole object as applied, here about 600 bytes.
func (g *syntheticCluster) lastApplied(r rules.Resource, meta metav1.ObjectMeta) string {
	var labels []string
	for _, k := range slices.Sorted(maps.Keys(meta.Labels)) {
		labels = append(labels, strconv.Quote(k)+":"+strconv.Quote(meta.Labels[k]))
	}
	return `{"apiVersion":"` + r.GroupVersion().String() + `","data":{"config.yaml":"server:\n  port: 8080\n  logLevel: info\n  timeouts:\n    read: 30s\n    write: 30s\nfeatures:\n  search: true\n  recommendations: false\n",` +
		`"settings.json":"{\"retries\":3,\"backoff\":\"exponential\",\"endpoints\":[\"https://api.example.com\",\"https://backup.example.com\"],\"cache\":{\"ttl\":300}}"},` +
		`"kind":"` + r.Kind + `","metadata":{"labels":{` + strings.Join(labels, ",") + `},"name":"` + meta.Name + `","namespace":"` + meta.Namespace + `"}}` + "\n"
}
