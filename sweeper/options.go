// Package sweeper is operator-sweeper's engine: one run walks the cluster, lets the rules plan,
// limits and applies their actions, and reports what happened.
//
//	options ─► clients ─► inventory ─► observe ─► plan ─► limit ─► apply ─► report
package sweeper

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// DryRunMode says whether and how actions reach the API server.
type DryRunMode string

const (
	// DryRunClient plans and reports; nothing is sent. The default.
	DryRunClient DryRunMode = "client"
	// DryRunServer sends every write with dryRun=All, so admission and RBAC are exercised and
	// nothing is persisted.
	DryRunServer DryRunMode = "server"
	// DryRunNone applies the actions.
	DryRunNone DryRunMode = "none"
)

// OutputFormat is how the report is printed on standard output.
type OutputFormat string

// The report formats.
const (
	OutputTable    OutputFormat = "table"
	OutputJSON     OutputFormat = "json"
	OutputYAML     OutputFormat = "yaml"
	OutputMarkdown OutputFormat = "markdown"
)

// ConfigAPIVersion and ConfigKind identify a --config file; both are optional in the file.
const (
	ConfigAPIVersion = "sweeper.operator-sweeper.io/v1alpha1"
	ConfigKind       = "SweeperConfig"
)

// Options is everything one run needs. The config file uses the flag names as keys, so a flag
// and its key always mean the same thing; flags override the file.
type Options struct {
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG, in-cluster, then ~/.kube/config.
	Kubeconfig string `json:"-"`
	// Context is the kubeconfig context to use; empty means the current one.
	Context string `json:"-"`
	// ConfigFile is the --config file these options were read from, if any.
	ConfigFile string `json:"-"`
	// Version is the sweeper's version, stamped into the binary at build time.
	Version string `json:"-"`

	// Cluster names the cluster in the report; empty means the kubeconfig context or "in-cluster".
	Cluster string `json:"cluster,omitempty"`
	// DryRun is client (default: write nothing), server or none.
	DryRun DryRunMode `json:"dry-run,omitempty"`
	// Output is the report format on standard output.
	Output OutputFormat `json:"output,omitempty"`
	// ReportFile, if set, also receives the report as JSON.
	ReportFile string `json:"report-file,omitempty"`
	// Rules enables and disables rules by name: "*" is every rule enabled by the config file,
	// "foo" enables foo, "-foo" disables it. Without "*", only the named rules run.
	Rules []string `json:"-"`
	// RuleSettings holds each rule's settings from the config file.
	RuleSettings RuleSettings `json:"rules,omitempty"`
	// Finalizers maps finalizers to the controllers that remove them; they come before the
	// shipped defaults (rules.DefaultFinalizerOwners) and replace those of the same pattern.
	Finalizers []rules.FinalizerOwner `json:"finalizers,omitempty"`
	// MaxActions caps the actions taken in one run; the rest are skipped. 0 means no cap.
	MaxActions int `json:"max-actions"`
	// QPS and Burst bound the client's request rate.
	QPS   float32 `json:"qps"`
	Burst int     `json:"burst"`
	// Concurrency is how many lists run in parallel.
	Concurrency int `json:"concurrency"`
	// PageSize is the limit of each list request.
	PageSize int64 `json:"page-size"`
	// Timeout bounds the whole run; 0 means no bound.
	Timeout metav1.Duration `json:"timeout"`
	// IncludeResources and ExcludeResources select resources by pattern: "pods" (any group),
	// "deployments.apps", "*.operators.coreos.com".
	IncludeResources []string `json:"include-resources,omitempty"`
	ExcludeResources []string `json:"exclude-resources,omitempty"`
	// IncludeNamespaces and ExcludeNamespaces select namespaces by name or glob.
	IncludeNamespaces []string `json:"include-namespaces,omitempty"`
	ExcludeNamespaces []string `json:"exclude-namespaces,omitempty"`
	// ProtectedNamespaces are observed and reported, but no action is ever taken in them.
	ProtectedNamespaces []string `json:"protected-namespaces,omitempty"`
	// MinTerminatingAge is how long an object must have been terminating before rules consider it stuck.
	MinTerminatingAge metav1.Duration `json:"min-terminating-age"`
	// CatalogPodSlack is how long past its grace period a CatalogSource pod must be before it is
	// force-deleted from a lost node.
	CatalogPodSlack metav1.Duration `json:"catalog-pod-slack"`
	// NodeNotReadyFor is how long a node must have been not Ready for its pods to count as lost.
	NodeNotReadyFor metav1.Duration `json:"node-not-ready-for"`
	// LogFormat is text or json; LogLevel is debug, info, warn or error.
	LogFormat string `json:"log-format,omitempty"`
	LogLevel  string `json:"log-level,omitempty"`
	// FailOnFindings makes a run with findings exit 3.
	FailOnFindings bool `json:"fail-on-findings"`

	// PushgatewayURL, if set, receives the run's metrics (env SWEEPER_PUSHGATEWAY_URL).
	PushgatewayURL string `json:"pushgateway-url,omitempty"`
	// PushgatewayTimeout bounds the push.
	PushgatewayTimeout metav1.Duration `json:"pushgateway-timeout"`
	// PushgatewayUsername and PushgatewayPasswordFile are basic-auth credentials.
	PushgatewayUsername     string `json:"pushgateway-username,omitempty"`
	PushgatewayPasswordFile string `json:"pushgateway-password-file,omitempty"`
	// PushgatewayBearerTokenFile holds a bearer token, instead of basic auth.
	PushgatewayBearerTokenFile string `json:"pushgateway-bearer-token-file,omitempty"`
	// PushgatewayCAFile is the CA bundle that signs an HTTPS Pushgateway's certificate.
	PushgatewayCAFile string `json:"pushgateway-ca-file,omitempty"`
	// PushgatewayInsecureSkipVerify does not verify an HTTPS Pushgateway's certificate.
	PushgatewayInsecureSkipVerify bool `json:"pushgateway-insecure-skip-verify"`
	// PushGrouping adds key=value grouping labels to job and cluster.
	PushGrouping []string `json:"push-grouping,omitempty"`
	// RequirePush makes a failed push fail the run (exit 1); otherwise it is reported and logged.
	RequirePush bool `json:"require-push"`
}

// RuleSettings is the "rules" section of the config file: one entry per rule.
type RuleSettings struct {
	OLMRBAC            OLMRBACSettings           `json:"olm-rbac"`
	OrphanedFinalizers RuleToggle                `json:"orphaned-finalizers"`
	InstallPlanOwners  RuleToggle                `json:"installplan-owners"`
	CatalogPods        CatalogPodsSettings       `json:"catalog-pods"`
	OperatorLeftovers  OperatorLeftoversSettings `json:"operator-leftovers"`
	StuckTerminating   RuleToggle                `json:"stuck-terminating"`
}

// CatalogPodsSettings are the settings of rule catalog-pods.
type CatalogPodsSettings struct {
	RuleToggle `json:",inline"`
	// Selector, a label selector, extends the rule to other bare pods on lost nodes.
	Selector string `json:"selector,omitempty"`
}

// OperatorLeftoversSettings are the settings of rule operator-leftovers.
type OperatorLeftoversSettings struct {
	RuleToggle `json:",inline"`
	// Delete lists the kinds whose leftovers are deleted; CustomResourceDefinition deletes user data.
	Delete []string `json:"delete,omitempty"`
}

// OLMRBACSettings are the settings of rule olm-rbac.
type OLMRBACSettings struct {
	RuleToggle `json:",inline"`
	// Delete opts in to deleting the RBAC of gone ClusterServiceVersions.
	Delete bool `json:"delete,omitempty"`
}

// RuleToggle is the part of a rule's settings every rule has.
type RuleToggle struct {
	// Enabled turns the rule on or off; unset keeps the rule's default (on).
	Enabled *bool `json:"enabled,omitempty"`
}

// DefaultOptions returns the options of a run without flags or config file.
func DefaultOptions() Options {
	return Options{
		DryRun:              DryRunClient,
		Output:              OutputTable,
		Rules:               []string{"*"},
		MaxActions:          100,
		QPS:                 50,
		Burst:               100,
		Concurrency:         8,
		PageSize:            500,
		Timeout:             metav1.Duration{Duration: 10 * time.Minute},
		ProtectedNamespaces: []string{"kube-system", "kube-public", "kube-node-lease"},
		MinTerminatingAge:   metav1.Duration{Duration: 15 * time.Minute},
		CatalogPodSlack:     metav1.Duration{Duration: time.Minute},
		NodeNotReadyFor:     metav1.Duration{Duration: 5 * time.Minute},
		LogFormat:           "text",
		LogLevel:            "info",
		PushgatewayTimeout:  metav1.Duration{Duration: 10 * time.Second},
	}
}

// InputError is bad input from the user: a flag, the config file or the kubeconfig. Its message
// is one line that names the problem; the CLI exits 2 on it.
type InputError struct {
	Err error
}

// Error returns the message on one line, whatever the libraries underneath put in it.
func (e *InputError) Error() string { return strings.Join(strings.Fields(e.Err.Error()), " ") }

func (e *InputError) Unwrap() error { return e.Err }

func inputErrorf(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
}

// configFile is the schema of --config: the options, keyed by flag name, plus an optional
// apiVersion and kind.
type configFile struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	*Options   `json:",inline"`
}

// LoadConfigFile reads a config file on top of base. Decoding is strict: an unknown or duplicate
// key is an error, so a typo never silently falls back to a default.
func LoadConfigFile(file string, base Options) (Options, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return base, inputErrorf("--config: %w", err)
	}
	// YAMLToJSONStrict refuses duplicate keys; sigs.k8s.io/json names unknown keys by their full
	// path ("rules.stuck-terminating.enable"), as the API server does.
	jsonData, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return base, inputErrorf("config file %s: %w", file, err)
	}
	cfg := configFile{Options: &base}
	strict, err := sigsjson.UnmarshalStrict(jsonData, &cfg)
	if err == nil && len(strict) > 0 {
		err = strict[0]
	}
	if err != nil {
		return base, inputErrorf("config file %s: %s", file, strings.TrimPrefix(err.Error(), "json: "))
	}
	if cfg.APIVersion != "" && cfg.APIVersion != ConfigAPIVersion {
		return base, inputErrorf("config file %s: apiVersion %q is not supported, use %s", file, cfg.APIVersion, ConfigAPIVersion)
	}
	if cfg.Kind != "" && cfg.Kind != ConfigKind {
		return base, inputErrorf("config file %s: kind %q is not supported, use %s", file, cfg.Kind, ConfigKind)
	}
	base.ConfigFile = file
	return base, nil
}

// Validate checks the options and returns an InputError naming the first problem.
func (o Options) Validate() error {
	switch o.DryRun {
	case DryRunClient, DryRunServer, DryRunNone:
	default:
		return inputErrorf("--dry-run %q is invalid: use client, server or none", o.DryRun)
	}
	switch o.Output {
	case OutputTable, OutputJSON, OutputYAML, OutputMarkdown:
	default:
		return inputErrorf("--output %q is invalid: use table, json, yaml or markdown", o.Output)
	}
	switch {
	case o.MaxActions < 0:
		return inputErrorf("--max-actions %d is invalid: use 0 (no cap) or a positive number", o.MaxActions)
	case o.QPS <= 0:
		return inputErrorf("--qps %g is invalid: it must be positive", o.QPS)
	case o.Burst < 1:
		return inputErrorf("--burst %d is invalid: it must be at least 1", o.Burst)
	case o.Concurrency < 1:
		return inputErrorf("--concurrency %d is invalid: it must be at least 1", o.Concurrency)
	case o.PageSize < 1:
		return inputErrorf("--page-size %d is invalid: it must be at least 1", o.PageSize)
	case o.Timeout.Duration < 0:
		return inputErrorf("--timeout %s is invalid: use 0 (no timeout) or a positive duration", o.Timeout.Duration)
	case o.MinTerminatingAge.Duration < 0:
		return inputErrorf("--min-terminating-age %s is invalid: it must not be negative", o.MinTerminatingAge.Duration)
	case o.CatalogPodSlack.Duration < 0:
		return inputErrorf("--catalog-pod-slack %s is invalid: it must not be negative", o.CatalogPodSlack.Duration)
	case o.NodeNotReadyFor.Duration < 0:
		return inputErrorf("--node-not-ready-for %s is invalid: it must not be negative", o.NodeNotReadyFor.Duration)
	}
	for _, list := range []struct {
		flag     string
		patterns []string
	}{
		{"--include-resources", o.IncludeResources},
		{"--exclude-resources", o.ExcludeResources},
		{"--include-namespaces", o.IncludeNamespaces},
		{"--exclude-namespaces", o.ExcludeNamespaces},
		{"--protected-namespaces", o.ProtectedNamespaces},
	} {
		for _, p := range list.patterns {
			if _, err := path.Match(p, ""); err != nil || p == "" {
				return inputErrorf("%s: pattern %q is invalid: use a name or a glob such as \"*.operators.coreos.com\"", list.flag, p)
			}
		}
	}
	switch o.LogFormat {
	case "text", "json":
	default:
		return inputErrorf("--log-format %q is invalid: use text or json", o.LogFormat)
	}
	if _, err := o.logLevel(); err != nil {
		return err
	}
	if o.ReportFile != "" {
		if info, err := os.Stat(filepath.Dir(o.ReportFile)); err != nil || !info.IsDir() {
			return inputErrorf("--report-file %s: its directory does not exist", o.ReportFile)
		}
	}
	if err := o.validatePush(); err != nil {
		return err
	}
	if err := rules.ValidateFinalizerOwners(o.Finalizers); err != nil {
		return inputErrorf("config: %w", err)
	}
	if _, err := labels.Parse(o.RuleSettings.CatalogPods.Selector); err != nil {
		return inputErrorf("config: rules.catalog-pods.selector %q: %w", o.RuleSettings.CatalogPods.Selector, err)
	}
	if err := rules.ValidateLeftoverKinds(o.RuleSettings.OperatorLeftovers.Delete); err != nil {
		return inputErrorf("config: %w", err)
	}
	_, err := o.RuleSet()
	return err
}

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

func (o Options) validatePush() error {
	if o.PushgatewayURL == "" {
		if o.RequirePush {
			return inputErrorf("--require-push needs --pushgateway-url (or SWEEPER_PUSHGATEWAY_URL)")
		}
		return nil
	}
	u, err := url.Parse(o.PushgatewayURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return inputErrorf("--pushgateway-url %q is invalid: use http(s)://host:port", o.PushgatewayURL)
	}
	if o.PushgatewayTimeout.Duration <= 0 {
		return inputErrorf("--pushgateway-timeout %s is invalid: it must be positive", o.PushgatewayTimeout.Duration)
	}
	if (o.PushgatewayUsername == "") != (o.PushgatewayPasswordFile == "") {
		return inputErrorf("--pushgateway-username and --pushgateway-password-file go together")
	}
	if o.PushgatewayUsername != "" && o.PushgatewayBearerTokenFile != "" {
		return inputErrorf("use either basic auth (--pushgateway-username) or --pushgateway-bearer-token-file, not both")
	}
	for _, f := range []struct{ flag, file string }{
		{"--pushgateway-password-file", o.PushgatewayPasswordFile},
		{"--pushgateway-bearer-token-file", o.PushgatewayBearerTokenFile},
		{"--pushgateway-ca-file", o.PushgatewayCAFile},
	} {
		if f.file == "" {
			continue
		}
		if _, err := os.Stat(f.file); err != nil {
			return inputErrorf("%s: %w", f.flag, err)
		}
	}
	for _, kv := range o.PushGrouping {
		key, value, ok := strings.Cut(kv, "=")
		switch {
		case !ok || value == "" || !labelName.MatchString(key):
			return inputErrorf("--push-grouping %q is invalid: use label=value", kv)
		case key == "job" || key == "cluster":
			return inputErrorf("--push-grouping %q: %s is set already (use --cluster)", kv, key)
		}
	}
	return nil
}

func (o Options) logLevel() (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.LogLevel)); err != nil {
		return level, inputErrorf("--log-level %q is invalid: use debug, info, warn or error", o.LogLevel)
	}
	return level, nil
}

// Errors Run returns after the report was printed, when the exit status must say more than "done".
var (
	// ErrIncomplete means a stage or an action failed; the report says which.
	ErrIncomplete = errors.New("sweep incomplete")
	// ErrFindings means findings are present and --fail-on-findings is set.
	ErrFindings = errors.New("findings present")
)
