package main

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// seedSpec is what one unit of scale holds.
type seedSpec struct {
	crds          int
	objectsPerCRD int
	pods          int
	namespaces    int
}

// perCRD is how many objects of each CRD scale units of scale hold.
func (s seedSpec) perCRD(scale float64) int { return int(scale * float64(s.objectsPerCRD)) }

// podsAt is how many pods scale units of scale hold.
func (s seedSpec) podsAt(scale float64) int { return int(scale * float64(s.pods)) }

// terminating is how many of the custom objects scale units of scale hold are Terminating: every
// other one.
func (s seedSpec) terminating(scale float64) int { return s.crds * ((s.perCRD(scale) + 1) / 2) }

// objects is how many objects, custom objects and pods, scale units of scale hold.
func (s seedSpec) objects(scale float64) int { return s.crds*s.perCRD(scale) + s.podsAt(scale) }

const (
	benchGroup = "bench.sweeper.example.com"
	// seedWorkers create objects in parallel: enough to keep the API server and etcd busy on
	// two cores without queueing for nothing.
	seedWorkers = 32
	// batchLabel marks the objects of one seedTo, and terminatingLabel those of them to delete:
	// one DeleteCollection per CRD marks them all Terminating, for less than a DELETE each costs.
	batchLabel       = benchGroup + "/batch"
	terminatingLabel = benchGroup + "/terminating"
)

// finalizers are those a real cluster's stuck objects hold, one per object in turn: one the
// sweeper maps to logging-operator, OLM's csv-cleanup, and one no rule knows.
var finalizers = []string{
	"syslogngconfig.logging.banzaicloud.io/finalizer",
	"operators.coreos.com/csv-cleanup",
	"example.com/unknown-cleanup",
}

// seeder grows the cluster from one scale to the next, next to what it created before.
type seeder struct {
	spec    seedSpec
	dynamic dynamic.Interface
	kube    kubernetes.Interface
	crdsAPI apiextensionsclient.Interface
	ready   bool
	// perCRD and pods are how many objects of each CRD and pods there are; batch, how many
	// seedTo created them.
	perCRD, pods, batch int
}

// newSeeder builds clients without client-side rate limiting: seeding 110,000 objects at the
// default 5 QPS would take hours.
func newSeeder(base *rest.Config, spec seedSpec) (*seeder, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = 10_000, 10_000
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	crdsAPI, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("apiextensions client: %w", err)
	}
	// Pods go as protobuf, as kubelets and controllers send them, which is cheaper to encode.
	protoCfg := rest.CopyConfig(cfg)
	protoCfg.ContentType = "application/vnd.kubernetes.protobuf"
	kube, err := kubernetes.NewForConfig(protoCfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &seeder{spec: spec, dynamic: dyn, kube: kube, crdsAPI: crdsAPI}, nil
}

// seedTo grows the cluster to scale units of scale: creates what is missing, then deletes half
// of the new custom objects, which their finalizers keep Terminating.
func (s *seeder) seedTo(ctx context.Context, scale float64) error {
	if !s.ready {
		if err := s.setup(ctx); err != nil {
			return err
		}
		s.ready = true
	}
	start := time.Now()
	perCRD, pods := s.spec.perCRD(scale), s.spec.podsAt(scale)
	s.batch++
	if err := s.create(ctx, perCRD, pods); err != nil {
		return err
	}
	if err := s.terminate(ctx); err != nil {
		return err
	}
	logf("seeded %d objects in %s", s.spec.crds*(perCRD-s.perCRD)+pods-s.pods, time.Since(start).Round(time.Second))
	s.perCRD, s.pods = perCRD, pods
	return nil
}

// setup creates the namespaces and the CRDs, and waits until every CRD is served.
func (s *seeder) setup(ctx context.Context) error {
	for i := range s.spec.namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.namespace(i)}}
		if _, err := s.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns.Name, err)
		}
	}
	for i := range s.spec.crds {
		crd := cluster.MinimalCRD(benchGroup, "v1", kindName(i), apiextensionsv1.NamespaceScoped)
		if _, err := s.crdsAPI.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", crd.Name, err)
		}
	}
	for i := range s.spec.crds {
		if err := s.waitEstablished(ctx, crdName(i)); err != nil {
			return err
		}
	}
	return nil
}

func (s *seeder) waitEstablished(ctx context.Context, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd, err := s.crdsAPI.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("wait for CRD %s to be established: %w", name, err)
	}
	return nil
}

// create creates the objects of every CRD and the pods up to perCRD and pods, by seedWorkers
// goroutines.
func (s *seeder) create(ctx context.Context, perCRD, pods int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(seedWorkers)
	for c := range s.spec.crds {
		for i := s.perCRD; i < perCRD; i++ {
			g.Go(func() error { return s.createObject(ctx, c, i) })
		}
	}
	for i := s.pods; i < pods; i++ {
		g.Go(func() error { return s.createPod(ctx, i) })
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return nil
}

// createObject creates object i of CRD c. Every other one is to be Terminating, so it has a
// finalizer, as do a quarter of the others, as live objects of running operators do.
func (s *seeder) createObject(ctx context.Context, c, i int) error {
	obj := widget(c, i, s.namespace(i))
	labels := obj.GetLabels()
	labels[batchLabel] = fmt.Sprint(s.batch)
	if i%2 == 0 {
		labels[terminatingLabel] = "true"
	}
	obj.SetLabels(labels)
	if i%2 == 0 || i%4 == 1 {
		obj.SetFinalizers([]string{finalizers[(i/2)%len(finalizers)]})
	}
	client := s.dynamic.Resource(widgetResource(c)).Namespace(obj.GetNamespace())
	if _, err := client.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// terminate deletes the objects of this batch labelled to be Terminating: their finalizers
// keep them, as an operator that is gone leaves them.
func (s *seeder) terminate(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(seedWorkers)
	selector := fmt.Sprintf("%s=%d,%s=true", batchLabel, s.batch, terminatingLabel)
	for c := range s.spec.crds {
		// Namespaced resources take DeleteCollection in a namespace only.
		for n := range s.spec.namespaces {
			g.Go(func() error {
				client := s.dynamic.Resource(widgetResource(c)).Namespace(s.namespace(n))
				if err := client.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector}); err != nil {
					return fmt.Errorf("delete the %s to be Terminating in %s: %w", widgetResource(c).Resource, s.namespace(n), err)
				}
				return nil
			})
		}
	}
	return g.Wait()
}

// widget is object i of CRD c, with a spec of a few hundred bytes: the metadata client never
// transfers it, kubectl -o json does.
func widget(c, i int, namespace string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": benchGroup + "/v1",
		"kind":       kindName(c),
		"metadata": map[string]any{
			"name":      fmt.Sprintf("w-%06d", i),
			"namespace": namespace,
			"labels":    map[string]any{"app.kubernetes.io/name": "widget", "app.kubernetes.io/instance": fmt.Sprintf("w-%d", i%100)},
		},
		"spec": map[string]any{
			"replicas": int64(3),
			"image":    "registry.example.com/widgets/widget:v1.2.3",
			"config": map[string]any{
				"logLevel": "info",
				"endpoint": "https://widgets.example.com/api/v1",
				"retries":  int64(5),
				"features": []any{"alpha", "beta", "gamma"},
			},
			"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}},
		},
	}}
}

// createPod creates pod i. With no node and no scheduler it stays Pending, which the sweeper lists
// like any other. One in ten is a CatalogSource's registry pod, which the catalog-pods rule reads
// in full.
func (s *seeder) createPod(ctx context.Context, i int) error {
	labels := map[string]string{"app.kubernetes.io/name": "app"}
	if i%10 == 0 {
		labels["olm.catalogSource"] = "x"
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%06d", i), Namespace: s.namespace(i), Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "app",
			Image: "registry.example.com/app:v1",
		}}},
	}
	if _, err := s.kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// namespace is where object or pod i goes.
func (s *seeder) namespace(i int) string { return fmt.Sprintf("bench-%02d", i%s.spec.namespaces) }

func kindName(c int) string { return fmt.Sprintf("Widget%02d", c) }

// crdName is what cluster.MinimalCRD names the CRD of kind c.
func crdName(c int) string { return fmt.Sprintf("widget%02ds.%s", c, benchGroup) }

func widgetResource(c int) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: benchGroup, Version: "v1", Resource: fmt.Sprintf("widget%02ds", c)}
}
