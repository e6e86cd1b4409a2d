package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestBinaryReportsStuckObjectsAsJSON(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	terminate(t, ns, stuckPair)
	reportFile := filepath.Join(t.TempDir(), "report.json")

	stdout, stderr, code := runBinary(t, "--include-namespaces", ns, "--min-terminating-age=0s", "-o", "json",
		"--report-file", reportFile, "--log-format=json", "--rules=stuck-terminating")

	require.Equal(t, 0, code, stderr)
	var rep report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	assert.Equal(t, "SweepReport", rep.Kind)
	assert.Equal(t, report.DryRunClient, rep.Metadata.Mode)
	assert.NotEmpty(t, rep.Metadata.Cluster)
	assert.Equal(t, "dev", rep.Metadata.Version)
	assert.Empty(t, rep.Errors)
	findings := findingsIn(&rep, ns)
	require.Len(t, findings, 2)
	for _, f := range findings {
		assert.Equal(t, "stuck-terminating", f.Rule)
		assert.Equal(t, "stuck", f.Object.Name)
	}
	assert.Greater(t, rep.Summary.Scanned, 0)
	assert.Equal(t, len(rep.Findings), rep.Summary.Findings)

	written, err := os.ReadFile(reportFile)
	require.NoError(t, err)
	assert.JSONEq(t, stdout, string(written), "--report-file holds the same report")

	for line := range strings.Lines(stderr) {
		assert.True(t, json.Valid([]byte(line)), "--log-format=json: %q", line)
	}
}

func TestBinaryOutputFormats(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	terminate(t, ns, stuckPair)
	args := []string{"--include-namespaces", ns, "--min-terminating-age=0s", "--log-level=warn", "--rules=stuck-terminating"}

	stdout, stderr, code := runBinary(t, args...)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr)
	lines := strings.Split(stdout, "\n")
	assert.Regexp(t, `^RULE\s+KIND\s+NAMESPACE/NAME\s+ACTION\s+OUTCOME\s+REASON$`, lines[0], "table is the default")
	assert.Regexp(t, `stuck-terminating\s+SyslogNGConfig\s+`+ns+`/stuck\s+-\s+-\s+terminating for`, stdout)
	assert.Contains(t, stdout, "2 findings (0 planned, 0 applied, 0 failed, 0 skipped)")

	stdout, _, code = runBinary(t, append(args, "-o", "yaml")...)
	require.Equal(t, 0, code)
	var rep report.Report
	require.NoError(t, yaml.UnmarshalStrict([]byte(stdout), &rep))
	assert.Len(t, findingsIn(&rep, ns), 2)

	stdout, _, code = runBinary(t, append(args, "--output=markdown")...)
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "# Sweep report")
	assert.Contains(t, stdout, "| stuck-terminating | info | SyslogNGConfig "+ns+"/stuck |")
}

func TestBinaryExitCodes(t *testing.T) {
	stuck, clean := testCluster.NewNamespace(t, "stuck"), testCluster.NewNamespace(t, "clean")
	terminate(t, stuck, stuckPair)

	_, stderr, code := runBinary(t, "--include-namespaces", stuck, "--min-terminating-age=0s", "--fail-on-findings", "--log-level=warn", "--rules=stuck-terminating")
	assert.Equal(t, 3, code, "findings with --fail-on-findings")
	assert.Equal(t, "error: findings present: 2 findings (--fail-on-findings)\n", stderr)

	_, stderr, code = runBinary(t, "--include-namespaces", clean, "--exclude-resources=namespaces", "--min-terminating-age=0s", "--fail-on-findings")
	assert.Equal(t, 0, code, stderr)

	_, stderr, code = runBinary(t, "--include-namespaces", stuck, "--min-terminating-age=0s", "--rules=-stuck-terminating,-orphaned-finalizers", "--fail-on-findings")
	assert.Equal(t, 0, code, "disabled rules find nothing: %s", stderr)

	_, stderr, code = runBinary(t, "--output=xml")
	assert.Equal(t, 2, code)
	assert.Equal(t, "error: --output \"xml\" is invalid: use table, json, yaml, markdown or html\n", stderr)
}

func TestBinaryFlagsOverrideTheConfigFile(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	terminate(t, ns, stuckPair)
	config := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte(`
apiVersion: sweeper.operator-sweeper.io/v1alpha1
kind: SweeperConfig
output: json
min-terminating-age: 0s
include-namespaces: [`+ns+`]
exclude-resources: [configmaps]
log-level: warn
rules:
  olm-rbac: {enabled: false}
  orphaned-finalizers: {enabled: false}
`), 0o600))

	stdout, stderr, code := runBinary(t, "--config", config)
	require.Equal(t, 0, code, stderr)
	var rep report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), "output: json from the file")
	findings := findingsIn(&rep, ns)
	require.Len(t, findings, 1, "configmaps excluded by the file")
	assert.Equal(t, "SyslogNGConfig", findings[0].Object.Kind)

	stdout, stderr, code = runBinary(t, "--config", config, "-o", "yaml", "--exclude-resources=syslogngconfigs.logging.banzaicloud.io")
	require.Equal(t, 0, code, stderr)
	require.NoError(t, yaml.UnmarshalStrict([]byte(stdout), &rep), "-o yaml overrides the file")
	findings = findingsIn(&rep, ns)
	require.Len(t, findings, 1, "the flag's exclusions replace the file's")
	assert.Equal(t, "ConfigMap", findings[0].Object.Kind)
}

// TestBinaryExplain: explain takes TYPE/NAME as kubectl does, flags before or after; prints the
// chain through the object, or exits 2 with one line for an object it cannot find.
func TestBinaryExplain(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	terminate(t, ns, stuckPair)

	stdout, stderr, code := runBinary(t, "explain", "syslogngconfig.logging.banzaicloud.io/stuck", "-n", ns, "--min-terminating-age=0s",
		"--config", loggingConfigsFile(t, ""))
	require.Equal(t, 0, code, stderr)
	assert.True(t, strings.HasPrefix(stdout, "SyslogNGConfig "+ns+"/stuck\n"), stdout)
	assert.Contains(t, stdout, "  orphaned-finalizers (warning): operator gone; releasing syslogngconfig.logging.banzaicloud.io/finalizer\n")
	assert.Contains(t, stdout, "    with --dry-run=none: RemoveFinalizers, would be applied\n")
	assert.NotContains(t, stdout, "ConfigMap", "only the chain through the object")

	stdout, stderr, code = runBinary(t, "--min-terminating-age=0s", "-o", "json", "explain", "cm/stuck", "--namespace", ns)
	require.Equal(t, 0, code, stderr)
	var rep report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	require.NotEmpty(t, rep.Findings)
	for _, f := range rep.Findings {
		assert.Equal(t, "ConfigMap", f.Object.Kind)
	}
	assert.Equal(t, len(rep.Findings), rep.Summary.Findings)

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"explain", "namespace/no-such-namespace"}, `error: explain namespace/no-such-namespace: namespaces "no-such-namespace" not found`},
		{[]string{"explain", "gizmo/x"}, `error: explain gizmo/x: the server has no resource type "gizmo"`},
		{[]string{"explain", "configmap/stuck"}, "error: explain configmap/stuck: configmaps is namespaced: give its namespace with -n"},
	} {
		stdout, stderr, code := runBinary(t, tt.args...)
		assert.Equal(t, 2, code, "%v: %s", tt.args, stderr)
		assert.Empty(t, stdout)
		assert.True(t, strings.HasPrefix(stderr, tt.want), "%v: %s", tt.args, stderr)
		assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %s", stderr)
	}
}

// TestBinaryCompletesTargets: the shell's completion of explain's TYPE/NAME reads the cluster, its
// resource types by discovery, then the objects of one in -n; --context completes the
// kubeconfig's contexts.
func TestBinaryCompletesTargets(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	terminate(t, ns, stuckPair)
	complete := func(args ...string) []string {
		t.Helper()
		stdout, stderr, code := sweeperBinary.Run(t, append([]string{"__complete"}, args...)...)
		require.Equal(t, 0, code, stderr)
		var offered []string
		for line := range strings.Lines(stdout) {
			if value, _, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "\t"); !strings.HasPrefix(value, ":") {
				offered = append(offered, value)
			}
		}
		return offered
	}

	assert.Contains(t, complete("explain", "--kubeconfig", testCluster.Kubeconfig, "syslogng"), "syslogngconfigs/", "a custom resource, by discovery")
	assert.Equal(t, []string{"configmaps/stuck"}, complete("explain", "--kubeconfig", testCluster.Kubeconfig, "-n", ns, "configmaps/st"))
	assert.Equal(t, []string{"namespaces/" + ns}, complete("explain", "--kubeconfig", testCluster.Kubeconfig, "namespaces/"+ns))
	assert.Equal(t, []string{currentContext(t)}, complete("--kubeconfig", testCluster.Kubeconfig, "--context", ""))
}
