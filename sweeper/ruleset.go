package sweeper

import (
	"slices"
	"strings"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// RuleSet returns the rules this run uses, in the order their actions are applied: a rule whose
// actions must come first (RBAC before the finalizer that stood for it) comes first.
func (o Options) RuleSet() ([]rules.Rule, error) {
	owners := rules.MergeFinalizerOwners(o.Finalizers, rules.DefaultFinalizerOwners())
	settings := o.RuleSettings
	builtin := []struct {
		rule   rules.Rule
		toggle RuleToggle
	}{
		{rules.OLMRBAC{Owners: owners, Delete: settings.OLMRBAC.Delete}, settings.OLMRBAC.RuleToggle},
		{rules.OrphanedFinalizers{MinAge: o.MinTerminatingAge.Duration, Owners: owners}, settings.OrphanedFinalizers},
		{rules.InstallPlanOwners{}, settings.InstallPlanOwners},
		{rules.CatalogPods{Slack: o.CatalogPodSlack.Duration, NodeNotReadyFor: o.NodeNotReadyFor.Duration, Selector: settings.CatalogPods.Selector}, settings.CatalogPods.RuleToggle},
		{rules.OperatorLeftovers{Delete: settings.OperatorLeftovers.Delete}, settings.OperatorLeftovers.RuleToggle},
		{rules.StuckTerminating{MinAge: o.MinTerminatingAge.Duration}, settings.StuckTerminating},
	}

	names := make([]string, 0, len(builtin))
	for _, b := range builtin {
		names = append(names, b.rule.Name())
	}
	// "*" keeps every rule the config file enables; so does a list of only negations ("-foo"),
	// which would otherwise mean no rule at all.
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
			return nil, inputErrorf("--rules: unknown rule %q; the rules are %s", name, strings.Join(names, ", "))
		}
		chosen[name] = !disable
		positive = positive || !disable
	}
	all := star || !positive

	var set []rules.Rule
	for _, b := range builtin {
		enabled := all && (b.toggle.Enabled == nil || *b.toggle.Enabled)
		if v, ok := chosen[b.rule.Name()]; ok {
			enabled = v
		}
		if enabled {
			set = append(set, b.rule)
		}
	}
	return set, nil
}
