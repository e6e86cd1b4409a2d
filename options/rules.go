package options

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-sweeper/operator-sweeper/input"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// The rules group's flags. Their sections of the config file (rules.<name>, finalizers) have no
// flag.
const (
	FlagRules             = "rules"
	FlagMinTerminatingAge = "min-terminating-age"
	FlagCatalogPodSlack   = "catalog-pod-slack"
	FlagNodeNotReadyFor   = "node-not-ready-for"
	FlagUnhealthyZone     = "unhealthy-zone-threshold"
	FlagHelmSQLStorage    = "helm-sql-storage"
)

// RuleOptions say which rules run and what they are told.
type RuleOptions struct {
	// Rules enables and disables rules by name: "*" is every rule enabled by the config file,
	// "foo" enables foo, "-foo" disables it. Without "*", only the named rules run.
	Rules []string `json:"-"`
	// RuleConfigs are the rules' sections of the config file ("rules.<name>"), by rule name.
	RuleConfigs map[string]rules.RuleConfig `json:"-"`
	// Finalizers maps finalizers to the controllers that remove them; they come before the
	// shipped defaults (rules.DefaultFinalizerOwners) and replace those of the same pattern.
	Finalizers []rules.FinalizerOwner `json:"finalizers,omitempty"`
	// MinTerminatingAge is how long an object must have been terminating before rules consider it stuck.
	MinTerminatingAge metav1.Duration `json:"min-terminating-age"`
	// CatalogPodSlack is how long past its grace period a CatalogSource pod must be before it is
	// force-deleted from a lost node.
	CatalogPodSlack metav1.Duration `json:"catalog-pod-slack"`
	// NodeNotReadyFor is how long a node must have been not Ready for its pods to count as lost.
	NodeNotReadyFor metav1.Duration `json:"node-not-ready-for"`
	// UnhealthyZoneThreshold is the fraction of a zone's nodes not Ready (more than two) from
	// which nothing is force-deleted in that zone, as kube-controller-manager's flag of that name.
	UnhealthyZoneThreshold float64 `json:"unhealthy-zone-threshold"`
	// HelmSQLStorage says some Helm releases are kept in SQL, which the sweeper cannot read: a
	// release without a record in Secrets or ConfigMaps is then undecided, not uninstalled.
	HelmSQLStorage bool `json:"helm-sql-storage,omitempty"`
}

func defaultRuleOptions() RuleOptions {
	return RuleOptions{
		Rules:                  []string{"*"},
		MinTerminatingAge:      metav1.Duration{Duration: 15 * time.Minute},
		CatalogPodSlack:        metav1.Duration{Duration: time.Minute},
		NodeNotReadyFor:        metav1.Duration{Duration: 5 * time.Minute},
		UnhealthyZoneThreshold: 0.55,
	}
}

// AddFlags binds the group's flags to o; the defaults shown are o's current values.
func (o *RuleOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Rules, FlagRules, o.Rules, "Rules to run: \"*\" is every enabled rule, \"foo\" enables foo, \"-foo\" disables foo.")
	fs.DurationVar(&o.MinTerminatingAge.Duration, FlagMinTerminatingAge, o.MinTerminatingAge.Duration, "How long an object must have been terminating to count as stuck.")
	fs.DurationVar(&o.CatalogPodSlack.Duration, FlagCatalogPodSlack, o.CatalogPodSlack.Duration, "How long past its grace period a CatalogSource pod on a lost node must be before it is force-deleted.")
	fs.DurationVar(&o.NodeNotReadyFor.Duration, FlagNodeNotReadyFor, o.NodeNotReadyFor.Duration, "How long a node must have been not Ready for its CatalogSource pods to count as lost.")
	fs.Float64Var(&o.UnhealthyZoneThreshold, FlagUnhealthyZone, o.UnhealthyZoneThreshold, "Fraction of a zone's nodes not Ready (more than two) from which nothing is force-deleted in it.")
	fs.BoolVar(&o.HelmSQLStorage, FlagHelmSQLStorage, o.HelmSQLStorage, "Some Helm releases are kept in SQL, which the sweeper cannot read: a release without records in Secrets or ConfigMaps is undecided.")
}

// Validate returns every problem of the group: its values, and what building the rules finds.
func (o *RuleOptions) Validate() []error {
	var errs []error
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{{FlagMinTerminatingAge, o.MinTerminatingAge.Duration}, {FlagCatalogPodSlack, o.CatalogPodSlack.Duration}, {FlagNodeNotReadyFor, o.NodeNotReadyFor.Duration}} {
		if d.value < 0 {
			errs = append(errs, invalid(d.flag, d.value, "it must not be negative"))
		}
	}
	if !(o.UnhealthyZoneThreshold > 0 && o.UnhealthyZoneThreshold <= 1) { // NaN too
		errs = append(errs, invalid(FlagUnhealthyZone, o.UnhealthyZoneThreshold, "use a fraction above 0 and at most 1"))
	}
	if _, err := o.RuleSet(0); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// RuleSet returns the rules this run uses, built from their config, in the registry's order,
// which is the order their actions are applied; minAge is --min-age, which rules apply to the
// state of what they read. The error names every problem.
func (o *RuleOptions) RuleSet(minAge time.Duration) ([]rules.Rule, error) {
	enabled, err := o.enabledRules()
	settings, serr := o.Settings(minAge)
	if err := errors.Join(err, serr); err != nil {
		return nil, err
	}
	var set []rules.Rule
	var errs []error
	for _, reg := range rules.Registry() {
		if !enabled[reg.Name] {
			continue
		}
		rule, err := reg.New(o.RuleConfigs[reg.Name].Args, settings)
		if err != nil {
			errs = append(errs, input.Prefixed("config: ", err))
			continue
		}
		set = append(set, rule)
	}
	return set, errors.Join(errs...)
}

// Settings are what every rule is told: the group's values, the finalizer mappings, and minAge.
func (o *RuleOptions) Settings(minAge time.Duration) (rules.Settings, error) {
	mappings, err := rules.NewFinalizerMappings(o.Finalizers)
	if err != nil {
		return rules.Settings{}, input.Prefixed("config: ", err)
	}
	return rules.Settings{
		MinTerminatingAge:      o.MinTerminatingAge.Duration,
		CatalogPodSlack:        o.CatalogPodSlack.Duration,
		NodeNotReadyFor:        o.NodeNotReadyFor.Duration,
		MinAge:                 minAge,
		UnhealthyZoneThreshold: o.UnhealthyZoneThreshold,
		Finalizers:             mappings,
		HelmSQLStorage:         o.HelmSQLStorage || o.orphanedFinalizersSQL(),
	}, nil
}

// enabledRules applies --rules to what the config file enables: "*" keeps every rule the config
// file enables; so does a list of only negations ("-foo"), which would otherwise mean no rule at
// all; a name enables or disables that rule whatever the file says.
func (o *RuleOptions) enabledRules() (map[string]bool, error) {
	names := RuleNames()
	star, positive := false, false
	chosen := map[string]bool{}
	for _, item := range o.Rules {
		item = strings.TrimSpace(item)
		if item == "*" {
			star = true
			continue
		}
		name, disable := strings.CutPrefix(item, "-")
		if !slices.Contains(names, name) {
			return nil, fmt.Errorf("--%s: unknown rule %q; the rules are %s", FlagRules, name, strings.Join(names, ", "))
		}
		chosen[name] = !disable
		positive = positive || !disable
	}
	enabled := make(map[string]bool, len(names))
	for _, name := range names {
		on, ok := chosen[name]
		if !ok {
			toggle := o.RuleConfigs[name].Enabled
			on = (star || !positive) && (toggle == nil || *toggle)
		}
		enabled[name] = on
	}
	return enabled, nil
}

// RuleNames are the names of every rule, in apply order.
func RuleNames() []string {
	var names []string
	for _, reg := range rules.Registry() {
		names = append(names, reg.Name)
	}
	return names
}

// orphanedFinalizersSQL is rules.orphaned-finalizers.helm-sql-storage, the former place of
// helm-sql-storage, which every rule that reads Helm releases now takes.
func (o *RuleOptions) orphanedFinalizersSQL() bool {
	switch args := o.RuleConfigs[rules.OrphanedFinalizersName].Args.(type) {
	case rules.OrphanedFinalizersArgs:
		return args.HelmSQLStorage
	case *rules.OrphanedFinalizersArgs:
		return args != nil && args.HelmSQLStorage
	}
	return false
}
