package sweeper

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

func TestDefaultOptionsAreValid(t *testing.T) {
	opts := DefaultOptions()
	require.NoError(t, opts.Validate())
	assert.Equal(t, DryRunClient, opts.DryRun, "the default mode writes nothing")
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
		{"notify-format without url", func(o *Options) { o.NotifyFormat = NotifySlack }, "--notify-format needs --notify-url or --notify-url-file"},
		{"notify-on without url", func(o *Options) { o.NotifyOn = NotifyOnAlways }, "--notify-on needs --notify-url or --notify-url-file"},
		{"backup-dir missing", func(o *Options) { o.BackupDir = "/nonexistent/backup" }, "--backup-dir /nonexistent/backup is not a directory"},
		{"backup-dir a file", func(o *Options) { o.BackupDir = "/etc/hostname" }, "--backup-dir /etc/hostname is not a directory"},
		{"backup-retention", func(o *Options) { o.BackupRetention = 0 }, "--backup-retention 0s is invalid: it must be positive, such as 30d"},
		{"rules", func(o *Options) { o.Rules = []string{"stuck-terminatin"} }, `--rules: unknown rule "stuck-terminatin"; the rules are dead-apiservices, dead-webhooks, olm-rbac, orphaned-finalizers, installplan-owners, catalog-pods, operator-leftovers, stuck-terminating`},
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
			assert.NotContains(t, err.Error(), "XXXX", "a notification URL is not shown")
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
	opts, err := LoadConfigFile(file, DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, DryRunNone, opts.DryRun)
	assert.Equal(t, 7, opts.MaxActions)
	assert.Equal(t, time.Hour, opts.MinTerminatingAge.Duration)
	assert.Equal(t, []string{"kube-*", "openshift-*"}, opts.ExcludeNamespaces)
	assert.Equal(t, map[string]rules.RuleConfig{"stuck-terminating": {Enabled: ptr.To(false)}}, opts.RuleConfigs)
	assert.Equal(t, file, opts.ConfigFile)
	assert.Equal(t, model.Duration(7*24*time.Hour), opts.BackupRetention, "days, as Prometheus' durations take them")
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

// TestConfigFileTypos: every unknown key is named, one a line, not only the first.
func TestConfigFileTypos(t *testing.T) {
	file := writeFile(t, "max-action: 3\nqpss: 2\n")
	_, err := LoadConfigFile(file, DefaultOptions())
	var input *InputError
	require.True(t, errors.As(err, &input), "want an InputError, got %v", err)
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
			_, err := LoadConfigFile(tt.file, DefaultOptions())
			var input *InputError
			require.True(t, errors.As(err, &input), "want an InputError, got %v", err)
			assert.Contains(t, err.Error(), tt.file)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
	_, err := LoadConfigFile(writeFile(t, "qps: 1\n"+strings.Repeat("#", maxConfigFileSize-len("qps: 1\n"))), DefaultOptions())
	assert.NoError(t, err, "a file of the limit's size is read")
}

// kubeconfigFile writes a kubeconfig for server, changed by mutate, and returns its path.
func kubeconfigFile(t *testing.T, server string, caData []byte, mutate func(*clientcmdapi.Config)) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	if mutate != nil {
		mutate(cfg)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

func TestLoadRESTConfigErrors(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	dir := t.TempDir()
	tests := []struct {
		name       string
		kubeconfig string
		wantErr    string
	}{
		{"not a kubeconfig", writeFile(t, "apiVersion: v1\nkind: Config\n"), "defines no cluster: is it a kubeconfig file?"},
		{"no current-context", kubeconfigFile(t, "https://127.0.0.1:1", nil, func(c *clientcmdapi.Config) { c.CurrentContext = "" }),
			"has no current-context: set it, or pass --context"},
		{"certificate-authority a directory", kubeconfigFile(t, "https://127.0.0.1:1", nil, func(c *clientcmdapi.Config) {
			c.Clusters["c"].CertificateAuthority = dir
		}), "kubeconfig: certificate-authority " + dir + ": read " + dir + ": is a directory"},
		{"certificate-authority not PEM", kubeconfigFile(t, "https://127.0.0.1:1", []byte("junk"), nil),
			"kubeconfig: certificate-authority (data) holds no PEM certificate"},
		{"client certificate not PEM", kubeconfigFile(t, "https://127.0.0.1:1", nil, func(c *clientcmdapi.Config) {
			c.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("junk"), ClientKeyData: []byte("junk")}
		}), "kubeconfig: client-certificate and client-key: tls: failed to find any PEM data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := LoadRESTConfig(tt.kubeconfig, "")
			var input *InputError
			require.True(t, errors.As(err, &input), "want an InputError, got %v", err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}

	t.Setenv("KUBECONFIG", filepath.Join(dir, "a")+string(filepath.ListSeparator)+filepath.Join(dir, "b"))
	_, _, err := LoadRESTConfig("", "")
	require.Error(t, err)
	assert.Equal(t, "$KUBECONFIG "+os.Getenv("KUBECONFIG")+" defines no cluster: its files are missing or empty", err.Error())
}

// TestPingSaysWhatToFix: each way the first request fails points at the part of the kubeconfig
// to change.
func TestPingSaysWhatToFix(t *testing.T) {
	unauthorized := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`))
	}))
	defer unauthorized.Close()
	caData := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: unauthorized.Certificate().Raw})
	// httptest's certificate is for 127.0.0.1 and example.com, not for localhost.
	misnamed := strings.Replace(unauthorized.URL, "127.0.0.1", "localhost", 1)
	tests := []struct {
		name       string
		kubeconfig string
		wantErr    string
	}{
		{"rejected credentials", kubeconfigFile(t, unauthorized.URL, caData, nil), "the API server at " + unauthorized.URL + " rejected the kubeconfig's credentials"},
		{"a certificate for another name", kubeconfigFile(t, misnamed, caData, nil),
			"the kubeconfig's certificate-authority does not vouch for the API server at " + misnamed},
		{"nothing listens", kubeconfigFile(t, "https://127.0.0.1:1", caData, nil), "cannot reach the API server at https://127.0.0.1:1"},
		{"credentials plugin fails", kubeconfigFile(t, unauthorized.URL, caData, func(c *clientcmdapi.Config) {
			c.AuthInfos["u"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
				APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/false", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
		}), "kubeconfig: no request could be sent to the API server at " + unauthorized.URL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := LoadRESTConfig(tt.kubeconfig, "")
			require.NoError(t, err)
			clients, err := NewClients(cfg, DefaultOptions(), slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			err = clients.Ping(context.Background(), cfg.Host)
			var input *InputError
			require.True(t, errors.As(err, &input), "want an InputError, got %v", err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestRuleSet(t *testing.T) {
	off := false
	on := true
	all := []string{"dead-apiservices", "dead-webhooks", "olm-rbac", "orphaned-finalizers", "installplan-owners", "catalog-pods", "operator-leftovers", "stuck-terminating"}
	allButLast := all[:len(all)-1]
	tests := []struct {
		name    string
		rules   []string
		enabled *bool // rules.stuck-terminating.enabled in the config file
		want    []string
	}{
		{"default runs every rule, in apply order", []string{"*"}, nil, all},
		{"a negation disables", []string{"-stuck-terminating"}, nil, allButLast},
		{"only negations keep the rest", []string{"*", "-dead-apiservices"}, nil, all[1:]},
		{"names select", []string{"stuck-terminating", "olm-rbac"}, nil, []string{"olm-rbac", "stuck-terminating"}},
		{"the config file can disable", []string{"*"}, &off, allButLast},
		{"the config file can enable", []string{"*"}, &on, all},
		{"a flag overrides the file", []string{"stuck-terminating"}, &off, []string{"stuck-terminating"}},
		{"spaces are ignored", []string{" stuck-terminating "}, nil, []string{"stuck-terminating"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions()
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
	opts := DefaultOptions()
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
	require.Len(t, set, 8)

	mappings, err := rules.NewFinalizerMappings([]rules.FinalizerOwner{custom})
	require.NoError(t, err)
	settings := rules.Settings{MinTerminatingAge: 42 * time.Minute, CatalogPodSlack: 2 * time.Minute, NodeNotReadyFor: 7 * time.Minute,
		MinAge: 10 * time.Minute, UnhealthyZoneThreshold: 0.55, Finalizers: mappings}
	must := func(rule rules.Rule, err error) rules.Rule {
		require.NoError(t, err)
		return rule
	}
	assert.Equal(t, []rules.Rule{
		must(rules.NewDeadAPIServices(rules.DeadAPIServicesArgs{}, settings)),
		must(rules.NewDeadWebhooks(rules.DeadWebhooksArgs{}, settings)),
		must(rules.NewOLMRBAC(rules.OLMRBACArgs{Delete: true}, settings)),
		must(rules.NewOrphanedFinalizers(rules.OrphanedFinalizersArgs{}, settings)),
		must(rules.NewInstallPlanOwners(rules.InstallPlanOwnersArgs{}, settings)),
		must(rules.NewCatalogPods(rules.CatalogPodsArgs{Selector: "app=registry"}, settings)),
		must(rules.NewOperatorLeftovers(rules.OperatorLeftoversArgs{Delete: []string{"InstallPlan.operators.coreos.com"}}, settings)),
		must(rules.NewStuckTerminating(rules.StuckTerminatingArgs{}, settings)),
	}, set)
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
	opts, err := LoadConfigFile(file, DefaultOptions())
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
		{"no controllers", "finalizers: [{pattern: x/y}]", "config: finalizers[0] (x/y) has no controllers"},
		{"bad kind", "finalizers: [{pattern: x/y, controllers: [{kind: Pod, name: x}]}]", `finalizers[0].controllers[0].kind "Pod" is not Deployment, StatefulSet or DaemonSet`},
		{"name and selector", "finalizers: [{pattern: x/y, controllers: [{kind: Deployment, name: x, selector: a=b}]}]", "finalizers[0].controllers[0]: set exactly one of name, selector and image"},
		{"neither", "finalizers: [{pattern: x/y, controllers: [{kind: Deployment}]}]", "finalizers[0].controllers[0]: set exactly one of name, selector and image"},
		{"bad selector", "finalizers: [{pattern: x/y, controllers: [{kind: Deployment, selector: 'a=b=c'}]}]", `finalizers[0].controllers[0].selector "a=b=c"`},
		{"unknown key", "finalizers: [{pattern: x/y, controller: []}]", `unknown field "finalizers[0].controller"`},
		{"bad catalog-pods selector", "rules: {catalog-pods: {selector: 'a b'}}", `config: rules.catalog-pods.selector "a b"`},
		{"unknown kind", "rules: {operator-leftovers: {delete: [Subscriptions]}}", `config: rules.operator-leftovers.delete[0] "Subscriptions" is not a kind OLM lists as a component; use one of APIService.apiregistration.k8s.io, ClusterRole.rbac.authorization.k8s.io`},
		{"negative slack", "catalog-pod-slack: -1m", "--catalog-pod-slack -1m0s is invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := LoadConfigFile(writeFile(t, tt.yaml), DefaultOptions())
			if err == nil {
				err = opts.Validate()
			}
			var input *InputError
			require.True(t, errors.As(err, &input), "want an InputError, got %v", err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestParseShard(t *testing.T) {
	tests := []struct {
		in      string
		want    Shard
		wantErr bool
	}{
		{in: "0/1", want: Shard{Index: 0, Count: 1}},
		{in: "3/4", want: Shard{Index: 3, Count: 4}},
		{in: "4/4", wantErr: true},
		{in: "-1/4", wantErr: true},
		{in: "1/0", wantErr: true},
		{in: "1", wantErr: true},
		{in: "a/b", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseShard(tt.in)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestShardOwnership: every object has exactly one owner among n shards; a namespace's objects
// and the Namespace itself go together.
func TestShardOwnership(t *testing.T) {
	pods := rules.Pods.GroupVersionResource
	crds := rules.CustomResourceDefinitions.GroupVersionResource
	namespaces := rules.Namespaces.GroupVersionResource
	for _, n := range []int{1, 3, 4} {
		for i := range 50 {
			ns := fmt.Sprintf("ns-%d", i)
			var owners []int
			for index := range n {
				s := Shard{Index: index, Count: n}
				if s.ownsObject(pods, ns, "p") {
					owners = append(owners, index)
					assert.True(t, s.ownsObject(namespaces, "", ns), "the Namespace goes with its objects")
				}
			}
			assert.Len(t, owners, 1, "%s in %d shards", ns, n)
		}
		owners := 0
		for index := range n {
			if (Shard{Index: index, Count: n}).ownsObject(crds, "", "x") {
				owners++
			}
		}
		assert.Equal(t, 1, owners)
	}
}
