package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// The fault tests (signals, concurrency, webhooks) seed logging-operator's SyslogNGConfigs stuck
// Terminating on its finalizer, with logging-operator uninstalled: the debris orphaned-finalizers
// releases (TestF4LoggingOperatorUninstalled), by the hundred.

// syslogNGConfigs is the resource of the seeded debris.
var syslogNGConfigs = schema.GroupVersionResource{Group: "logging.banzaicloud.io", Version: "v1beta1", Resource: "syslogngconfigs"}

// orphansConfig writes a config file that says where logging-operator runs: as a Deployment in
// namespace. The shipped mapping looks for it in every namespace, which a sweep limited by
// --include-namespaces cannot tell; this one lets a sweep of namespace alone find it gone.
func orphansConfig(t *testing.T, namespace string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(file, []byte(fill(`
apiVersion: sweeper.operator-sweeper.io/v1alpha1
kind: SweeperConfig
finalizers:
- pattern: "*.logging.banzaicloud.io/finalizer"
  controllers:
  - {kind: Deployment, namespace: NAMESPACE, selector: "app.kubernetes.io/name=logging-operator"}
  consequence: local
`, namespace, "")), 0o600))
	return file
}

// orphanName is the name of the i-th seeded object: in name order, which is the order the
// sweeper acts in.
func orphanName(i int) string { return fmt.Sprintf("orphan-%04d", i) }

// syslogNGClient is the client of the SyslogNGConfigs in namespace.
func syslogNGClient(namespace string) dynamic.ResourceInterface {
	return testCluster.Dynamic.Resource(syslogNGConfigs).Namespace(namespace)
}

// seedOrphans creates n SyslogNGConfigs in namespace, the i-th with finalizers(i), and deletes
// them, so that they stay Terminating; then waits until they are old enough to be acted on with
// --min-age=0s. Sixteen at a time: one by one, a thousand take long. Whatever is left of them is
// released when the test ends.
func seedOrphans(t *testing.T, namespace string, n int, finalizers func(i int) []string) {
	t.Helper()
	ctx := context.Background()
	client := syslogNGClient(namespace)
	t.Cleanup(func() { releaseAll(t, namespace) })
	var g errgroup.Group
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion(syslogNGConfigs.GroupVersion().String())
			obj.SetKind("SyslogNGConfig")
			obj.SetName(orphanName(i))
			obj.SetFinalizers(finalizers(i))
			if _, err := client.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create %s: %w", obj.GetName(), err)
			}
			if err := client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}); err != nil {
				return fmt.Errorf("delete %s: %w", obj.GetName(), err)
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	cluster.AgeDebris()
}

// releaseAll removes the finalizers of every SyslogNGConfig in namespace, so that they are gone
// and no later test sees them.
func releaseAll(t *testing.T, namespace string) {
	client := syslogNGClient(namespace)
	list, err := client.List(context.Background(), metav1.ListOptions{})
	if !assert.NoError(t, err) {
		return
	}
	var g errgroup.Group
	g.SetLimit(16)
	for _, obj := range list.Items {
		g.Go(func() error {
			_, err := client.Patch(context.Background(), obj.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
	}
	assert.NoError(t, g.Wait(), "release what is left in %s", namespace)
}

// finalizersOnServer returns the finalizers of every SyslogNGConfig in namespace, by name: what
// is not there was released (an object Terminating without finalizers is gone).
func finalizersOnServer(t *testing.T, namespace string) map[string][]string {
	t.Helper()
	list, err := syslogNGClient(namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := make(map[string][]string, len(list.Items))
	for _, obj := range list.Items {
		out[obj.GetName()] = obj.GetFinalizers()
	}
	return out
}

// countOnServer returns how many SyslogNGConfigs are in namespace.
func countOnServer(t *testing.T, namespace string) int {
	t.Helper()
	return len(finalizersOnServer(t, namespace))
}

// orphanFindings returns the findings of orphaned-finalizers about the SyslogNGConfigs in
// namespace, by name; two findings about one object fail t.
func orphanFindings(t *testing.T, rep *report.Report, namespace string) map[string]report.FindingResult {
	t.Helper()
	out := map[string]report.FindingResult{}
	for _, f := range rep.Findings {
		if f.Rule != rules.OrphanedFinalizersName || f.Object.Namespace != namespace || f.Object.Kind != "SyslogNGConfig" {
			continue
		}
		_, twice := out[f.Object.Name]
		require.False(t, twice, "two findings about %s", f.Object.Name)
		out[f.Object.Name] = f
	}
	return out
}

// byOutcome returns the names of findings by outcome, skipped and failed ones by outcome and
// reason too ("skipped/interrupted"); sorted.
func byOutcome(findings map[string]report.FindingResult) map[string][]string {
	out := map[string][]string{}
	for name, f := range findings {
		key := string(f.Outcome)
		if reason := string(f.SkipReason) + string(f.FailReason); reason != "" {
			key += "/" + reason
		}
		out[key] = append(out[key], name)
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}

// outcomeCounts says how many names each key has: a readable summary of byOutcome for messages.
func outcomeCounts(groups map[string][]string) map[string]int {
	out := map[string]int{}
	for k, v := range groups {
		out[k] = len(v)
	}
	return out
}

// waitReleased polls the API server until at least atLeast of the total SyslogNGConfigs seeded in
// namespace are released, and returns how many are; it fails t if p exits first, or after
// timeout.
func waitReleased(t *testing.T, p *cluster.Running, namespace string, total, atLeast int, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		released := total - countOnServer(t, namespace)
		if released >= atLeast {
			return released
		}
		if p.Exited() {
			require.FailNow(t, "the sweeper exited before releasing enough to interrupt it",
				"%d of %d released, want %d; exit %v; stderr:\n%s", released, total, atLeast, p.Err(), p.Stderr())
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "the sweeper is too slow", "%d of %d released after %s, want %d", released, total, timeout, atLeast)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// selfSignedTLS returns a certificate for 127.0.0.1, its own CA, and its PEM: what a webhook
// registered by URL serves, and the caBundle the API server checks it with.
func selfSignedTLS(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	cert, caPEM, err := cluster.SelfSignedServingCert("127.0.0.1")
	require.NoError(t, err)
	return cert, caPEM
}
