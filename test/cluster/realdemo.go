package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Nodes SeedReal starts: three that stay, and one it loses; and the namespace of the
// CatalogSource whose pod it runs on that one (not OLM's global catalog namespace, where an
// unreachable catalog would hold up the resolution of every Subscription).
var (
	RealDemoNodes    = []string{"node-1", "node-2", "node-3"}
	RealDemoLost     = "node-lost"
	RealDemoCatalogs = "catalogs"
)

// SeedReal has the real controllers of a cluster started with Components{Controllers: true, OLM:
// true} make the field cases they can, and says what it does: OLM installs the demo operator in
// DemoNamespaces.F1 and F2 and runs a CatalogSource's pod on a node; the Subscription of F2 is
// deleted (OLM disowns what it made), OLM is uninstalled and the CSV of F1 deleted (stuck on
// csv-cleanup, with OLM's RBAC), logging-operator's debris holds its deleted namespace (F4, the
// namespace controller says so), and the node is lost (the taint manager evicts the catalog pod,
// which stays Terminating). F3 is not among them: OLM v0.28 does not reproduce it. SeedReal
// returns once the catalog pod is past its grace period, about a minute after it started.
func SeedReal(ctx context.Context, c *Cluster, say func(string)) error {
	ns := DemoNamespaces
	for _, name := range []string{ns.F1, ns.F2, ns.F4, ns.VictoriaMetrics, RealDemoCatalogs} {
		if err := c.EnsureNamespace(ctx, name); err != nil {
			return err
		}
	}
	say(fmt.Sprintf("starting kwok nodes %v, and %s, which will be lost", RealDemoNodes, RealDemoLost))
	if _, err := c.StartNodes(ctx, "nodes", nil, RealDemoNodes...); err != nil {
		return err
	}
	lost, err := c.StartNodes(ctx, "lost", map[string]string{CatalogNodeLabel + "community": "true"}, RealDemoLost)
	if err != nil {
		return err
	}
	say(fmt.Sprintf("serving the demo catalog; OLM runs CatalogSource %s/community's pod on %s", RealDemoCatalogs, RealDemoLost))
	if err := c.StartDemoCatalog(ctx); err != nil {
		return err
	}
	if err := c.SetOLMDeployments(ctx, 1); err != nil {
		return err
	}
	if err := c.CreateCatalogSourceOnNodes(ctx, RealDemoCatalogs, "community", false); err != nil {
		return err
	}
	pods, err := c.WaitCatalogPods(ctx, RealDemoCatalogs, "community")
	if err != nil {
		return err
	}
	say(fmt.Sprintf("losing %s: its kwok stops", RealDemoLost))
	if err := lost.Stop(); err != nil {
		return err
	}
	for _, namespace := range []string{ns.F1, ns.F2} {
		say("OLM installs the demo operator in " + namespace)
		if _, err := c.InstallDemo(ctx, namespace); err != nil {
			return err
		}
	}
	say("F2: deleting the Subscription in " + ns.F2)
	if err := c.Dynamic.Resource(subscriptions).Namespace(ns.F2).Delete(ctx, DemoPackage, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete Subscription %s/%s: %w", ns.F2, DemoPackage, err)
	}
	say("F1: uninstalling OLM, then deleting the CSV in " + ns.F1)
	if err := c.UninstallOLM(ctx); err != nil {
		return err
	}
	if err := c.Dynamic.Resource(csvs).Namespace(ns.F1).Delete(ctx, DemoCSV, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete CSV %s/%s: %w", ns.F1, DemoCSV, err)
	}
	say("F4: helm uninstall of logging-operator and of the site's logging chart")
	if _, err := c.SeedF4(ctx, ns.F4); err != nil {
		return err
	}
	say("helm uninstall of victoria-metrics-k8s-stack, then kubectl delete namespace " + ns.VictoriaMetrics)
	if _, err := c.SeedVictoriaMetrics(ctx, ns.VictoriaMetrics); err != nil {
		return err
	}
	say(fmt.Sprintf("F5: waiting for the taint manager to evict the catalog pod from %s, and its grace period to end", RealDemoLost))
	evicted, err := c.WaitEvicted(ctx, pods["community"])
	if err != nil {
		return err
	}
	// The namespace controller has had time to say what keeps VictoriaMetrics' namespace; give it a
	// little more.
	return wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		namespace, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns.VictoriaMetrics, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		reported := false
		for _, cond := range namespace.Status.Conditions {
			reported = reported || (cond.Type == corev1.NamespaceFinalizersRemaining && cond.Status == corev1.ConditionTrue)
		}
		return reported && time.Now().After(evicted.DeletionTimestamp.Add(time.Second)), nil
	})
}
