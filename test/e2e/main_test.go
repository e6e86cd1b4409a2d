// Package e2e deploys operator-sweeper as its manifests say, on a real kube-apiserver and etcd,
// and runs the binary built by `make build` as the ServiceAccount the manifests create.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

	"github.com/operator-sweeper/operator-sweeper/sweeper"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// The binary's version and commit, stamped by make build.
const (
	e2eVersion = "v0.0.0-e2e"
	e2eCommit  = "e2ecafe"
)

var (
	testCluster   *cluster.Cluster
	sweeperBinary string
	repoRoot      = filepath.Join("..", "..")
)

func TestMain(m *testing.M) {
	os.Exit(cluster.RunTests(m, &testCluster, func(dir string) error {
		sweeperBinary = filepath.Join(dir, "operator-sweeper")
		build := exec.Command("make", "-C", repoRoot, "build", "BIN="+sweeperBinary, "VERSION="+e2eVersion, "COMMIT="+e2eCommit)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("make build: %w", err)
		}
		return nil
	}))
}

// render renders a kustomization of manifests/ with the kustomize API, as kubectl kustomize does.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(repoRoot, "manifests", dir))
	require.NoError(t, err)
	var objs []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		m, err := r.Map()
		require.NoError(t, err)
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs
}

// find returns the rendered object of a kind and name; a generated ConfigMap's name has a hash
// suffix.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
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

// apply applies objects with server-side apply, as kubectl apply --server-side does.
func apply(t *testing.T, objs []*unstructured.Unstructured, dryRun bool) {
	t.Helper()
	opts := metav1.PatchOptions{FieldManager: "e2e", Force: ptr.To(true)}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	for _, obj := range objs {
		client, _, err := testCluster.Resource(obj)
		require.NoError(t, err)
		data, err := json.Marshal(obj.Object)
		require.NoError(t, err)
		_, err = client.Patch(context.Background(), obj.GetName(), types.ApplyPatchType, data, opts)
		require.NoError(t, err, "apply %s %s", obj.GetKind(), obj.GetName())
	}
}

// serviceAccountConfig mints a token for the ServiceAccount the manifests create (TokenRequest)
// and returns a client config and a kubeconfig file that authenticate as it.
func serviceAccountConfig(t *testing.T) (*rest.Config, string) {
	t.Helper()
	token, err := testCluster.Kube.CoreV1().ServiceAccounts("operator-sweeper").CreateToken(context.Background(), "operator-sweeper",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := &rest.Config{Host: testCluster.Config.Host, BearerToken: token.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: testCluster.Config.CAData}}

	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kubeconfig.AuthInfos["operator-sweeper"] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	kubeconfig.Contexts["operator-sweeper"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "operator-sweeper"}
	kubeconfig.CurrentContext = "operator-sweeper"
	file := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kubeconfig, file))
	return cfg, file
}

// cronJobArgs returns the rendered CronJob's container args, with its config file (the rendered
// ConfigMap's config.yaml) at a local path, as the pod mounts it.
func cronJobArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	containers, _, err := unstructured.NestedSlice(find(t, objs, "CronJob", "operator-sweeper").Object,
		"spec", "jobTemplate", "spec", "template", "spec", "containers")
	require.NoError(t, err)
	require.Len(t, containers, 1)
	args, _, err := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	require.NoError(t, err)
	config, _, err := unstructured.NestedString(find(t, objs, "ConfigMap", "operator-sweeper-config").Object, "data", "config.yaml")
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

// runSweeper runs the binary and decodes its JSON report.
func runSweeper(t *testing.T, args ...string) (*sweeper.Report, string, int) {
	t.Helper()
	cmd := exec.Command(sweeperBinary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "run %s: %v", sweeperBinary, err)
		code = exit.ExitCode()
	}
	var report sweeper.Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &report), "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	return &report, stderr.String(), code
}
