package sweeper

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

func TestDefaultOptionsAreValid(t *testing.T) {
	opts := DefaultOptions()
	require.NoError(t, opts.Validate())
	assert.Equal(t, DryRunClient, opts.DryRun, "the default mode writes nothing")
	assert.Equal(t, float32(50), opts.QPS)
	assert.Equal(t, 100, opts.Burst)
	assert.Equal(t, int64(500), opts.PageSize)
	assert.Equal(t, 15*time.Minute, opts.MinTerminatingAge.Duration)
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{"dry-run", func(o *Options) { o.DryRun = "maybe" }, `--dry-run "maybe" is invalid`},
		{"output", func(o *Options) { o.Output = "xml" }, `--output "xml" is invalid`},
		{"max-actions", func(o *Options) { o.MaxActions = -1 }, "--max-actions -1 is invalid"},
		{"qps", func(o *Options) { o.QPS = 0 }, "--qps 0 is invalid"},
		{"burst", func(o *Options) { o.Burst = 0 }, "--burst 0 is invalid"},
		{"concurrency", func(o *Options) { o.Concurrency = 0 }, "--concurrency 0 is invalid"},
		{"page-size", func(o *Options) { o.PageSize = 0 }, "--page-size 0 is invalid"},
		{"timeout", func(o *Options) { o.Timeout.Duration = -time.Second }, "--timeout -1s is invalid"},
		{"min-terminating-age", func(o *Options) { o.MinTerminatingAge.Duration = -time.Second }, "--min-terminating-age -1s is invalid"},
		{"resource pattern", func(o *Options) { o.IncludeResources = []string{"[pods"} }, `--include-resources: pattern "[pods" is invalid`},
		{"empty pattern", func(o *Options) { o.ExcludeNamespaces = []string{""} }, `--exclude-namespaces: pattern "" is invalid`},
		{"log-format", func(o *Options) { o.LogFormat = "xml" }, `--log-format "xml" is invalid`},
		{"log-level", func(o *Options) { o.LogLevel = "loud" }, `--log-level "loud" is invalid`},
		{"rules", func(o *Options) { o.Rules = []string{"stuck-terminatin"} }, `--rules: unknown rule "stuck-terminatin"; the rules are stuck-terminating`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions()
			tt.mutate(&opts)
			err := opts.Validate()
			var input *InputError
			require.True(t, errors.As(err, &input), "want an InputError, got %v", err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(file, []byte(content), 0o600))
	return file
}

func TestLoadConfigFile(t *testing.T) {
	file := writeFile(t, `
apiVersion: sweeper.operator-sweeper.io/v1alpha1
kind: SweeperConfig
dry-run: none
max-actions: 7
min-terminating-age: 1h
exclude-namespaces: [kube-*, openshift-*]
rules:
  stuck-terminating:
    enabled: false
`)
	opts, err := LoadConfigFile(file, DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, DryRunNone, opts.DryRun)
	assert.Equal(t, 7, opts.MaxActions)
	assert.Equal(t, time.Hour, opts.MinTerminatingAge.Duration)
	assert.Equal(t, []string{"kube-*", "openshift-*"}, opts.ExcludeNamespaces)
	require.NotNil(t, opts.RuleSettings.StuckTerminating.Enabled)
	assert.False(t, *opts.RuleSettings.StuckTerminating.Enabled)
	assert.Equal(t, file, opts.ConfigFile)
	// What the file does not set keeps its default.
	assert.Equal(t, int64(500), opts.PageSize)
	assert.Equal(t, OutputTable, opts.Output)
}

func TestLoadConfigFileErrors(t *testing.T) {
	tests := []struct {
		name, content, wantErr string
	}{
		{"unknown key", "max-action: 3\n", `unknown field "max-action"`},
		{"unknown rule", "rules:\n  stuck:\n    enabled: true\n", `unknown field "rules.stuck"`},
		{"unknown rule setting", "rules:\n  stuck-terminating:\n    enable: true\n", `unknown field "rules.stuck-terminating.enable"`},
		{"flag-only key", "kubeconfig: /tmp/k\n", `unknown field "kubeconfig"`},
		{"duplicate key", "qps: 1\nqps: 2\n", `"qps" already set in map`},
		{"bad YAML", "dry-run: [none\n", "yaml: line"},
		{"wrong type", "max-actions: many\n", "max-actions"},
		{"bad duration", "timeout: soon\n", "soon"},
		{"apiVersion", "apiVersion: v1\n", `apiVersion "v1" is not supported`},
		{"kind", "kind: ConfigMap\n", `kind "ConfigMap" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, tt.content)
			_, err := LoadConfigFile(file, DefaultOptions())
			var input *InputError
			require.True(t, errors.As(err, &input), "want an InputError, got %v", err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.True(t, strings.HasPrefix(err.Error(), "config file "+file+": "), err.Error())
			assert.NotContains(t, err.Error(), "\n")
		})
	}

	_, err := LoadConfigFile(filepath.Join(t.TempDir(), "missing.yaml"), DefaultOptions())
	var input *InputError
	require.True(t, errors.As(err, &input))
	assert.Contains(t, err.Error(), "no such file")
}

func TestRuleSet(t *testing.T) {
	off := false
	on := true
	tests := []struct {
		name    string
		rules   []string
		enabled *bool
		want    []string
	}{
		{"default runs every rule", []string{"*"}, nil, []string{"stuck-terminating"}},
		{"a negation disables", []string{"-stuck-terminating"}, nil, nil},
		{"only negations keep the rest", []string{"*", "-stuck-terminating"}, nil, nil},
		{"the config file can disable", []string{"*"}, &off, nil},
		{"the config file can enable", []string{"*"}, &on, []string{"stuck-terminating"}},
		{"a flag overrides the file", []string{"stuck-terminating"}, &off, []string{"stuck-terminating"}},
		{"spaces are ignored", []string{" stuck-terminating "}, nil, []string{"stuck-terminating"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.Rules = tt.rules
			opts.RuleSettings.StuckTerminating.Enabled = tt.enabled
			set, err := opts.ruleSet()
			require.NoError(t, err)
			var names []string
			for _, r := range set {
				names = append(names, r.Name())
			}
			assert.Equal(t, tt.want, names)
		})
	}

	opts := DefaultOptions()
	opts.MinTerminatingAge.Duration = 42 * time.Minute
	set, err := opts.ruleSet()
	require.NoError(t, err)
	assert.Equal(t, rules.StuckTerminating{MinAge: 42 * time.Minute}, set[0], "rules get their settings from the options")
}
