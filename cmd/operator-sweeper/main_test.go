package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(file, []byte(content), 0o600))
	return file
}

// unreachableKubeconfig points at a port nothing listens on.
const unreachableKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster:
    server: https://127.0.0.1:1
users:
- name: nobody
  user:
    token: x
contexts:
- name: nowhere
  context: {cluster: nowhere, user: nobody}
current-context: nowhere
`

// parse parses a command line as run does, into its command's options, checked, without running
// the command.
func parse(args []string) (command, *options.Options, *pflag.FlagSet, error) {
	var p parsed
	root := newRoot("operator-sweeper", streams{out: io.Discard, err: io.Discard}, func(_ context.Context, got parsed) error {
		p = got
		return nil
	})
	err := execute(context.Background(), root, args)
	return p.cmd, p.opts, p.flags, err
}

func TestBadInputExitsTwoWithOneLine(t *testing.T) {
	// Keep the tests off any real cluster: nothing here may reach further than the kubeconfig check.
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	kubeconfig := writeFile(t, "kubeconfig", unreachableKubeconfig)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"missing kubeconfig", []string{"--kubeconfig", "/nonexistent"}, "/nonexistent"},
		{"missing context", []string{"--kubeconfig", kubeconfig, "--context", "prod"}, `context "prod" does not exist`},
		{"output", []string{"--output=xml"}, `--output "xml" is invalid: use table, json, yaml, markdown or html`},
		{"dry-run", []string{"--dry-run=maybe"}, `--dry-run "maybe" is invalid: use client, server or none`},
		{"max-actions", []string{"--max-actions=-1"}, "--max-actions -1 is invalid"},
		{"not a number", []string{"--max-actions=many"}, `invalid argument "many" for "--max-actions"`},
		{"unknown flag", []string{"--dryrun=none"}, "unknown flag: --dryrun"},
		{"positional argument", []string{"sweep"}, `unexpected argument "sweep"`},
		{"explain without an object", []string{"explain"}, "explain takes one object, as TYPE/NAME"},
		{"explain two objects", []string{"explain", "ns/a", "ns/b"}, "explain takes one object, as TYPE/NAME"},
		{"explain without a type", []string{"explain", "logging"}, `explain "logging": give the object as TYPE/NAME`},
		{"explain, a bad flag", []string{"explain", "ns/a", "--output=xml"}, `--output "xml" is invalid`},
		{"unknown rule", []string{"--rules=orphans"}, `--rules: unknown rule "orphans"`},
		{"config unknown key", []string{"--config", writeFile(t, "c.yaml", "dryrun: none\n")}, `unknown field "dryrun"`},
		{"config bad YAML", []string{"--config", writeFile(t, "c.yaml", "qps: [1\n")}, "yaml: line"},
		{"config missing", []string{"--config", "/nonexistent/config.yaml"}, "--config: open /nonexistent/config.yaml"},
		{"config bad finalizer pattern", []string{"--config", writeFile(t, "c.yaml", "finalizers: [{pattern: '[x', controllers: [{kind: Deployment, name: x}]}]\n")},
			`config: finalizers[0].pattern "[x" is not a valid glob`},
		{"config bad selector", []string{"--config", writeFile(t, "c.yaml", "finalizers: [{pattern: x/y, controllers: [{kind: Deployment, selector: 'a b'}]}]\n")},
			`config: finalizers[0].controllers[0].selector "a b"`},
		{"report file directory", []string{"--kubeconfig", kubeconfig, "--report-file", "/nonexistent/dir/report.json"}, "--report-file /nonexistent/dir/report.json: its directory does not exist"},
		{"unreachable server", []string{"--kubeconfig", kubeconfig}, "cannot reach the API server at https://127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), "operator-sweeper", tt.args, &stdout, &stderr)
			assert.Equal(t, exitInput, code)
			assert.Empty(t, stdout.String())
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			require.Len(t, lines, 1, "stderr: %q", stderr.String())
			assert.True(t, strings.HasPrefix(lines[0], "error: "), lines[0])
			assert.Contains(t, lines[0], tt.wantErr)
		})
	}
}

// TestEveryProblemIsReported: bad input names every problem at once, one line each.
func TestEveryProblemIsReported(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	config := writeFile(t, "c.yaml", "rules:\n  catalog-pods: {selector: 'a b'}\n  operator-leftovers: {delete: [Pod]}\n")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), "operator-sweeper", []string{"--config", config, "--output=xml", "--qps=0", "--rules=*,-nope"}, &stdout, &stderr)
	assert.Equal(t, exitInput, code)
	assert.Empty(t, stdout.String())
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	require.Len(t, lines, 3, "stderr: %q", stderr.String())
	assert.Equal(t, `error: --output "xml" is invalid: use table, json, yaml, markdown or html`, lines[0])
	assert.Equal(t, "error: --qps 0 is invalid: it must be positive", lines[1])
	assert.True(t, strings.HasPrefix(lines[2], `error: --rules: unknown rule "nope"`), lines[2])

	stderr.Reset()
	code = run(context.Background(), "operator-sweeper", []string{"--config", config}, &stdout, &stderr)
	assert.Equal(t, exitInput, code)
	lines = strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	require.Len(t, lines, 2, "stderr: %q", stderr.String())
	assert.True(t, strings.HasPrefix(lines[0], `error: config: rules.catalog-pods.selector "a b": `), lines[0])
	assert.True(t, strings.HasPrefix(lines[1], `error: config: rules.operator-leftovers.delete[0] "Pod" is not a kind OLM lists as a component`), lines[1])
}

func TestVersionAndHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitOK, run(context.Background(), "operator-sweeper", []string{"--version"}, &stdout, &stderr))
	assert.Equal(t, "operator-sweeper dev (commit unknown)\n", stdout.String())

	stdout.Reset()
	assert.Equal(t, exitOK, run(context.Background(), "operator-sweeper", []string{"--help"}, &stdout, &stderr))
	for _, flag := range []string{"--kubeconfig", "--context", "--dry-run", "-o, --output", "--report-file", "--rules", "--max-actions",
		"--qps", "--burst", "--concurrency", "--page-size", "--timeout", "--include-resources", "--exclude-resources",
		"--include-namespaces", "--exclude-namespaces", "--min-terminating-age", "--min-age", "--catalog-pod-slack", "--node-not-ready-for",
		"--unhealthy-zone-threshold", "--config", "--log-format", "--log-level",
		"--fail-on-findings", "--version"} {
		assert.Contains(t, stdout.String(), flag)
	}
	assert.Empty(t, stderr.String())
}

func TestFlagsOverrideTheConfigFile(t *testing.T) {
	config := writeFile(t, "config.yaml", "dry-run: none\nmax-actions: 7\npage-size: 20\nexclude-namespaces: [a]\n")
	_, opts, _, err := parse([]string{"--config", config, "--max-actions=3", "--exclude-namespaces=b,c"})
	require.NoError(t, err)
	assert.Equal(t, report.DryRunNone, opts.DryRun, "from the file")
	assert.Equal(t, int64(20), opts.PageSize, "from the file")
	assert.Equal(t, 3, opts.MaxActions, "the flag wins")
	assert.Equal(t, []string{"b", "c"}, opts.ExcludeNamespaces, "the flag replaces the file's list")
	assert.Equal(t, options.Default().Timeout, opts.Timeout, "what neither sets keeps its default")

	_, opts, _, err = parse(nil)
	require.NoError(t, err)
	assert.Equal(t, options.Default(), *opts)
}

// TestAFailedStartKeepsTheLastReport: a run that cannot even reach the server leaves the previous
// --report-file as it was.
func TestAFailedStartKeepsTheLastReport(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	reportFile := writeFile(t, "report.json", `{"kind":"SweepReport"}`)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), "operator-sweeper", []string{"--kubeconfig", writeFile(t, "kubeconfig", unreachableKubeconfig), "--report-file", reportFile}, &stdout, &stderr)
	assert.Equal(t, exitInput, code)
	data, err := os.ReadFile(reportFile)
	require.NoError(t, err)
	assert.Equal(t, `{"kind":"SweepReport"}`, string(data))
}

func TestCommandName(t *testing.T) {
	for argv0, want := range map[string]string{
		"operator-sweeper":                   "operator-sweeper",
		"/usr/local/bin/operator-sweeper":    "operator-sweeper",
		"bin/kubectl-sweeper":                "kubectl sweeper",
		"/home/me/.krew/bin/kubectl-sweeper": "kubectl sweeper",
		"kubectl-operator_sweeper":           "kubectl operator-sweeper",
	} {
		assert.Equal(t, want, commandName(argv0), argv0)
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run(context.Background(), "kubectl sweeper", []string{"--help"}, &stdout, &stderr))
	assert.Contains(t, stdout.String(), "Usage: kubectl sweeper [flags]\n       kubectl sweeper explain TYPE/NAME")
}

// TestEachCommandTakesOnlyItsFlags: a flag of another command is bad input that names the flag and
// who takes it, before anything is read or contacted.
func TestEachCommandTakesOnlyItsFlags(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"restore", "--from", "r.json", "--require-notify"}, "restore does not take --require-notify: it is a flag of the sweep"},
		{[]string{"--require-notify", "restore", "--from", "r.json"}, "restore does not take --require-notify: it is a flag of the sweep"},
		{[]string{"restore", "--from", "r.json", "--pushgateway-url=http://pg:9091"}, "restore does not take --pushgateway-url: it is a flag of the sweep"},
		{[]string{"restore", "--from", "r.json", "--rules=olm-rbac"}, "restore does not take --rules: it is a flag of the sweep and explain"},
		{[]string{"restore", "--from", "r.json", "--max-actions=3"}, "restore does not take --max-actions: it is a flag of the sweep and explain"},
		{[]string{"restore", "--from", "r.json", "-n", "shop"}, "restore does not take -n: it is a flag of explain and preflight"},
		{[]string{"explain", "ns/a", "--dry-run=none"}, "explain does not take --dry-run: it is a flag of the sweep, preflight and restore"},
		{[]string{"explain", "ns/a", "--backup-dir=/backup"}, "explain does not take --backup-dir: it is a flag of the sweep and preflight"},
		{[]string{"explain", "ns/a", "--notify-url=https://hooks.example.com/x"}, "explain does not take --notify-url: it is a flag of the sweep"},
		{[]string{"explain", "ns/a", "--from", "r.json"}, "explain does not take --from: it is a flag of restore"},
		{[]string{"--from", "r.json"}, "the sweep does not take --from: it is a flag of restore"},
		{[]string{"--only", "clusterrole/x"}, "the sweep does not take --only: it is a flag of restore"},
		{[]string{"--namespace", "shop"}, "the sweep does not take --namespace: it is a flag of explain and preflight"},
		{[]string{"--drain"}, "the sweep does not take --drain: it is a flag of preflight"},
		{[]string{"preflight", "helm/x", "-n", "shop", "--rules=olm-rbac"}, "preflight does not take --rules: it is a flag of the sweep and explain"},
		{[]string{"preflight", "helm/x", "-n", "shop", "--max-actions=3"}, "preflight does not take --max-actions: it is a flag of the sweep and explain"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), "operator-sweeper", tt.args, &stdout, &stderr)
			assert.Equal(t, exitInput, code)
			assert.Empty(t, stdout.String())
			assert.Equal(t, "error: "+tt.wantErr+"\n", stderr.String())
		})
	}
}

// TestEveryFlagBelongsToACommand: each command lists, in its help, exactly the flags of its groups
// and its own.
func TestEveryFlagBelongsToACommand(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"explain", "--help"}, {"preflight", "--help"}, {"restore", "--help"}} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, exitOK, run(context.Background(), "operator-sweeper", args, &stdout, &stderr), "%v", args)
		help := stdout.String()
		assert.Contains(t, help, "--config")
		switch args[0] {
		case "explain":
			assert.Contains(t, help, "-n, --namespace")
			assert.Contains(t, help, "--max-actions")
			assert.NotContains(t, help, "--dry-run")
			assert.NotContains(t, help, "--pushgateway-url")
		case "preflight":
			assert.Contains(t, help, "-n, --namespace")
			assert.Contains(t, help, "--drain-timeout")
			assert.Contains(t, help, "--dry-run")
			assert.NotContains(t, help, "--rules")
			assert.NotContains(t, help, "--max-actions")
		case "restore":
			assert.Contains(t, help, "--from")
			assert.Contains(t, help, "--dry-run")
			assert.NotContains(t, help, "--rules")
			assert.NotContains(t, help, "--require-notify")
		default:
			assert.Contains(t, help, "--require-notify")
			assert.NotContains(t, help, "--from string")
			assert.NotContains(t, help, "--drain-timeout")
		}
	}
}
