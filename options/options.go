// Package options turns a command line into what the packages read: option groups, each with its
// flags (AddFlags), its checks (Validate) and the config it fills (ApplyTo), as
// kube-controller-manager's option groups do. A command binds the groups it takes, and only
// those; the --config file, shared by every command, holds them all.
package options

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	rbacv1 "k8s.io/api/rbac/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/operator-sweeper/operator-sweeper/input"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// ConfigAPIVersion and ConfigKind identify a --config file; both are optional in the file.
const (
	ConfigAPIVersion = "sweeper.operator-sweeper.io/v1alpha1"
	ConfigKind       = "SweeperConfig"
)

// FlagConfig names the config file; every command takes it.
const FlagConfig = "config"

// Group is a group of options: its flags and the problems of its values.
type Group interface {
	// AddFlags binds the group's flags to fs; the defaults shown are the group's current values.
	AddFlags(fs *pflag.FlagSet)
	// Validate returns every problem of the group's values, each naming its flag.
	Validate() []error
}

// EnvGroup is a group that also reads the environment, which overrides the config file; a flag
// overrides the environment (fs says which flags were given).
type EnvGroup interface {
	Group
	ApplyEnv(fs *pflag.FlagSet) error
}

// Options are every group of options. The config file uses the flag names as keys, so a flag and
// its key always mean the same thing; flags override the file.
type Options struct {
	// ConfigFile is the --config file these options were read from, if any.
	ConfigFile string `json:"-"`
	// Version is the sweeper's version, stamped into the binary at build time.
	Version string `json:"-"`

	ClientOptions `json:",inline"`
	LogOptions    `json:",inline"`
	WalkOptions   `json:",inline"`
	RuleOptions   `json:",inline"`
	LimitOptions  `json:",inline"`
	DryRunOptions `json:",inline"`
	BackupOptions `json:",inline"`
	StateOptions  `json:",inline"`
	OutputOptions `json:",inline"`
	PushOptions   `json:",inline"`
	NotifyOptions `json:",inline"`
	FleetOptions  `json:",inline"`
	// DrainOptions are preflight's alone.
	DrainOptions `json:",inline"`
}

// Default returns the options of a run without flags or config file.
func Default() Options {
	return Options{
		ClientOptions: defaultClientOptions(),
		LogOptions:    defaultLogOptions(),
		WalkOptions:   defaultWalkOptions(),
		RuleOptions:   defaultRuleOptions(),
		LimitOptions:  defaultLimitOptions(),
		DryRunOptions: defaultDryRunOptions(),
		BackupOptions: defaultBackupOptions(),
		OutputOptions: defaultOutputOptions(),
		PushOptions:   defaultPushOptions(),
		NotifyOptions: defaultNotifyOptions(),
		DrainOptions:  defaultDrainOptions(),
		FleetOptions:  defaultFleetOptions(),
	}
}

// Groups are every group, in the order a sweep lists and checks them: what a run does and prints
// first.
func (o *Options) Groups() []Group {
	return []Group{&o.DryRunOptions, &o.OutputOptions, &o.LimitOptions, &o.ClientOptions, &o.FleetOptions, &o.WalkOptions, &o.RuleOptions,
		&o.BackupOptions, &o.StateOptions, &o.LogOptions, &o.PushOptions, &o.NotifyOptions}
}

// AddFlags binds every group's flags to fs: a sweep's command line.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	for _, g := range o.Groups() {
		g.AddFlags(fs)
	}
}

// Validate checks every group, and returns an input.Error that names every problem, one line each.
func (o *Options) Validate() error { return Validate(o.Groups()...) }

// Validate checks groups, and returns an input.Error that names every problem, one line each.
func Validate(groups ...Group) error {
	var errs []error
	for _, g := range groups {
		errs = append(errs, g.Validate()...)
	}
	if err := errors.Join(errs...); err != nil {
		return &input.Error{Err: err}
	}
	return nil
}

// RuleSet returns the enabled rules, built from their config and settings (see
// RuleOptions.RuleSet).
func (o Options) RuleSet() ([]rules.Rule, error) { return o.RuleOptions.RuleSet(o.MinAge.Duration) }

// EngineConfig is what a sweep with these options reads.
func (o Options) EngineConfig() sweeper.Config {
	cfg := sweeper.Config{Cluster: o.Cluster, Version: o.Version, DryRun: o.DryRun}
	o.WalkOptions.ApplyTo(&cfg)
	o.LimitOptions.ApplyTo(&cfg)
	o.BackupOptions.ApplyTo(&cfg)
	o.StateOptions.ApplyTo(&cfg)
	return cfg
}

// ExplainConfig is what explain reads of a sweep's config: it walks and limits as a sweep would,
// and writes nothing.
func (o Options) ExplainConfig() sweeper.Config {
	cfg := sweeper.Config{Cluster: o.Cluster, Version: o.Version, DryRun: report.DryRunClient}
	o.WalkOptions.ApplyTo(&cfg)
	o.LimitOptions.ApplyTo(&cfg)
	return cfg
}

// PreflightConfig is what a preflight's sweep reads: a sweep's config, but that a drain deletes
// all it finds, young or not (though never in a protected namespace), and walks the whole cluster:
// what an uninstall leaves blocked may be anywhere, and another instance of the operator too, so
// the walk's filters and shard (a CronJob's config file has some) would hide them. ignored is the
// sweep's config when the options set any of those, for a warning that names them; else nil.
func (o Options) PreflightConfig() (cfg sweeper.Config, ignored *sweeper.Config) {
	cfg = o.EngineConfig()
	if len(cfg.IncludeResources)+len(cfg.ExcludeResources)+len(cfg.IncludeNamespaces)+len(cfg.ExcludeNamespaces) > 0 || cfg.Shard.Count > 0 {
		sweep := cfg
		ignored = &sweep
	}
	cfg.MaxActions, cfg.MinAge = 0, 0
	cfg.IncludeResources, cfg.ExcludeResources, cfg.IncludeNamespaces, cfg.ExcludeNamespaces, cfg.Shard = nil, nil, nil, nil, sweeper.Shard{}
	return cfg, ignored
}

// ClientConfig is how the clients of a run with these options talk to the API server.
func (o Options) ClientConfig() sweeper.ClientConfig {
	cfg := sweeper.ClientConfig{Version: o.Version}
	o.ClientOptions.ApplyTo(&cfg)
	return cfg
}

// PolicyRules are what a sweep with these options needs beyond the walk (see
// sweeper.PolicyRules).
func (o Options) PolicyRules() ([]rbacv1.PolicyRule, error) {
	ruleSet, err := o.RuleSet()
	if err != nil {
		return nil, err
	}
	return sweeper.PolicyRules(ruleSet, o.DryRun), nil
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
		return base, input.Errorf("config file %s: %w", file, err)
	}
	if string(jsonData) == "null" { // comments only
		return base, input.Errorf("config file %s is empty: set at least one option in it, or leave out --%s", file, FlagConfig)
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
		for _, p := range input.Problems(err) {
			cleaned = append(cleaned, decodeError{p})
		}
		return base, &input.Error{Err: input.Prefixed("config file "+file+": ", errors.Join(cleaned...))}
	}
	if cfg.APIVersion != "" && cfg.APIVersion != ConfigAPIVersion {
		return base, input.Errorf("config file %s: apiVersion %q is not supported, use %s", file, cfg.APIVersion, ConfigAPIVersion)
	}
	if cfg.Kind != "" && cfg.Kind != ConfigKind {
		return base, input.Errorf("config file %s: kind %q is not supported, use %s", file, cfg.Kind, ConfigKind)
	}
	base.ConfigFile = file
	return base, nil
}

// readConfigFile reads file, refusing a directory, an empty file and one larger than
// maxConfigFileSize, which it does not read further.
func readConfigFile(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, input.Errorf("--%s: %w", FlagConfig, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, input.Errorf("--%s: %w", FlagConfig, err)
	}
	if info.IsDir() {
		return nil, input.Errorf("--%s %s is a directory: give the config file's path", FlagConfig, file)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigFileSize+1))
	switch {
	case err != nil:
		return nil, input.Errorf("--%s: read %s: %w", FlagConfig, file, err)
	case len(data) > maxConfigFileSize:
		return nil, input.Errorf("config file %s is larger than the limit of %d MiB for a config file: is it the right file?", file, maxConfigFileSize>>20)
	case len(bytes.TrimSpace(data)) == 0:
		return nil, input.Errorf("config file %s is empty: set at least one option in it, or leave out --%s", file, FlagConfig)
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
		scratch := Default()
		kerr := json.Unmarshal(one, &configFile{Options: &scratch})
		var typeErr *json.UnmarshalTypeError
		switch {
		case kerr == nil:
			continue
		case errors.As(kerr, &typeErr):
			at := cmp.Or(keyPath(typeErr.Field), key)
			return valueError{at: at, problem: "got " + jsonKind(typeErr.Value) + ", want " + goKind(typeErr.Type), err: err}
		default:
			return fmt.Errorf("%s: %w", key, kerr)
		}
	}
	return err
}

// keyPath is the config file's path of a field the decoder names by its Go path: without the
// groups it is promoted from ("WalkOptions.concurrency" is "concurrency").
func keyPath(field string) string {
	for {
		group, rest, ok := strings.Cut(field, ".")
		if !ok || !strings.HasSuffix(group, "Options") {
			return field
		}
		field = rest
	}
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
		errs = append(errs, fmt.Errorf("unknown field %q: the rules are %s", "rules."+name, strings.Join(RuleNames(), ", ")))
	}
	return errors.Join(errs...)
}
