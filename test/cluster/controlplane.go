package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Components are what a cluster runs besides kube-apiserver and etcd. They need the binaries
// `hack/testbin.sh all` builds.
type Components struct {
	// Controllers runs kube-controller-manager (every controller) and kube-scheduler, tuned to
	// notice a lost node within seconds.
	Controllers bool
	// OLM runs OLM v0's olm-operator and catalog-operator, in namespace olm, in restart loops.
	OLM bool
	// EndpointRouting has kube-apiserver call a webhook at an endpoint of its Service
	// (--enable-aggregator-routing) rather than at its cluster IP, which nothing serves here: how
	// it reaches an admission webhook a process of the test serves, whose Service's EndpointSlice
	// names the loopback address (see StartKyverno).
	EndpointRouting bool
}

// OLMNamespace is where OLM runs, as upstream installs it.
const OLMNamespace = "olm"

// configure sets the API server's flags the components need: pods tolerate a NotReady or
// unreachable node for 5 seconds, not 300, so that the taint manager evicts them within seconds.
func (components Components) configure(env *envtest.Environment) {
	if components.EndpointRouting {
		env.ControlPlane.GetAPIServer().Configure().Set("enable-aggregator-routing", "true")
	}
	if components.Controllers {
		env.ControlPlane.GetAPIServer().Configure().
			Set("default-not-ready-toleration-seconds", "5").
			Set("default-unreachable-toleration-seconds", "5")
	}
}

// startComponents starts the components on the running API server.
func (c *Cluster) startComponents(ctx context.Context, components Components) error {
	if components.Controllers {
		if err := c.startControllers(); err != nil {
			return err
		}
	}
	if components.OLM {
		if err := c.StartOLM(ctx); err != nil {
			return err
		}
	}
	return nil
}

// startControllers runs kube-controller-manager and kube-scheduler out of cluster, with the
// API server's admin kubeconfig.
func (c *Cluster) startControllers() error {
	caFile := filepath.Join(c.dir, "ca.crt")
	// The CA of the API server's serving chain, which the controllers publish into namespaces.
	if err := os.WriteFile(caFile, c.Config.CAData, 0o600); err != nil {
		return err
	}
	apiServer := c.env.ControlPlane.GetAPIServer()
	_, err := c.startProcess("kube-controller-manager", "kube-controller-manager", false, nil,
		"--kubeconfig="+c.Kubeconfig,
		"--controllers=*",
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		"--service-account-private-key-file="+filepath.Join(apiServer.CertDir, "sa-signer.key"),
		"--root-ca-file="+caFile,
		"--secure-port=0",
		"--node-monitor-period=1s",
		"--node-monitor-grace-period=8s",
		"--node-startup-grace-period=10s",
	)
	if err != nil {
		return err
	}
	_, err = c.startProcess("kube-scheduler", "kube-scheduler", false, nil,
		"--kubeconfig="+c.Kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
	)
	return err
}

// StartOLM runs OLM v0's olm-operator and catalog-operator out of cluster, each in a restart loop
// (OLM exits on purpose to restart), watching every namespace. OLM's CRDs are installed already.
func (c *Cluster) StartOLM(ctx context.Context) error {
	if err := c.EnsureNamespace(ctx, OLMNamespace); err != nil {
		return err
	}
	olm, err := c.startProcess("olm-operator", "olm", true, []string{"KUBECONFIG=" + c.Kubeconfig, "OPERATOR_NAMESPACE=" + OLMNamespace},
		"--namespace="+OLMNamespace, "--writeStatusName=", "--writePackageServerStatusName=")
	if err != nil {
		return err
	}
	catalog, err := c.startProcess("catalog-operator", "catalog", true, nil,
		"--kubeconfig="+c.Kubeconfig, "--namespace="+OLMNamespace, "--writeStatusName=")
	if err != nil {
		return err
	}
	c.olm = []*Process{olm, catalog}
	return nil
}

// StopOLM stops OLM's operators, as if OLM had been uninstalled or scaled to 0.
func (c *Cluster) StopOLM() error {
	var err error
	for _, p := range c.olm {
		err = p.Stop()
	}
	c.olm = nil
	return err
}

// kwokAnnotation marks the nodes a kwok process manages, by the name of its group.
const kwokAnnotation = "kwok.x-k8s.io/node"

// StartNodes starts a kwok process for a group of nodes and creates them: kwok makes them Ready,
// renews their Leases and runs their pods, as kubelets would. Stopping the process loses them:
// their Leases are no longer renewed, and the node lifecycle controller marks them Unknown.
// Labels, if given, go on every node.
func (c *Cluster) StartNodes(ctx context.Context, group string, labels map[string]string, names ...string) (*Process, error) {
	p, err := c.StartKwok(group)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{kwokAnnotation: group}, Labels: labels}}
		if _, err := c.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return p, fmt.Errorf("create node %s: %w", name, err)
		}
	}
	for _, name := range names {
		if err := c.WaitNodeReady(ctx, name, corev1.ConditionTrue); err != nil {
			return p, err
		}
	}
	return p, nil
}

// StartKwok starts a kwok process for the nodes of a group: those created by StartNodes, again.
func (c *Cluster) StartKwok(group string) (*Process, error) {
	config := filepath.Join(c.dir, "kwok-"+group+".yaml")
	stages, err := os.ReadFile(filepath.Join(c.assets, "stages.yaml"))
	if err != nil {
		return nil, fmt.Errorf("kwok's stages (hack/testbin.sh all): %w", err)
	}
	if err := os.WriteFile(config, stages, 0o600); err != nil {
		return nil, err
	}
	// Restarted when it exits, as systemd restarts a kubelet: kwok v0.8.0 sometimes dies at start
	// of "concurrent map writes" in its CEL set-up. Stop still stops it for good.
	return c.startProcess("kwok-"+group, "kwok", true, nil,
		"--kubeconfig="+c.Kubeconfig,
		"--config="+config,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+kwokAnnotation+"="+group,
		"--node-lease-duration-seconds=10",
		"--server-address=",
	)
}

// Log returns what the processes named name (catalog-operator, kyverno) have logged so far.
func (c *Cluster) Log(name string) string {
	var b strings.Builder
	for _, p := range c.processes {
		if p.Name == name {
			data, _ := os.ReadFile(p.Log)
			b.Write(data)
		}
	}
	return b.String()
}

// Logs returns the last lines of every process's log, for a test that failed.
func (c *Cluster) Logs(lines int) string {
	var b strings.Builder
	for _, p := range c.processes {
		data, _ := os.ReadFile(p.Log)
		all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(&b, "==> %s (%s) <==\n%s\n", p.Name, p.Log, strings.Join(all[max(0, len(all)-lines):], "\n"))
	}
	return b.String()
}
