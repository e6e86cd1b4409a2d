package cluster

import (
	"context"
	"fmt"
	"time"
)

// DemoNamespaces are where SeedDemo puts each field case.
var DemoNamespaces = struct{ F1, F2, F3, F4, F5, VictoriaMetrics, Unknown string }{
	F1: "operators", F2: "team-a", F3: "team-b", F4: "logging", F5: "olm", VictoriaMetrics: "monitoring", Unknown: "shop",
}

// unknownOwner is an object whose finalizer no known operator owns.
const unknownOwner = `
apiVersion: v1
kind: ConfigMap
metadata: {name: checkout-settings, namespace: NAMESPACE, finalizers: [shop.example.com/archive]}
data: {currency: EUR}
`

// KarpenterNodeClaim is a NodeClaim Karpenter launched an EC2 instance for, left Terminating on
// its finalizer by `helm uninstall` of Karpenter: the instance keeps running until someone
// terminates it.
const KarpenterNodeClaim = `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: default-x7k2p, finalizers: [karpenter.sh/termination], labels: {karpenter.sh/nodepool: default}}
spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
status: {providerID: "aws:///eu-west-1a/i-0123456789abcdef0", nodeName: ip-10-0-12-34.eu-west-1.compute.internal}
`

// PackageServerAPIService is the APIService OLM registers for its packageserver, as an uninstall
// that removed OLM's namespace content leaves it: its Service olm/packageserver-service is gone.
const PackageServerAPIService = `
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1.packages.operators.coreos.com
  labels: {olm.owner: packageserver, olm.owner.namespace: olm, olm.owner.kind: ClusterServiceVersion}
spec:
  group: packages.operators.coreos.com
  version: v1
  service: {namespace: olm, name: packageserver-service, port: 5443}
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 2000
  versionPriority: 15
`

// SeedDemo seeds every field case, with OLM and logging-operator uninstalled, OLM's packageserver
// APIService left behind; victoria-metrics-k8s-stack uninstalled, its objects holding their
// namespace behind its dead webhook; a Karpenter NodeClaim whose instance still runs; and an object
// whose finalizer nobody is known to own. CatalogSource pods are deleted with a grace period of
// one second, which SeedDemo waits out (AgeDebris), so that the demo can run with
// --catalog-pod-slack=0s.
func SeedDemo(ctx context.Context, c *Cluster) error {
	ns := DemoNamespaces
	for _, name := range []string{ns.F1, ns.F2, ns.F3, ns.F4, ns.F5, ns.VictoriaMetrics, ns.Unknown} {
		if err := c.CreateNamespace(ctx, name); err != nil {
			return err
		}
	}
	seeds := []func() (Seeded, error){
		func() (Seeded, error) { return c.SeedF1(ctx, ns.F1) },
		func() (Seeded, error) { return c.SeedF2(ctx, ns.F2) },
		func() (Seeded, error) { return c.SeedF3(ctx, ns.F3, false) },
		func() (Seeded, error) { return c.SeedF4(ctx, ns.F4) },
		func() (Seeded, error) { return c.SeedF5(ctx, ns.F5, time.Second) },
	}
	for i, seed := range seeds {
		if _, err := seed(); err != nil {
			return fmt.Errorf("seed field case F%d: %w", i+1, err)
		}
	}
	if _, err := c.SeedVictoriaMetrics(ctx, ns.VictoriaMetrics); err != nil {
		return fmt.Errorf("seed victoria-metrics-k8s-stack's debris: %w", err)
	}
	if _, err := c.Terminate(ctx, KarpenterNodeClaim); err != nil {
		return fmt.Errorf("seed a Karpenter NodeClaim: %w", err)
	}
	if _, err := c.Terminate(ctx, Fill(unknownOwner, ns.Unknown)); err != nil {
		return fmt.Errorf("seed an object of unknown owner: %w", err)
	}
	if _, err := c.Create(ctx, PackageServerAPIService); err != nil {
		return fmt.Errorf("seed OLM's packageserver APIService: %w", err)
	}
	AgeDebris() // past the CatalogSource pods' grace period too
	return nil
}

// AgeDebris waits until what was just created is old enough for a sweep that starts next to act
// on it with --min-age=0s: creation timestamps are in seconds, and the sweeper counts what was
// created in the second the sweep began, or the one before, as created after it began (the
// engine's min-age margin, sweeper/run.go).
func AgeDebris() { time.Sleep(2 * time.Second) }
