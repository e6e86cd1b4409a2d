package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// PrometheusOperatorImage is the image of prometheus-operator's Deployment as upstream ships it,
// at the version hack/testbin.sh builds.
const PrometheusOperatorImage = "quay.io/prometheus-operator/prometheus-operator:v0.85.0"

// InstallPrometheusOperatorCRDs installs prometheus-operator's CRDs (those of its module's
// example/prometheus-operator-crd, which hack/testbin.sh copies) unless they are installed, and
// waits until they are served.
func (c *Cluster) InstallPrometheusOperatorCRDs(ctx context.Context) error {
	return c.installCRDFolder(ctx, "prometheus-operator-crds")
}

// installCRDFolder installs the CRDs of the YAML files of a folder of KUBEBUILDER_ASSETS, which
// hack/testbin.sh all fills.
func (c *Cluster) installCRDFolder(ctx context.Context, folder string) error {
	files, err := filepath.Glob(filepath.Join(c.assets, folder, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in KUBEBUILDER_ASSETS=%s/%s: point it at the folder `hack/testbin.sh all` prints", c.assets, folder)
	}
	return c.installCRDFiles(ctx, files)
}

// installCRDFiles creates the CRDs of YAML files, unless they exist, and waits until they are
// served.
func (c *Cluster) installCRDFiles(ctx context.Context, files []string) error {
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	var names []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		objs, err := Decode(string(data))
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		for _, crd := range objs {
			names = append(names, crd.GetName())
			if _, err := c.Dynamic.Resource(crds).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create CRD %s: %w", crd.GetName(), err)
			}
		}
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			crd, err := c.Dynamic.Resource(crds).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			return established(crd), nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s is not established: %w", name, err)
		}
	}
	c.Mapper.Reset()
	return nil
}

// established reports whether a CRD's Established condition is True.
func established(crd *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// StartPrometheusOperator runs the real prometheus-operator out of cluster with the admin
// kubeconfig, watching namespaces, with feature gate StatusForConfigurationResources on: it adds
// monitoring.coreos.com/status-cleanup to every Prometheus it reconciles, and removes it from
// those deleted. It elects no leader. Stop the process to stop it.
func (c *Cluster) StartPrometheusOperator(namespaces ...string) (*Process, error) {
	args := []string{
		"--web.listen-address=127.0.0.1:0",
		"--feature-gates=StatusForConfigurationResources=true",
		"--log-level=debug",
	}
	if len(namespaces) > 0 {
		args = append(args, "--namespaces="+strings.Join(namespaces, ","))
	}
	return c.startProcess("prometheus-operator", "prometheus-operator", true, []string{"KUBECONFIG=" + c.Kubeconfig}, args...)
}
