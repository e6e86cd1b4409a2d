package options

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/operator-sweeper/operator-sweeper/input"
	"github.com/operator-sweeper/operator-sweeper/notify"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

func TestDefaultOptionsAreValid(t *testing.T) {
	opts := Default()
	require.NoError(t, opts.Validate())
	assert.Equal(t, report.DryRunClient, opts.DryRun, "the default mode writes nothing")
	assert.Equal(t, float32(1000), opts.QPS)
	assert.Equal(t, 2000, opts.Burst)
	assert.Equal(t, int64(500), opts.PageSize)
	assert.Equal(t, 15*time.Minute, opts.MinTerminatingAge.Duration)
	assert.Equal(t, 10*time.Minute, opts.MinAge.Duration, "nothing younger is deleted or re-owned")
	assert.Equal(t, 0.55, opts.UnhealthyZoneThreshold, "kube-controller-manager's default")
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
		{"min-age", func(o *Options) { o.MinAge.Duration = -time.Minute }, "--min-age -1m0s is invalid: it must not be negative"},
		{"unhealthy-zone-threshold 0", func(o *Options) { o.UnhealthyZoneThreshold = 0 }, "--unhealthy-zone-threshold 0 is invalid: use a fraction above 0 and at most 1"},
		{"unhealthy-zone-threshold above 1", func(o *Options) { o.UnhealthyZoneThreshold = 1.5 }, "--unhealthy-zone-threshold 1.5 is invalid"},
		{"resource pattern", func(o *Options) { o.IncludeResources = []string{"[pods"} }, `--include-resources: pattern "[pods" is invalid`},
		{"empty pattern", func(o *Options) { o.ExcludeNamespaces = []string{""} }, `--exclude-namespaces: pattern "" is invalid`},
		{"no protected namespaces", func(o *Options) { o.ProtectedNamespaces = []string{} }, "--protected-namespaces is empty: name the namespaces no action may reach"},
		{"log-format", func(o *Options) { o.LogFormat = "xml" }, `--log-format "xml" is invalid`},
		{"log-level", func(o *Options) { o.LogLevel = "loud" }, `--log-level "loud" is invalid`},
		{"pushgateway-url", func(o *Options) { o.PushgatewayURL = "pushgateway:9091" }, `--pushgateway-url "pushgateway:9091" is invalid: use http(s)://host:port`},
		{"pushgateway-url with a password, of another scheme", func(o *Options) { o.PushgatewayURL = "ftp://sweeper:s3cret@pg:9091/x?token=t0ken" },
			`--pushgateway-url "ftp://pg:9091/x" is invalid: use http(s)://host:port`},
		{"pushgateway-url with a password, that does not parse", func(o *Options) { o.PushgatewayURL = "http://sweeper:s3cret@[pg" },
			`--pushgateway-url is invalid (missing ']' in host; not shown, as it may hold a credential): use http(s)://host:port`},
		{"pushgateway-timeout", func(o *Options) { o.PushgatewayURL = "http://pg:9091"; o.PushgatewayTimeout.Duration = 0 }, "--pushgateway-timeout 0s is invalid"},
		{"require-push without url", func(o *Options) { o.RequirePush = true }, "--require-push needs --pushgateway-url"},
		{"grouping without url", func(o *Options) { o.PushGrouping = []string{"region=eu"} }, "--push-grouping needs --pushgateway-url"},
		{"ca file without url", func(o *Options) { o.PushgatewayCAFile = "/etc/hostname" }, "--pushgateway-ca-file needs --pushgateway-url"},
		{"timeout without url", func(o *Options) { o.PushgatewayTimeout.Duration = 0 }, "--pushgateway-timeout 0s is invalid"},
		{"username without password", func(o *Options) { o.PushgatewayURL = "http://pg:9091"; o.PushgatewayUsername = "u" }, "--pushgateway-username and --pushgateway-password-file go together"},
		{"basic and bearer", func(o *Options) {
			o.PushgatewayURL, o.PushgatewayUsername, o.PushgatewayPasswordFile, o.PushgatewayBearerTokenFile = "http://pg:9091", "u", "/etc/hostname", "/etc/hostname"
		}, "use either basic auth"},
		{"missing password file", func(o *Options) {
			o.PushgatewayURL, o.PushgatewayUsername, o.PushgatewayPasswordFile = "http://pg:9091", "u", "/nonexistent/password"
		}, "--pushgateway-password-file: stat /nonexistent/password: no such file or directory"},
		{"grouping without value", func(o *Options) { o.PushgatewayURL = "http://pg:9091"; o.PushGrouping = []string{"region"} }, `--push-grouping "region" is invalid: use label=value`},
		{"grouping bad label", func(o *Options) { o.PushgatewayURL = "http://pg:9091"; o.PushGrouping = []string{"my-region=eu"} }, `--push-grouping "my-region=eu" is invalid`},
		{"grouping job", func(o *Options) { o.PushgatewayURL = "http://pg:9091"; o.PushGrouping = []string{"job=x"} }, `--push-grouping "job=x": job is set already`},
		{"notify-url scheme", func(o *Options) { o.NotifyURL = "ftp://files.example.com/services/T0/B0/XXXX" },
			"--notify-url is invalid: ftp://files.example.com/…: use an http:// or https:// URL"},
		{"notify-url without host", func(o *Options) { o.NotifyURL = "https:///services/XXXX" }, "--notify-url is invalid: https:///… names no host"},
		{"notify-url not a URL", func(o *Options) { o.NotifyURL = "http://[::1/XXXX" }, "--notify-url is invalid: it is not a URL (it is not shown"},
		{"notify-url and notify-url-file", func(o *Options) { o.NotifyURL, o.NotifyURLFile = "https://hooks.slack.com/x", "/etc/hostname" },
			"use either --notify-url or --notify-url-file, not both"},
		{"notify-url-file missing", func(o *Options) { o.NotifyURLFile = "/nonexistent/url" }, "--notify-url-file: open /nonexistent/url: no such file or directory"},
		{"notify-url-file not a URL", func(o *Options) { o.NotifyURLFile = "/etc/hostname" }, "--notify-url-file /etc/hostname holds an invalid URL: it is not an absolute URL"},
		{"notify-format", func(o *Options) { o.NotifyURL = "https://hooks.slack.com/x"; o.NotifyFormat = "xml" }, `--notify-format "xml" is invalid: use json or slack`},
		{"notify-on", func(o *Options) { o.NotifyURL = "https://hooks.slack.com/x"; o.NotifyOn = "sometimes" },
			`--notify-on "sometimes" is invalid: use actions, findings, failure or always`},
		{"notify-timeout", func(o *Options) { o.NotifyURL = "https://hooks.slack.com/x"; o.NotifyTimeout.Duration = 0 }, "--notify-timeout 0s is invalid: it must be positive"},
		{"require-notify without url", func(o *Options) { o.RequireNotify = true }, "--require-notify needs --notify-url or --notify-url-file"},
		{"notify-format without url", func(o *Options) { o.NotifyFormat = notify.Slack }, "--notify-format needs --notify-url or --notify-url-file"},
		{"notify-on without url", func(o *Options) { o.NotifyOn = notify.OnAlways }, "--notify-on needs --notify-url or --notify-url-file"},
		{"backup-dir missing", func(o *Options) { o.BackupDir = "/nonexistent/backup" }, "--backup-dir /nonexistent/backup is not a directory"},
		{"backup-dir a file", func(o *Options) { o.BackupDir = "/etc/hostname" }, "--backup-dir /etc/hostname is not a directory"},
		{"backup-retention", func(o *Options) { o.BackupRetention = 0 }, "--backup-retention 0s is invalid: it must be positive, such as 30d"},
		{"rules", func(o *Options) { o.Rules = []string{"stuck-terminatin"} }, `--rules: unknown rule "stuck-terminatin"; the rules are ` + strings.Join(RuleNames(), ", ")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Default()
			tt.mutate(&opts)
			err := opts.Validate()
			var inputErr *input.Error
			require.True(t, errors.As(err, &inputErr), "want an input.Error, got %v", err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NotContains(t, err.Error(), "\n")
			assert.NotContains(t, err.Error(), "XXXX", "a notification URL is not shown")
			assert.NotContains(t, err.Error(), "s3cret", "nor a password")
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
backup-retention: 7d
exclude-namespaces: [kube-*, openshift-*]
rules:
  stuck-terminating:
    enabled: false
`)
	opts, err := LoadConfigFile(file, Default())
	require.NoError(t, err)
	assert.Equal(t, report.DryRunNone, opts.DryRun)
	assert.Equal(t, 7, opts.MaxActions)
	assert.Equal(t, time.Hour, opts.MinTerminatingAge.Duration)
	assert.Equal(t, []string{"kube-*", "openshift-*"}, opts.ExcludeNamespaces)
	assert.Equal(t, map[string]rules.RuleConfig{"stuck-terminating": {Enabled: ptr.To(false)}}, opts.RuleConfigs)
	assert.Equal(t, file, opts.ConfigFile)
	assert.Equal(t, model.Duration(7*24*time.Hour), opts.BackupRetention, "days, as Prometheus' durations take them")
	// What the file does not set keeps its default.
	assert.Equal(t, int64(500), opts.PageSize)
	assert.Equal(t, report.Table, opts.Output)
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
		{"wrong type", "max-actions: many\n", "max-actions: got a string, want a whole number"},
		{"wrong type, nested", "finalizers: [{pattern: x/y, controllers: deployment}]\n", "finalizers.controllers: got a string, want a list"},
		{"a fraction for a whole number", "concurrency: 1.5\n", "concurrency: got a number 1.5, want a whole number"},
		{"bad duration", "timeout: soon\n", `timeout: time: invalid duration "soon"`},
		{"a list", "- qps: 1\n", `got a list, want a mapping of options such as "dry-run: none"`},
		{"a string", "qps\n", "got a string, want a mapping of options"},
		{"apiVersion", "apiVersion: v1\n", `apiVersion "v1" is not supported`},
		{"kind", "kind: ConfigMap\n", `kind "ConfigMap" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, tt.content)
			_, err := LoadConfigFile(file, Default())
			var inputErr *input.Error
			require.True(t, errors.As(err, &inputErr), "want an input.Error, got %v", err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.True(t, strings.HasPrefix(err.Error(), "config file "+file+": "), err.Error())
			assert.NotContains(t, err.Error(), "\n")
		})
	}

	_, err := LoadConfigFile(filepath.Join(t.TempDir(), "missing.yaml"), Default())
	var inputErr *input.Error
	require.True(t, errors.As(err, &inputErr))
	assert.Contains(t, err.Error(), "no such file")
}

// TestConfigFileTypos: every unknown key is named, one a line, not only the first.
func TestConfigFileTypos(t *testing.T) {
	file := writeFile(t, "max-action: 3\nqpss: 2\n")
	_, err := LoadConfigFile(file, Default())
	var inputErr *input.Error
	require.True(t, errors.As(err, &inputErr), "want an input.Error, got %v", err)
	assert.Equal(t, "config file "+file+`: unknown field "max-action"`+"\nconfig file "+file+`: unknown field "qpss"`, err.Error())
}

// TestNoConfigFile: what is no config file at all is refused before it is parsed.
func TestNoConfigFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, file, wantErr string
	}{
		{"directory", dir, "--config " + dir + " is a directory"},
		{"empty", writeFile(t, ""), "is empty: set at least one option in it, or leave out --config"},
		{"blank", writeFile(t, "\n  \n"), "is empty"},
		{"comments only", writeFile(t, "# dry-run: none\n"), "is empty"},
		{"larger than the limit", writeFile(t, "qps: 1\n"+strings.Repeat("#", maxConfigFileSize)), "is larger than the limit of 1 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadConfigFile(tt.file, Default())
			var inputErr *input.Error
			require.True(t, errors.As(err, &inputErr), "want an input.Error, got %v", err)
			assert.Contains(t, err.Error(), tt.file)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
	_, err := LoadConfigFile(writeFile(t, "qps: 1\n"+strings.Repeat("#", maxConfigFileSize-len("qps: 1\n"))), Default())
	assert.NoError(t, err, "a file of the limit's size is read")
}

func TestRuleSet(t *testing.T) {
	off := false
	on := true
	all := RuleNames()
	require.Equal(t, rules.StuckTerminatingName, all[len(all)-1], "stuck-terminating reports what is left: it comes last")
	allButLast := all[:len(all)-1]
	tests := []struct {
		name    string
		rules   []string
		enabled *bool // rules.stuck-terminating.enabled in the config file
		want    []string
	}{
		{"default runs every rule, in apply order", []string{"*"}, nil, all},
		{"a negation disables", []string{"-stuck-terminating"}, nil, allButLast},
		{"only negations keep the rest", []string{"*", "-" + all[0]}, nil, all[1:]},
		{"names select", []string{"stuck-terminating", "olm-rbac"}, nil, []string{"olm-rbac", "stuck-terminating"}},
		{"the config file can disable", []string{"*"}, &off, allButLast},
		{"the config file can enable", []string{"*"}, &on, all},
		{"a flag overrides the file", []string{"stuck-terminating"}, &off, []string{"stuck-terminating"}},
		{"spaces are ignored", []string{" stuck-terminating "}, nil, []string{"stuck-terminating"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Default()
			opts.Rules = tt.rules
			opts.RuleConfigs = map[string]rules.RuleConfig{"stuck-terminating": {Enabled: tt.enabled}}
			set, err := opts.RuleSet()
			require.NoError(t, err)
			var names []string
			for _, r := range set {
				names = append(names, r.Name())
			}
			assert.Equal(t, tt.want, names)
		})
	}
}

func TestRulesGetTheirSettings(t *testing.T) {
	opts := Default()
	opts.MinTerminatingAge.Duration = 42 * time.Minute
	opts.RuleConfigs = map[string]rules.RuleConfig{
		"olm-rbac":           {Args: rules.OLMRBACArgs{Delete: true}},
		"catalog-pods":       {Args: &rules.CatalogPodsArgs{Selector: "app=registry"}},
		"operator-leftovers": {Args: rules.OperatorLeftoversArgs{Delete: []string{"InstallPlan.operators.coreos.com"}}},
	}
	opts.CatalogPodSlack.Duration = 2 * time.Minute
	opts.NodeNotReadyFor.Duration = 7 * time.Minute
	custom := rules.FinalizerOwner{Pattern: "operators.coreos.com/*", Controllers: []rules.Controller{{Kind: "Deployment", Name: "my-olm"}}}
	opts.Finalizers = []rules.FinalizerOwner{custom}
	set, err := opts.RuleSet()
	require.NoError(t, err)

	mappings, err := rules.NewFinalizerMappings([]rules.FinalizerOwner{custom})
	require.NoError(t, err)
	settings := rules.Settings{MinTerminatingAge: 42 * time.Minute, CatalogPodSlack: 2 * time.Minute, NodeNotReadyFor: 7 * time.Minute,
		MinAge: 10 * time.Minute, UnhealthyZoneThreshold: 0.55, Finalizers: mappings}
	var want []rules.Rule
	for _, reg := range rules.Registry() {
		rule, err := reg.New(opts.RuleConfigs[reg.Name].Args, settings)
		require.NoError(t, err)
		want = append(want, rule)
	}
	assert.Equal(t, want, set, "every rule, with its arguments and the run's settings")
}

func TestConfigFileFinalizerMappings(t *testing.T) {
	file := writeFile(t, `
finalizers:
- pattern: "*.acme.io/finalizer"
  controllers:
  - {kind: Deployment, namespace: acme, selector: "app in (acme-operator)"}
  - {kind: StatefulSet, name: acme}
rules:
  olm-rbac: {delete: true}
`)
	opts, err := LoadConfigFile(file, Default())
	require.NoError(t, err)
	require.NoError(t, opts.Validate())
	assert.Equal(t, []rules.FinalizerOwner{{Pattern: "*.acme.io/finalizer", Controllers: []rules.Controller{
		{Kind: "Deployment", Namespace: "acme", Selector: "app in (acme-operator)"},
		{Kind: "StatefulSet", Name: "acme"},
	}}}, opts.Finalizers)
	assert.Equal(t, map[string]rules.RuleConfig{"olm-rbac": {Args: &rules.OLMRBACArgs{Delete: true}}}, opts.RuleConfigs)
}

func TestInvalidFinalizerMappingsAreInputErrors(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
	}{
		{"bad glob", "finalizers: [{pattern: '[x', controllers: [{kind: Deployment, name: x}]}]", `config: finalizers[0].pattern "[x" is not a valid glob`},
		{"no controllers", "finalizers: [{pattern: x/y}]", "config: finalizers[0] (x/y) has neither controllers nor a consequence"},
		{"bad kind", "finalizers: [{pattern: x/y, controllers: [{kind: Pod, name: x}]}]", `finalizers[0].controllers[0].kind "Pod" is not Deployment, StatefulSet or DaemonSet`},
		{"name and selector", "finalizers: [{pattern: x/y, controllers: [{kind: Deployment, name: x, selector: a=b}]}]", "finalizers[0].controllers[0]: set exactly one of name, selector and image"},
		{"neither", "finalizers: [{pattern: x/y, controllers: [{kind: Deployment}]}]", "finalizers[0].controllers[0]: set exactly one of name, selector and image"},
		{"bad selector", "finalizers: [{pattern: x/y, controllers: [{kind: Deployment, selector: 'a=b=c'}]}]", `finalizers[0].controllers[0].selector "a=b=c"`},
		{"unknown key", "finalizers: [{pattern: x/y, controller: []}]", `unknown field "finalizers[0].controller"`},
		{"bad consequence", "finalizers: [{pattern: x/y, consequence: harmless}]", `config: finalizers[0].consequence "harmless" is not local, cascades or guards`},
		{"bad catalog-pods selector", "rules: {catalog-pods: {selector: 'a b'}}", `config: rules.catalog-pods.selector "a b"`},
		{"unknown kind", "rules: {operator-leftovers: {delete: [Subscriptions]}}", `config: rules.operator-leftovers.delete[0] "Subscriptions" is not a kind OLM lists as a component; use one of APIService.apiregistration.k8s.io, ClusterRole.rbac.authorization.k8s.io`},
		{"negative slack", "catalog-pod-slack: -1m", "--catalog-pod-slack -1m0s is invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := LoadConfigFile(writeFile(t, tt.yaml), Default())
			if err == nil {
				err = opts.Validate()
			}
			var inputErr *input.Error
			require.True(t, errors.As(err, &inputErr), "want an input.Error, got %v", err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// TestConfigFileNamesKeysNotGroups: a value of the wrong type is named by its key, whatever group
// holds it.
func TestConfigFileNamesKeysNotGroups(t *testing.T) {
	for key, value := range map[string]string{"concurrency": "many", "qps": "fast", "max-actions": "[1]", "pushgateway-timeout": "true"} {
		_, err := LoadConfigFile(writeFile(t, key+": "+value+"\n"), Default())
		require.Error(t, err)
		assert.Contains(t, err.Error(), ": "+key+": got ", "%s", err)
		assert.NotContains(t, err.Error(), "Options")
	}
}
