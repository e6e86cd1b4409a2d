package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// DemoCatalogSource is the CatalogSource, in OLMNamespace, that serves the demo operator.
const DemoCatalogSource = "demo"

var (
	csvs           = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "clusterserviceversions"}
	catalogSources = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "catalogsources"}
	subscriptions  = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "subscriptions"}
)

// StartDemoCatalog serves the demo operator's catalog (StartRegistry) and creates the
// CatalogSource that points OLM at it.
func (c *Cluster) StartDemoCatalog(ctx context.Context) error {
	address, err := c.StartRegistry()
	if err != nil {
		return err
	}
	_, err = c.Create(ctx, fmt.Sprintf(`
apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: %s, namespace: %s}
spec: {sourceType: grpc, address: %q, displayName: operator-sweeper demo}
`, DemoCatalogSource, OLMNamespace, address))
	return err
}

// olmDeployment is one of OLM's own Deployments as upstream installs it.
const olmDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: NAME, namespace: NAMESPACE, labels: {app: NAME}}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec: {containers: [{name: NAME, image: "quay.io/operator-framework/olm:v0.28.0", command: [BINARY]}]}
`

// OLMDeployments are OLM's Deployments, and the binary each runs.
var OLMDeployments = map[string]string{"olm-operator": "/bin/olm", "catalog-operator": "/bin/catalog"}

// OLMDeployment is the manifest of OLM's Deployment name (of OLMDeployments) in namespace, with
// replicas. Out of cluster, OLM runs as processes; these make what a real cluster shows (their pods run on kwok
// nodes), and the sweeper judges OLM by them.
func OLMDeployment(name, namespace string, replicas int) string {
	// NAMESPACE before NAME: a Replacer tries its pairs in order.
	return strings.NewReplacer("NAMESPACE", namespace, "NAME", name, "REPLICAS", fmt.Sprint(replicas), "BINARY", OLMDeployments[name]).Replace(olmDeployment)
}

// OLMVersion is the version of the OLM the cluster runs (StartOLM): the one hack/testbin.sh built
// into KUBEBUILDER_ASSETS, which says it in its file olm-version.
func (c *Cluster) OLMVersion() (string, error) {
	data, err := os.ReadFile(filepath.Join(c.assets, "olm-version"))
	if err != nil {
		return "", fmt.Errorf("which OLM KUBEBUILDER_ASSETS=%s holds (hack/testbin.sh controllers writes it): %w", c.assets, err)
	}
	return strings.TrimSpace(string(data)), nil
}

// OLMRepairsDeadCatalogPods reports whether the OLM the cluster runs force-deletes its own
// registry pods on a dead node (operator-framework/operator-lifecycle-manager#3366, v0.29.0):
// those the taint manager marked DisruptionTarget.
func (c *Cluster) OLMRepairsDeadCatalogPods() (bool, error) {
	version, err := c.OLMVersion()
	if err != nil {
		return false, err
	}
	var major, minor, patch int
	if _, err := fmt.Sscanf(version, "v%d.%d.%d", &major, &minor, &patch); err != nil {
		return false, fmt.Errorf("OLM version %q is not vMAJOR.MINOR.PATCH: %w", version, err)
	}
	return major > 0 || minor >= 29, nil
}

// SetOLMDeployments creates OLM's Deployments in OLMNamespace, or scales them, to replicas; their
// image is of the OLM the cluster runs.
func (c *Cluster) SetOLMDeployments(ctx context.Context, replicas int) error {
	version, err := c.OLMVersion()
	if err != nil {
		return err
	}
	for name := range OLMDeployments {
		objs, err := Decode(strings.Replace(OLMDeployment(name, OLMNamespace, replicas), "olm:v0.28.0", "olm:"+version, 1))
		if err != nil {
			return err
		}
		client, _, err := c.Resource(objs[0])
		if err != nil {
			return err
		}
		data, err := objs[0].MarshalJSON()
		if err != nil {
			return err
		}
		if _, err := client.Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "test", Force: ptr.To(true)}); err != nil {
			return fmt.Errorf("apply Deployment %s/%s: %w", OLMNamespace, name, err)
		}
	}
	return nil
}

// UninstallOLM stops OLM's operators and deletes their Deployments, as `kubectl delete -f` of
// OLM's manifests would, leaving its CRDs and what it made.
func (c *Cluster) UninstallOLM(ctx context.Context) error {
	if err := c.StopOLM(); err != nil {
		return err
	}
	for name := range OLMDeployments {
		err := c.Kube.AppsV1().Deployments(OLMNamespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete Deployment %s/%s: %w", OLMNamespace, name, err)
		}
	}
	return nil
}

// InstallDemo installs the demo operator in namespace through OLM, as an admin does: an
// OperatorGroup and a Subscription; it returns the CSV once it succeeded.
func (c *Cluster) InstallDemo(ctx context.Context, namespace string) (*unstructured.Unstructured, error) {
	if _, err := c.Create(ctx, Fill(fmt.Sprintf(`
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata: {name: demo, namespace: NAMESPACE}
spec: {targetNamespaces: [NAMESPACE]}
---
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {name: %s, namespace: NAMESPACE}
spec: {channel: %s, name: %s, source: %s, sourceNamespace: %s, installPlanApproval: Automatic}
`, DemoPackage, DemoChannel, DemoPackage, DemoCatalogSource, OLMNamespace), namespace)); err != nil {
		return nil, err
	}
	var csv *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		csv, err = c.Dynamic.Resource(csvs).Namespace(namespace).Get(ctx, DemoCSV, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		phase, _, _ := unstructured.NestedString(csv.Object, "status", "phase")
		return phase == "Succeeded", nil
	})
	if err != nil {
		return nil, fmt.Errorf("OLM installs the demo operator in %s: %w; see the logs in %s", namespace, err, c.LogDir)
	}
	return csv, nil
}

// CatalogNodeLabel prefixes the label that selects the nodes the pod of a CatalogSource made by
// CreateCatalogSourceOnNodes may run on: CatalogNodeLabel+<its name>=true.
const CatalogNodeLabel = "sweeper.test/catalog-"

// catalogSourceOnNodes is a grpc CatalogSource with an image, whose pod runs on the nodes labelled
// CatalogNodeLabel+NAME.
const catalogSourceOnNodes = `
apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: NAME, namespace: NAMESPACE}
spec:
  sourceType: grpc
  image: quay.io/operator-sweeper/demo-catalog:v0.1.0
  displayName: NAME
  grpcPodConfig:
    nodeSelector: {sweeper.test/catalog-NAME: "true"}
    tolerations: TOLERATIONS
`

// CreateCatalogSourceOnNodes creates a CatalogSource whose pod OLM runs on the nodes labelled
// CatalogNodeLabel+name. If tolerateLostNodes, the pod stays bound to a lost node rather than
// being evicted from it, as some admins have critical pods do.
func (c *Cluster) CreateCatalogSourceOnNodes(ctx context.Context, namespace, name string, tolerateLostNodes bool) error {
	tolerations := "[]"
	if tolerateLostNodes {
		tolerations = "[{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute}, {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute}]"
	}
	_, err := c.Create(ctx, strings.NewReplacer("NAMESPACE", namespace, "NAME", name, "TOLERATIONS", tolerations).Replace(catalogSourceOnNodes))
	return err
}

// ServingCatalogPod returns the pod of a CatalogSource if it has one: its only pod, Running, and
// the CatalogSource's status names its Service.
func (c *Cluster) ServingCatalogPod(ctx context.Context, namespace, source string) (*corev1.Pod, error) {
	catalog, err := c.Dynamic.Resource(catalogSources).Namespace(namespace).Get(ctx, source, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if service, _, _ := unstructured.NestedString(catalog.Object, "status", "registryService", "serviceName"); service == "" {
		return nil, nil
	}
	list, err := c.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "olm.catalogSource=" + source})
	if err != nil {
		return nil, err
	}
	if len(list.Items) != 1 || list.Items[0].DeletionTimestamp != nil || list.Items[0].Status.Phase != corev1.PodRunning {
		return nil, nil
	}
	return &list.Items[0], nil
}

// WaitCatalogPods waits until OLM runs a pod for each CatalogSource of namespace named in
// sources, and keeps it: on its first syncs OLM may replace the pod it has just made, so a pod
// serves once it has for a few seconds.
func (c *Cluster) WaitCatalogPods(ctx context.Context, namespace string, sources ...string) (map[string]*corev1.Pod, error) {
	pods, since := map[string]*corev1.Pod{}, map[types.UID]time.Time{}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		settled := true
		for _, source := range sources {
			pod, err := c.ServingCatalogPod(ctx, namespace, source)
			if err != nil || pod == nil {
				settled = false
				continue
			}
			pods[source] = pod
			if _, seen := since[pod.UID]; !seen {
				since[pod.UID] = time.Now()
			}
			settled = settled && time.Since(since[pod.UID]) > 3*time.Second
		}
		return settled, nil
	})
	if err != nil {
		return nil, fmt.Errorf("OLM runs the pods of CatalogSources %v in %s: %w; see the logs in %s", sources, namespace, err, c.LogDir)
	}
	return pods, nil
}

// WaitNodeReady waits until the node's Ready condition has status.
func (c *Cluster) WaitNodeReady(ctx context.Context, name string, status corev1.ConditionStatus) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		node, err := c.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == status
		}), nil
	})
	if err != nil {
		return fmt.Errorf("node %s Ready=%s: %w", name, status, err)
	}
	return nil
}

// WaitEvicted waits until the taint manager has evicted pod, and returns it as it is then.
func (c *Cluster) WaitEvicted(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	var now *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		now, err = c.Kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && now.DeletionTimestamp != nil && slices.ContainsFunc(now.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.DisruptionTarget && c.Reason == "DeletionByTaintManager" && c.Status == corev1.ConditionTrue
		}), err
	})
	if err != nil {
		return nil, fmt.Errorf("the taint manager evicts pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return now, nil
}
