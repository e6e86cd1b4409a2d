package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
	"github.com/operator-sweeper/operator-sweeper/test/pushgateway"
)

// longhornVolumes is a CRD of Longhorn's group, whose longhorn.io finalizer the shipped mappings
// protect: it guards volume replicas on the nodes and backups in the backup target.
const longhornVolumes = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: volumes.longhorn.io}
spec:
  group: longhorn.io
  scope: Namespaced
  names: {plural: volumes, singular: volume, kind: Volume, listKind: VolumeList}
  versions: [{name: v1beta2, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`

// TestProtectionCannotBeConfiguredAway: a config mapping with the pattern of a shipped protected
// one (longhorn.io) says where its controller runs, but cannot drop its protection: with the
// controller gone, the Volume is reported and keeps its finalizer, while another finalizer the
// same config maps to the same controller is released.
func TestProtectionCannotBeConfiguredAway(t *testing.T) {
	ctx := context.Background()
	ns := testCluster.NewNamespace(t)
	create(t, "", longhornVolumes)
	volumes := `
apiVersion: longhorn.io/v1beta2
kind: Volume
metadata: {name: data, namespace: NAMESPACE, finalizers: [longhorn.io]}
spec: {size: "10737418240"}
---
apiVersion: longhorn.io/v1beta2
kind: Volume
metadata: {name: scratch, namespace: NAMESPACE, finalizers: [example.com/scratch]}
spec: {size: "1073741824"}
`
	require.Eventually(t, func() bool {
		_, err := testCluster.Create(ctx, fill(volumes, ns, ""))
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "the CRD is served")
	objs, err := cluster.Decode(fill(volumes, ns, ""))
	require.NoError(t, err)
	data, scratch := testCluster.Current(t, objs[0]), testCluster.Current(t, objs[1])
	t.Cleanup(func() { remove(t, []*unstructured.Unstructured{data, scratch}) })
	for _, obj := range []*unstructured.Unstructured{data, scratch} {
		_, err := testCluster.Delete(ctx, obj)
		require.NoError(t, err)
	}
	cluster.AgeDebris()
	config := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fill(`
finalizers:
- pattern: longhorn.io
  controllers:
  - {kind: DaemonSet, namespace: NAMESPACE, selector: "app=longhorn-manager"}
- pattern: example.com/scratch
  controllers:
  - {kind: DaemonSet, namespace: NAMESPACE, selector: "app=longhorn-manager"}
  consequence: local
`, ns, "")), 0o600))

	// The whole cluster: the shipped controllers of longhorn.io run in any namespace.
	rep, stderr, code := runReport(t, "--config", config, "--dry-run=none", "--min-age=0s", "--min-terminating-age=0s", "--rules=orphaned-finalizers")

	require.Equal(t, 0, code, stderr)
	found := map[string]report.FindingResult{}
	for _, f := range ruleFindings(rep, "orphaned-finalizers", ns) {
		found[f.Object.Name] = f
	}
	require.Contains(t, found, "data")
	assert.Nil(t, found["data"].Action, "a protected finalizer is never released")
	assert.Contains(t, found["data"].Reason, "operator gone, but not released: longhorn.io guards ")
	assert.True(t, slices.ContainsFunc(found["data"].Evidence, func(e string) bool {
		return strings.HasPrefix(e, "longhorn.io guards ") && strings.HasSuffix(e, "(catalog, checked against github.com/longhorn/longhorn-manager v1.12.1): never released")
	}), "the catalog's entry guards it, whatever the config file's says: %v", found["data"].Evidence)
	assert.Equal(t, []string{"longhorn.io"}, testCluster.Current(t, data).GetFinalizers())
	require.Contains(t, found, "scratch")
	assert.Equal(t, report.OutcomeApplied, found["scratch"].Outcome, "the same controller, gone, releases an unprotected finalizer: %s", found["scratch"].Error)
	assert.Nil(t, testCluster.Current(t, scratch))
}

// TestPushgatewayURLCredentialsStayOut: a Pushgateway URL that carries a user and password
// authenticates the push, and the password appears in no output: not in the report (table,
// JSON), the logs, the error of a refused or failed push, nor the metrics pushed.
func TestPushgatewayURLCredentialsStayOut(t *testing.T) {
	secret := make([]byte, 12)
	_, _ = rand.Read(secret)
	password := hex.EncodeToString(secret)
	gw := startGateway(t, pushgateway.Options{Username: "sweeper", Password: password})
	withCredentials := func(url, password string) string {
		return strings.Replace(url, "http://", "http://sweeper:"+password+"@", 1)
	}
	ns := testCluster.NewNamespace(t)
	args := []string{"--include-namespaces", ns, "--rules=stuck-terminating", "--cluster", "creds-" + ns, "--log-level=debug", "--require-push"}
	assertNoPassword := func(what, out string) {
		t.Helper()
		assert.NotContains(t, out, password, "%s shows the password", what)
	}

	for _, output := range []string{"json", "table"} {
		stdout, stderr, code := runBinary(t, append(args, "--pushgateway-url", withCredentials(gw.URL, password), "-o", output)...)
		require.Equal(t, 0, code, stderr)
		assertNoPassword(output+" stdout", stdout)
		assertNoPassword(output+" stderr", stderr)
		assert.Contains(t, stderr, gw.URL, "the logs say where the metrics went")
	}
	families := scrape(t, gw)
	assert.Equal(t, 1.0, single(t, families, "operator_sweeper_info", map[string]string{"cluster": "creds-" + ns}), "the URL's credentials authenticate the push")
	for _, family := range families {
		for _, metric := range family.GetMetric() {
			for _, label := range metric.GetLabel() {
				assertNoPassword("label "+label.GetName(), label.GetValue())
			}
		}
	}

	wrong := "wrong-" + password[:8]
	stdout, stderr, code := runBinary(t, append(args, "--pushgateway-url", withCredentials(gw.URL, wrong), "-o", "json")...)
	assert.Equal(t, 1, code, "the push is refused: %s", stderr)
	assert.Contains(t, stderr, "unexpected status code 401")
	for what, out := range map[string]string{"stdout": stdout, "stderr": stderr} {
		assert.NotContains(t, out, wrong, "%s of a refused push shows the password", what)
	}

	down := startGateway(t, pushgateway.Options{})
	downURL := down.URL
	require.NoError(t, down.Stop())
	stdout, stderr, code = runBinary(t, append(args, "--pushgateway-url", withCredentials(downURL, password), "-o", "json")...)
	assert.Equal(t, 1, code, "the push fails: %s", stderr)
	assert.Contains(t, stderr, "connection refused")
	assert.Contains(t, stderr, "push metrics to "+downURL)
	assertNoPassword("stdout of a failed push", stdout)
	assertNoPassword("stderr of a failed push", stderr)
}
