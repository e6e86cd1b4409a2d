// Package deploy deploys operator-sweeper on a test cluster as its manifests say, and gives what
// runs the binary as the ServiceAccount the manifests create: its kubeconfig, the CronJob's args.
package deploy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// Render renders a kustomization of manifests/ with the kustomize API, as kubectl kustomize does.
func Render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	return RenderAt(t, filepath.Join(cluster.RepoRoot, "manifests", dir))
}

// RenderAt renders the kustomization in dir, anywhere (a test's own, on top of manifests/), as
// Render does.
func RenderAt(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err)
	var objs []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		m, err := r.Map()
		require.NoError(t, err)
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs
}

// Find returns the rendered object of a kind and name; a generated ConfigMap's name has a hash
// suffix.
func Find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, obj := range objs {
		generated := kind == "ConfigMap" && strings.HasPrefix(obj.GetName(), name+"-")
		if obj.GetKind() == kind && (obj.GetName() == name || generated) {
			return obj
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

// Apply applies objects with server-side apply, as kubectl apply --server-side does.
func Apply(t *testing.T, c *cluster.Cluster, objs []*unstructured.Unstructured, dryRun bool) {
	t.Helper()
	opts := metav1.PatchOptions{FieldManager: "e2e", Force: ptr.To(true)}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	for _, obj := range objs {
		client, _, err := c.Resource(obj)
		require.NoError(t, err)
		data, err := json.Marshal(obj.Object)
		require.NoError(t, err)
		_, err = client.Patch(context.Background(), obj.GetName(), types.ApplyPatchType, data, opts)
		require.NoError(t, err, "apply %s %s", obj.GetKind(), obj.GetName())
	}
}

// ServiceAccountConfig mints a token for the ServiceAccount the manifests create (TokenRequest)
// and returns a client config and a kubeconfig file that authenticate as it.
func ServiceAccountConfig(t *testing.T, c *cluster.Cluster) (*rest.Config, string) {
	t.Helper()
	return ServiceAccountConfigIn(t, c, "operator-sweeper")
}

// ServiceAccountConfigIn is ServiceAccountConfig for the sweeper's ServiceAccount in namespace.
func ServiceAccountConfigIn(t *testing.T, c *cluster.Cluster, namespace string) (*rest.Config, string) {
	t.Helper()
	token, err := c.Kube.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), "operator-sweeper",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := &rest.Config{Host: c.Config.Host, BearerToken: token.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.Config.CAData}}

	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kubeconfig.AuthInfos["operator-sweeper"] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	kubeconfig.Contexts["operator-sweeper"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "operator-sweeper"}
	kubeconfig.CurrentContext = "operator-sweeper"
	file := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kubeconfig, file))
	return cfg, file
}

// CronJobArgs returns the rendered CronJob's container args, with its config file (the rendered
// ConfigMap's config.yaml) at a local path, as the pod mounts it.
func CronJobArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	containers, _, err := unstructured.NestedSlice(Find(t, objs, "CronJob", "operator-sweeper").Object,
		"spec", "jobTemplate", "spec", "template", "spec", "containers")
	require.NoError(t, err)
	require.Len(t, containers, 1)
	args, _, err := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	require.NoError(t, err)
	config, _, err := unstructured.NestedString(Find(t, objs, "ConfigMap", "operator-sweeper-config").Object, "data", "config.yaml")
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(file, []byte(config), 0o600))
	for i, arg := range args {
		if strings.HasPrefix(arg, "--config=") {
			args[i] = "--config=" + file
		}
	}
	return args
}

// Young returns the flags that let the sweeper act on debris seconds or minutes old.
func Young() []string {
	return []string{"--min-terminating-age=0s", "--catalog-pod-slack=0s", "--min-age=0s", "--node-not-ready-for=20s"}
}

// SweepAsCronJob applies objs, rendered manifests, and runs the CronJob's command with its config
// as their ServiceAccount, Young, and args; the run must end with exit 0.
func SweepAsCronJob(t *testing.T, c *cluster.Cluster, binary cluster.Binary, objs []*unstructured.Unstructured, args ...string) *report.Report {
	t.Helper()
	Apply(t, c, objs, false)
	_, kubeconfig := ServiceAccountConfig(t, c)
	cluster.AgeDebris()
	all := slices.Concat(CronJobArgs(t, objs), Young(), []string{"--kubeconfig", kubeconfig}, args)
	rep, stderr, code := binary.RunReport(t, all...)
	require.Equal(t, 0, code, stderr)
	return rep
}
