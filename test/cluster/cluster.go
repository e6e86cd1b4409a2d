// Package cluster runs a real kube-apiserver and etcd (built by hack/testbin.sh) for
// operator-sweeper's integration tests and demo, with the CRDs of the field cases installed:
// OLM v0's own CRDs from github.com/operator-framework/api and minimal logging-operator CRDs
// with the real group, kinds and scopes. It is also the harness of the test packages that run on
// it: their TestMain (Main), their namespaces (NewNamespace), the operator-sweeper binary they
// build and run (Build, Binary), and the field cases' objects they seed.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Cluster is a running control plane: etcd and kube-apiserver and, if asked, the components of
// Components. Without them there are no controllers and no kubelet, so whatever is deleted with a
// finalizer stays Terminating until someone removes it.
type Cluster struct {
	// Config is an admin (system:masters) client config.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file for Config, for running the binary.
	Kubeconfig string

	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	Mapper  meta.ResettableRESTMapper

	// LogDir holds the logs of the components the cluster runs as processes.
	LogDir string

	env       *envtest.Environment
	clientCA  *clientCA
	dir       string
	assets    string
	processes []*Process
	olm       []*Process
}

// Start boots the control plane from the binaries in $KUBEBUILDER_ASSETS and installs the CRDs
// of the field cases.
func Start() (*Cluster, error) {
	return StartWith(Components{})
}

// SweeperNamespace is the sweeper's own namespace, as its manifests name it, and the one a binary
// run outside a pod uses: every test cluster has it.
const SweeperNamespace = "operator-sweeper"

// StartWith boots the control plane with components.
func StartWith(components Components) (*Cluster, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run through make (make test, make demo), which builds kube-apiserver and etcd with hack/testbin.sh and sets it")
	}
	// envtest logs through controller-runtime's logger; without one it complains after 30s.
	ctrllog.SetLogger(logr.Discard())

	crds, err := CRDs()
	if err != nil {
		return nil, err
	}
	ca, err := newClientCA()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, CRDs: crds}
	// Our CA, not envtest's, authenticates clients: envtest keeps its CA's key to itself.
	env.ControlPlane.GetAPIServer().SecureServing.Authn = ca
	components.configure(env)
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start kube-apiserver and etcd from %s: %w", assets, err)
	}
	c := &Cluster{Config: cfg, env: env, assets: assets, clientCA: ca}
	if err := c.init(); err != nil {
		_ = env.Stop()
		return nil, err
	}
	if err := c.checkVersion(); err != nil {
		_ = c.Stop()
		return nil, err
	}
	if err := c.startComponents(context.Background(), components); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) init() error {
	dir, err := os.MkdirTemp("", "operator-sweeper-cluster-")
	if err != nil {
		return err
	}
	c.dir = dir
	c.LogDir = filepath.Join(dir, "logs")
	// Deprecation warnings of the built-in kinds are noise in test output.
	c.Config.WarningHandlerWithContext = rest.NoWarnings{}
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, c.env.KubeConfig, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	if c.Kube, err = kubernetes.NewForConfig(c.Config); err != nil {
		return err
	}
	if c.Dynamic, err = dynamic.NewForConfig(c.Config); err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		return err
	}
	c.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	// The sweeper keeps its pre-images and signing key in its namespace, which its manifests
	// create; a binary run outside a pod names it by default.
	return c.EnsureNamespace(context.Background(), SweeperNamespace)
}

// checkVersion checks that the API server is the Kubernetes version KUBEBUILDER_ASSETS says it
// holds (its file kube-version, which hack/testbin.sh writes): a suite meant for one version, such
// as make test-compat's, cannot run on another unnoticed.
func (c *Cluster) checkVersion() error {
	want, err := os.ReadFile(filepath.Join(c.assets, "kube-version"))
	if errors.Is(err, os.ErrNotExist) {
		return nil // a folder of binaries of another making: nothing says which version
	} else if err != nil {
		return err
	}
	info, err := c.Kube.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("the API server's version: %w", err)
	}
	if strings.TrimSpace(string(want)) != info.GitVersion {
		return fmt.Errorf("the API server is Kubernetes %s, not %s as KUBEBUILDER_ASSETS=%s says", info.GitVersion, strings.TrimSpace(string(want)), c.assets)
	}
	return nil
}

// ServerVersion is the API server's Kubernetes version, as it says (v1.37.2).
func (c *Cluster) ServerVersion() (string, error) {
	info, err := c.Kube.Discovery().ServerVersion()
	if err != nil {
		return "", err
	}
	return info.GitVersion, nil
}

// Stop stops the control plane and removes its files.
func (c *Cluster) Stop() error {
	err := errors.Join(c.stopProcesses(), c.env.Stop())
	return errors.Join(err, os.RemoveAll(c.dir))
}
