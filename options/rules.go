package sweeper

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// ruleNames are the names of every rule, in apply order.
func ruleNames() []string {
	var names []string
	for _, reg := range rules.Registry() {
		names = append(names, reg.Name)
	}
	return names
}

// settings are what the options say to every rule.
func (o Options) settings() (rules.Settings, error) {
	mappings, err := rules.NewFinalizerMappings(o.Finalizers)
	if err != nil {
		return rules.Settings{}, prefixed("config: ", err)
	}
	return rules.Settings{
		MinTerminatingAge:      o.MinTerminatingAge.Duration,
		CatalogPodSlack:        o.CatalogPodSlack.Duration,
		NodeNotReadyFor:        o.NodeNotReadyFor.Duration,
		MinAge:                 o.MinAge.Duration,
		UnhealthyZoneThreshold: o.UnhealthyZoneThreshold,
		Finalizers:             mappings,
	}, nil
}

// RuleSet returns the rules this run uses, built from their config, in the registry's order,
// which is the order their actions are applied. The error names every problem.
func (o Options) RuleSet() ([]rules.Rule, error) {
	enabled, err := o.enabledRules()
	settings, serr := o.settings()
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
			errs = append(errs, prefixed("config: ", err))
			continue
		}
		set = append(set, rule)
	}
	return set, errors.Join(errs...)
}

// enabledRules applies --rules to what the config file enables: "*" keeps every rule the config
// file enables; so does a list of only negations ("-foo"), which would otherwise mean no rule at
// all; a name enables or disables that rule whatever the file says.
func (o Options) enabledRules() (map[string]bool, error) {
	names := ruleNames()
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
