// Package sweeper is operator-sweeper's engine: one run walks the cluster, lets the rules plan,
// limits and applies their actions, and reports what happened.
//
//	options ─► clients ─► inventory ─► observe ─► plan ─► limit ─► apply ─► report
package sweeper

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// OutputHTML is one self-contained page, with filters.
	OutputHTML OutputFormat = "html"
)

// ConfigAPIVersion and ConfigKind identify a --config file; both are optional in the file.
const (
	ConfigAPIVersion = "sweeper.operator-sweeper.io/v1alpha1"
	ConfigKind       = "SweeperConfig"
)

// Flag names. A flag's config key is its name; messages name the flag with these.
const (
	FlagKubeconfig          = "kubeconfig"
	FlagContext             = "context"
	FlagConfig              = "config"
	FlagCluster             = "cluster"
	FlagDryRun              = "dry-run"
	FlagOutput              = "output"
	FlagReportFile          = "report-file"
	FlagRules               = "rules"
	FlagMaxActions          = "max-actions"
	FlagQPS                 = "qps"
	FlagBurst               = "burst"
	FlagConcurrency         = "concurrency"
	FlagPageSize            = "page-size"
	FlagTimeout             = "timeout"
	FlagRequestTimeout      = "request-timeout"
	FlagIncludeResources    = "include-resources"
	FlagExcludeResources    = "exclude-resources"
	FlagIncludeNamespaces   = "include-namespaces"
	FlagExcludeNamespaces   = "exclude-namespaces"
	FlagProtectedNamespaces = "protected-namespaces"
	FlagMinTerminatingAge   = "min-terminating-age"
	FlagMinAge              = "min-age"
	FlagCatalogPodSlack     = "catalog-pod-slack"
	FlagNodeNotReadyFor     = "node-not-ready-for"
	FlagUnhealthyZone       = "unhealthy-zone-threshold"
	FlagLogFormat           = "log-format"
	FlagLogLevel            = "log-level"
	FlagFailOnFindings      = "fail-on-findings"
	FlagShard               = "shard"
	FlagBackupDir           = "backup-dir"
	FlagBackupRetention     = "backup-retention"
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
	// RuleConfigs are the rules' sections of the config file ("rules.<name>"), by rule name.
	RuleConfigs map[string]rules.RuleConfig `json:"-"`
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
	// RequestTimeout bounds each attempt of a request to the API server; a read that times out
	// is tried again, within Timeout.
	RequestTimeout metav1.Duration `json:"request-timeout"`
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
	// MinAge is how old an object must be before it is deleted or its ownerReferences changed;
	// nothing created after the sweep began is, whatever MinAge says.
	MinAge metav1.Duration `json:"min-age"`
	// CatalogPodSlack is how long past its grace period a CatalogSource pod must be before it is
	// force-deleted from a lost node.
	CatalogPodSlack metav1.Duration `json:"catalog-pod-slack"`
	// NodeNotReadyFor is how long a node must have been not Ready for its pods to count as lost.
	NodeNotReadyFor metav1.Duration `json:"node-not-ready-for"`
	// UnhealthyZoneThreshold is the fraction of a zone's nodes not Ready (more than two) from
	// which nothing is force-deleted in that zone, as kube-controller-manager's flag of that name.
	UnhealthyZoneThreshold float64 `json:"unhealthy-zone-threshold"`
	// LogFormat is text or json; LogLevel is debug, info, warn or error.
	LogFormat string `json:"log-format,omitempty"`
	LogLevel  string `json:"log-level,omitempty"`
	// FailOnFindings makes a run with findings exit 3.
	FailOnFindings bool `json:"fail-on-findings"`
	// Shard is "i/n": this run is shard i of a sweep split across n processes (see Shard); empty
	// means the whole sweep.
	Shard string `json:"shard,omitempty"`
	// BackupDir, if set, receives the pre-image of each object before it is written, one file
	// per object in a directory per run, synced before the write; a write whose pre-image cannot
	// be kept is not sent.
	BackupDir string `json:"backup-dir,omitempty"`
	// BackupRetention is how long the files in BackupDir are kept: older ones are removed at the
	// start of each run. It takes days ("30d") as well as Go durations.
	BackupRetention model.Duration `json:"backup-retention"`

	// PushOptions say where and how the run's metrics are pushed.
	PushOptions `json:",inline"`
	// NotifyOptions say whether, where and how the run is notified to a webhook.
	NotifyOptions `json:",inline"`
}

// DefaultOptions returns the options of a run without flags or config file.
func DefaultOptions() Options {
	return Options{
		DryRun:     DryRunClient,
		Output:     OutputTable,
		Rules:      []string{"*"},
		MaxActions: 100,
		// High enough not to throttle a sweep: --concurrency bounds the lists in flight, and the
		// server's API Priority and Fairness protects it; client-side throttling only made a
		// sweep slower than listing the cluster (make bench).
		QPS:                    1000,
		Burst:                  2000,
		Concurrency:            8,
		PageSize:               500,
		Timeout:                metav1.Duration{Duration: 10 * time.Minute},
		RequestTimeout:         metav1.Duration{Duration: time.Minute},
		ProtectedNamespaces:    []string{"kube-system", "kube-public", "kube-node-lease"},
		MinTerminatingAge:      metav1.Duration{Duration: 15 * time.Minute},
		MinAge:                 metav1.Duration{Duration: 10 * time.Minute},
		UnhealthyZoneThreshold: 0.55,
		CatalogPodSlack:        metav1.Duration{Duration: time.Minute},
		NodeNotReadyFor:        metav1.Duration{Duration: 5 * time.Minute},
		BackupRetention:        model.Duration(30 * 24 * time.Hour),
		LogFormat:              "text",
		LogLevel:               "info",
		PushOptions:            PushOptions{PushgatewayTimeout: metav1.Duration{Duration: 10 * time.Second}},
		NotifyOptions:          defaultNotifyOptions(),
	}
}

// AddFlags binds every option that has a flag to fs; the defaults shown are o's current values.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, FlagKubeconfig, o.Kubeconfig, "Path to the kubeconfig file (default: $KUBECONFIG, in-cluster, then ~/.kube/config).")
	fs.StringVar(&o.Context, FlagContext, o.Context, "The kubeconfig context to use (default: the current context).")
	fs.StringVar(&o.ConfigFile, FlagConfig, o.ConfigFile, "YAML config file; its keys are these flag names, plus \"rules\". Flags override it.")
	fs.StringVar(&o.Cluster, FlagCluster, o.Cluster, "Cluster name in the report (default: the kubeconfig context, or \"in-cluster\").")
	fs.StringVar((*string)(&o.DryRun), FlagDryRun, string(o.DryRun), "client: plan and report, write nothing; server: send writes with dryRun=All; none: apply.")
	fs.StringVarP((*string)(&o.Output), FlagOutput, "o", string(o.Output), "Report format: table, json, yaml, markdown or html.")
	fs.StringVar(&o.ReportFile, FlagReportFile, o.ReportFile, "Also write the report as JSON to this file.")
	fs.StringSliceVar(&o.Rules, FlagRules, o.Rules, "Rules to run: \"*\" is every enabled rule, \"foo\" enables foo, \"-foo\" disables foo.")
	fs.IntVar(&o.MaxActions, FlagMaxActions, o.MaxActions, "At most this many actions per run; the rest are skipped (reason limit). 0: no cap.")
	fs.Float32Var(&o.QPS, FlagQPS, o.QPS, "Queries per second to the API server.")
	fs.IntVar(&o.Burst, FlagBurst, o.Burst, "Burst of queries to the API server.")
	fs.IntVar(&o.Concurrency, FlagConcurrency, o.Concurrency, "Lists running in parallel.")
	fs.Int64Var(&o.PageSize, FlagPageSize, o.PageSize, "Objects per list request (limit/continue paging).")
	fs.DurationVar(&o.Timeout.Duration, FlagTimeout, o.Timeout.Duration, "Bound on the whole run; 0: none.")
	fs.DurationVar(&o.RequestTimeout.Duration, FlagRequestTimeout, o.RequestTimeout.Duration, "Bound on each attempt of a request to the API server; reads that time out are tried again.")
	fs.StringSliceVar(&o.IncludeResources, FlagIncludeResources, o.IncludeResources, "Only walk these resources: \"pods\" (any group), \"deployments.apps\", \"*.operators.coreos.com\".")
	fs.StringSliceVar(&o.ExcludeResources, FlagExcludeResources, o.ExcludeResources, "Never walk these resources (same patterns as --include-resources).")
	fs.StringSliceVar(&o.IncludeNamespaces, FlagIncludeNamespaces, o.IncludeNamespaces, "Only walk these namespaces (names or globs); cluster-scoped resources are still walked.")
	fs.StringSliceVar(&o.ExcludeNamespaces, FlagExcludeNamespaces, o.ExcludeNamespaces, "Never walk these namespaces (names or globs).")
	fs.StringSliceVar(&o.ProtectedNamespaces, FlagProtectedNamespaces, o.ProtectedNamespaces, "Report, but never act, in these namespaces (names or globs).")
	fs.DurationVar(&o.MinTerminatingAge.Duration, FlagMinTerminatingAge, o.MinTerminatingAge.Duration, "How long an object must have been terminating to count as stuck.")
	fs.DurationVar(&o.MinAge.Duration, FlagMinAge, o.MinAge.Duration, "Never delete or re-own an object younger than this (nor one created after the sweep began).")
	fs.DurationVar(&o.CatalogPodSlack.Duration, FlagCatalogPodSlack, o.CatalogPodSlack.Duration, "How long past its grace period a CatalogSource pod on a lost node must be before it is force-deleted.")
	fs.DurationVar(&o.NodeNotReadyFor.Duration, FlagNodeNotReadyFor, o.NodeNotReadyFor.Duration, "How long a node must have been not Ready for its CatalogSource pods to count as lost.")
	fs.Float64Var(&o.UnhealthyZoneThreshold, FlagUnhealthyZone, o.UnhealthyZoneThreshold, "Fraction of a zone's nodes not Ready (more than two) from which nothing is force-deleted in it.")
	fs.StringVar(&o.LogFormat, FlagLogFormat, o.LogFormat, "Log format on standard error: text or json.")
	fs.StringVar(&o.LogLevel, FlagLogLevel, o.LogLevel, "Log level: debug, info, warn or error.")
	fs.BoolVar(&o.FailOnFindings, FlagFailOnFindings, o.FailOnFindings, "Exit 3 when there are findings.")
	fs.StringVar(&o.Shard, FlagShard, o.Shard, "i/n: sweep shard i of n, in an Indexed Job (default: $JOB_COMPLETION_INDEX/$JOB_COMPLETIONS if both are set, else the whole cluster).")
	fs.StringVar(&o.BackupDir, FlagBackupDir, o.BackupDir, "Keep the pre-image of each object written in this directory, synced before the write; a write whose pre-image cannot be kept is not sent.")
	fs.Var((*retention)(&o.BackupRetention), FlagBackupRetention, "Remove files in --backup-dir older than this at the start of a run (30d, 12h).")
	o.PushOptions.AddFlags(fs)
	o.NotifyOptions.AddFlags(fs)
}

// InputError is bad input from the user: a flag, the config file or the kubeconfig. Its message
// names each problem on a line of its own; the CLI exits 2 on it.
type InputError struct {
	Err error
}

// Error returns one line per problem, whatever the libraries underneath put in them.
func (e *InputError) Error() string {
	var lines []string
	for _, p := range problems(e.Err) {
		lines = append(lines, strings.Join(strings.Fields(p.Error()), " "))
	}
	return strings.Join(lines, "\n")
}

// problems are the errors joined in err (errors.Join), at any depth; err itself if it joins none.
func problems(err error) []error {
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var all []error
	for _, e := range joined.Unwrap() {
		all = append(all, problems(e)...)
	}
	return all
}

// prefixed puts prefix before each problem of err; nil stays nil.
func prefixed(prefix string, err error) error {
	if err == nil {
		return nil
	}
	var errs []error
	for _, p := range problems(err) {
		errs = append(errs, fmt.Errorf("%s%w", prefix, p))
	}
	return errors.Join(errs...)
}

func (e *InputError) Unwrap() error { return e.Err }

func inputErrorf(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
}

// configFile is the schema of --config: the options, keyed by flag name, the rules' sections,
// and an optional apiVersion and kind.
type configFile struct {
	APIVersion string                     `json:"apiVersion,omitempty"`
	Kind       string                     `json:"kind,omitempty"`
	Rules      map[string]json.RawMessage `json:"rules,omitempty"`
	*Options   `json:",inline"`
}

// maxConfigFileSize bounds a --config file. A config file is a screen or two of YAML; anything
// larger is a wrong path (a log, an image, a device) that would otherwise be read and parsed whole.
const maxConfigFileSize = 1 << 20

// LoadConfigFile reads a config file on top of base. Decoding is strict: an unknown or duplicate
// key is an error, so a typo never silently falls back to a default. Every problem is named with
// the file and the key.
func LoadConfigFile(file string, base Options) (Options, error) {
	data, err := readConfigFile(file)
	if err != nil {
		return base, err
	}
	// YAMLToJSONStrict refuses duplicate keys; sigs.k8s.io/json names unknown keys by their full
	// path ("rules.stuck-terminating.enable"), as the API server does.
	jsonData, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return base, inputErrorf("config file %s: %w", file, err)
	}
	if string(jsonData) == "null" { // comments only
		return base, inputErrorf("config file %s is empty: set at least one option in it, or leave out --%s", file, FlagConfig)
	}
	cfg := configFile{Options: &base}
	strict, err := sigsjson.UnmarshalStrict(jsonData, &cfg)
	var errs []error
	switch {
	case err != nil:
		errs = append(errs, undecodableKey(jsonData, err))
	case len(strict) > 0:
		errs = strict
	default:
		errs = append(errs, decodeRuleConfigs(cfg.Rules, &base))
	}
	if err := errors.Join(errs...); err != nil {
		var cleaned []error
		for _, p := range problems(err) {
			cleaned = append(cleaned, decodeError{p})
		}
		return base, &InputError{Err: prefixed("config file "+file+": ", errors.Join(cleaned...))}
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

// readConfigFile reads file, refusing a directory, an empty file and one larger than
// maxConfigFileSize, which it does not read further.
func readConfigFile(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, inputErrorf("--%s: %w", FlagConfig, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, inputErrorf("--%s: %w", FlagConfig, err)
	}
	if info.IsDir() {
		return nil, inputErrorf("--%s %s is a directory: give the config file's path", FlagConfig, file)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigFileSize+1))
	switch {
	case err != nil:
		return nil, inputErrorf("--%s: read %s: %w", FlagConfig, file, err)
	case len(data) > maxConfigFileSize:
		return nil, inputErrorf("config file %s is larger than the limit of %d MiB for a config file: is it the right file?", file, maxConfigFileSize>>20)
	case len(bytes.TrimSpace(data)) == 0:
		return nil, inputErrorf("config file %s is empty: set at least one option in it, or leave out --%s", file, FlagConfig)
	}
	return data, nil
}

// undecodableKey names the key whose value failed to decode, and what it should be: the decoder
// names a Go struct field at best ("configFile.Options.qps"), and a bad duration not at all. It
// decodes the keys one by one, with encoding/json for its typed errors.
func undecodableKey(jsonData []byte, err error) error {
	var keys map[string]json.RawMessage
	if kerr := json.Unmarshal(jsonData, &keys); kerr != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(kerr, &typeErr) {
			return valueError{problem: "got " + jsonKind(typeErr.Value) + `, want a mapping of options such as "dry-run: none"`, err: err}
		}
		return err
	}
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		one, merr := json.Marshal(map[string]json.RawMessage{key: keys[key]})
		if merr != nil {
			return merr
		}
		scratch := DefaultOptions()
		kerr := json.Unmarshal(one, &configFile{Options: &scratch})
		var typeErr *json.UnmarshalTypeError
		switch {
		case kerr == nil:
			continue
		case errors.As(kerr, &typeErr):
			at := cmp.Or(strings.TrimPrefix(typeErr.Field, "Options."), key)
			return valueError{at: at, problem: "got " + jsonKind(typeErr.Value) + ", want " + goKind(typeErr.Type), err: err}
		default:
			return fmt.Errorf("%s: %w", key, kerr)
		}
	}
	return err
}

// jsonKind says what the decoder's description of a JSON value ("array", "number -5") is, in the
// words of YAML.
func jsonKind(value string) string {
	kind, _, _ := strings.Cut(value, " ")
	switch kind {
	case "array":
		return "a list"
	case "object":
		return "a mapping"
	case "bool":
		return "true or false"
	case "number", "string":
		return "a " + value
	}
	return value
}

// goKind says what a YAML value for a field of type t must be.
func goKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return t.String()
}

// valueError is a value of the config file that does not decode: at which key, if any, and why, in
// words; err is the decoder's error.
type valueError struct {
	at, problem string
	err         error
}

func (e valueError) Error() string {
	if e.at == "" {
		return e.problem
	}
	return e.at + ": " + e.problem
}

func (e valueError) Unwrap() error { return e.err }

// decodeError is a decoding error without the decoder's "json: " prefix, which means nothing to
// whoever wrote YAML.
type decodeError struct{ err error }

func (e decodeError) Error() string { return strings.TrimPrefix(e.err.Error(), "json: ") }

func (e decodeError) Unwrap() error { return e.err }

// decodeRuleConfigs decodes the "rules" section: one entry per rule, each decoded by its
// registration, strictly.
func decodeRuleConfigs(sections map[string]json.RawMessage, o *Options) error {
	for _, reg := range rules.Registry() {
		section, ok := sections[reg.Name]
		if !ok {
			continue
		}
		delete(sections, reg.Name)
		cfg, err := reg.DecodeConfig(section)
		if err != nil {
			return err
		}
		if o.RuleConfigs == nil {
			o.RuleConfigs = map[string]rules.RuleConfig{}
		}
		o.RuleConfigs[reg.Name] = cfg
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(sections)) {
		errs = append(errs, fmt.Errorf("unknown field %q: the rules are %s", "rules."+name, strings.Join(ruleNames(), ", ")))
	}
	return errors.Join(errs...)
}

// Validate checks the options and returns an InputError that names every problem, one line each.
func (o Options) Validate() error {
	errs := o.validateValues()
	errs = append(errs, o.validatePatterns()...)
	if len(o.ProtectedNamespaces) == 0 {
		// An empty list (--protected-namespaces=, or [] in the file) is more likely a slip than a
		// wish to let actions reach kube-system.
		errs = append(errs, fmt.Errorf("--%s is empty: name the namespaces no action may reach (default %s)",
			FlagProtectedNamespaces, strings.Join(DefaultOptions().ProtectedNamespaces, ",")))
	}
	if o.ReportFile != "" {
		if info, err := os.Stat(filepath.Dir(o.ReportFile)); err != nil || !info.IsDir() {
			errs = append(errs, fmt.Errorf("--%s %s: its directory does not exist", FlagReportFile, o.ReportFile))
		}
	}
	if o.BackupDir != "" {
		if info, err := os.Stat(o.BackupDir); err != nil || !info.IsDir() {
			errs = append(errs, fmt.Errorf("--%s %s is not a directory: create it (a volume mounted there, in a cluster) or leave the flag out", FlagBackupDir, o.BackupDir))
		}
	}
	errs = append(errs, o.PushOptions.Validate()...)
	errs = append(errs, o.NotifyOptions.Validate()...)
	if _, err := o.RuleSet(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return &InputError{Err: err}
	}
	return nil
}

// validateValues checks the options that take one of a few words, or a number in a range.
func (o Options) validateValues() []error {
	var errs []error
	invalid := func(flag string, value any, want string) {
		errs = append(errs, fmt.Errorf("--%s %v is invalid: %s", flag, value, want))
	}
	if !slices.Contains([]DryRunMode{DryRunClient, DryRunServer, DryRunNone}, o.DryRun) {
		invalid(FlagDryRun, fmt.Sprintf("%q", o.DryRun), "use client, server or none")
	}
	if !slices.Contains([]OutputFormat{OutputTable, OutputJSON, OutputYAML, OutputMarkdown, OutputHTML}, o.Output) {
		invalid(FlagOutput, fmt.Sprintf("%q", o.Output), "use table, json, yaml, markdown or html")
	}
	if !slices.Contains([]string{"text", "json"}, o.LogFormat) {
		invalid(FlagLogFormat, fmt.Sprintf("%q", o.LogFormat), "use text or json")
	}
	if _, err := o.logLevel(); err != nil {
		errs = append(errs, err)
	}
	if o.MaxActions < 0 {
		invalid(FlagMaxActions, o.MaxActions, "use 0 (no cap) or a positive number")
	}
	if o.QPS <= 0 {
		invalid(FlagQPS, o.QPS, "it must be positive")
	}
	for _, n := range []struct {
		flag  string
		value int64
	}{{FlagBurst, int64(o.Burst)}, {FlagConcurrency, int64(o.Concurrency)}, {FlagPageSize, o.PageSize}} {
		if n.value < 1 {
			invalid(n.flag, n.value, "it must be at least 1")
		}
	}
	if o.Timeout.Duration < 0 {
		invalid(FlagTimeout, o.Timeout.Duration, "use 0 (no timeout) or a positive duration")
	}
	if o.RequestTimeout.Duration <= 0 {
		invalid(FlagRequestTimeout, o.RequestTimeout.Duration, "it must be positive")
	}
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{{FlagMinTerminatingAge, o.MinTerminatingAge.Duration}, {FlagMinAge, o.MinAge.Duration}, {FlagCatalogPodSlack, o.CatalogPodSlack.Duration},
		{FlagNodeNotReadyFor, o.NodeNotReadyFor.Duration}} {
		if d.value < 0 {
			invalid(d.flag, d.value, "it must not be negative")
		}
	}
	if o.BackupRetention <= 0 {
		invalid(FlagBackupRetention, o.BackupRetention, "it must be positive, such as 30d")
	}
	if o.Shard != "" {
		if _, err := ParseShard(o.Shard); err != nil {
			errs = append(errs, fmt.Errorf("--%s %w", FlagShard, err))
		}
	}
	if !(o.UnhealthyZoneThreshold > 0 && o.UnhealthyZoneThreshold <= 1) { // NaN too
		invalid(FlagUnhealthyZone, o.UnhealthyZoneThreshold, "use a fraction above 0 and at most 1")
	}
	return errs
}

func (o Options) validatePatterns() []error {
	var errs []error
	for _, list := range []struct {
		flag     string
		patterns []string
	}{
		{FlagIncludeResources, o.IncludeResources},
		{FlagExcludeResources, o.ExcludeResources},
		{FlagIncludeNamespaces, o.IncludeNamespaces},
		{FlagExcludeNamespaces, o.ExcludeNamespaces},
		{FlagProtectedNamespaces, o.ProtectedNamespaces},
	} {
		for _, p := range list.patterns {
			if _, err := path.Match(p, ""); err != nil || p == "" {
				errs = append(errs, fmt.Errorf("--%s: pattern %q is invalid: use a name or a glob such as \"*.operators.coreos.com\"", list.flag, p))
			}
		}
	}
	return errs
}

func (o Options) logLevel() (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.LogLevel)); err != nil {
		return level, fmt.Errorf("--%s %q is invalid: use debug, info, warn or error", FlagLogLevel, o.LogLevel)
	}
	return level, nil
}

// shard is the part of the sweep this run does; Validate has checked Shard.
func (o Options) shard() Shard {
	if o.Shard == "" {
		return Shard{Index: 0, Count: 1}
	}
	s, _ := ParseShard(o.Shard)
	return s
}

// retention is a flag of a duration that takes days ("30d"), as Prometheus' durations do.
type retention model.Duration

func (r *retention) String() string { return model.Duration(*r).String() }

func (r *retention) Set(s string) error {
	d, err := model.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("use a duration such as 30d or 12h: %w", err)
	}
	*r = retention(d)
	return nil
}

func (r *retention) Type() string { return "duration" }

// Errors Run returns after the report was printed, when the exit status must say more than "done".
var (
	// ErrIncomplete means a stage or an action failed; the report says which.
	ErrIncomplete = errors.New("sweep incomplete")
	// ErrFindings means findings are present and --fail-on-findings is set.
	ErrFindings = errors.New("findings present")
)
