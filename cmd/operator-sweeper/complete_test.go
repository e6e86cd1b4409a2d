package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twoContexts is a kubeconfig of two contexts, of a server nothing listens on.
const twoContexts = `apiVersion: v1
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
- name: prod
  context: {cluster: nowhere, user: nobody}
- name: staging
  context: {cluster: nowhere, user: nobody}
current-context: prod
`

// complete runs the shell's completion request for args, as the completion scripts do, and
// returns the completions offered, without their descriptions, and the directive line.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run(context.Background(), "operator-sweeper", append([]string{"__complete"}, args...), &stdout, &stderr), stderr.String())
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	require.NotEmpty(t, lines)
	var offered []string
	for _, line := range lines[:len(lines)-1] {
		value, _, _ := strings.Cut(line, "\t")
		offered = append(offered, value)
	}
	return offered, lines[len(lines)-1]
}

// TestCompletion: the shell completes commands, flags, the values of flags with choices, contexts
// of the kubeconfig, and rules.
func TestCompletion(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", writeFile(t, "kubeconfig", twoContexts))

	offered, _ := complete(t, "")
	for _, command := range []string{"explain", "preflight", "restore", "merge", "completion"} {
		assert.Contains(t, offered, command)
	}

	offered, directive := complete(t, "--context", "")
	assert.Equal(t, []string{"prod", "staging"}, offered)
	assert.Equal(t, ":4", directive, "no files")
	offered, _ = complete(t, "explain", "--context", "st")
	assert.Equal(t, []string{"staging"}, offered)
	offered, _ = complete(t, "--contexts", "prod,")
	assert.Equal(t, []string{"prod,prod", "prod,staging"}, offered)
	offered, _ = complete(t, "--kubeconfig", writeFile(t, "other", strings.ReplaceAll(twoContexts, "staging", "test")), "--context", "")
	assert.Equal(t, []string{"prod", "test"}, offered, "--kubeconfig's contexts")

	offered, _ = complete(t, "--dry-run", "")
	assert.Equal(t, []string{"client", "server", "none"}, offered)
	offered, _ = complete(t, "restore", "-o", "")
	assert.Contains(t, offered, "json")
	offered, _ = complete(t, "--rules", "stuck-terminating,")
	assert.Contains(t, offered, "stuck-terminating,catalog-pods")
	assert.Contains(t, offered, "stuck-terminating,-catalog-pods")

	offered, _ = complete(t, "restore", "--")
	assert.Contains(t, offered, "--from")
	assert.NotContains(t, offered, "--rules", "a flag of another command")
	offered, _ = complete(t, "--")
	assert.Contains(t, offered, "--rules")
	assert.NotContains(t, offered, "--from")
}

// TestCompletionScripts: bash and zsh scripts, for the name the binary was called by.
func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__start_operator-sweeper", "zsh": "#compdef operator-sweeper"} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, exitOK, run(context.Background(), "operator-sweeper", []string{"completion", shell}, &stdout, &stderr), stderr.String())
		assert.Contains(t, stdout.String(), want)
	}
}

// TestCompletionOfTargets: explain and preflight complete TYPE/, then NAME; explain's types come
// from the rules when the cluster does not answer.
func TestCompletionOfTargets(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", writeFile(t, "kubeconfig", twoContexts))

	offered, directive := complete(t, "preflight", "")
	assert.Equal(t, []string{"helm/", "deployment/", "statefulset/", "daemonset/", "subscription/", "csv/", "clusterextension/"}, offered)
	assert.Equal(t, ":6", directive, "no space after the slash, no files")
	offered, _ = complete(t, "preflight", "-n", "shop", "d")
	assert.Equal(t, []string{"deployment/", "daemonset/"}, offered)

	offered, _ = complete(t, "explain", "names")
	assert.Equal(t, []string{"namespaces/"}, offered, "the rules' resources, without a cluster")
	offered, directive = complete(t, "explain", "namespaces/")
	assert.Empty(t, offered, "no cluster, no names")
	assert.Equal(t, ":4", directive)

	offered, _ = complete(t, "explain", "namespaces/x", "")
	assert.Empty(t, offered, "one argument")
}
