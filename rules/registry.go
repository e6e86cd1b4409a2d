package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	sigsjson "sigs.k8s.io/json"
)

// Settings are what rules read of the run's options besides their own arguments: thresholds set
// by flags, and the controller mappings.
type Settings struct {
	// MinTerminatingAge is how long an object must have been terminating to count as stuck
	// (--min-terminating-age).
	MinTerminatingAge time.Duration
	// CatalogPodSlack is how long past its grace period a pod on a lost node must be
	// (--catalog-pod-slack).
	CatalogPodSlack time.Duration
	// NodeNotReadyFor is how long a node must have been not Ready to count as lost
	// (--node-not-ready-for).
	NodeNotReadyFor time.Duration
	// MinAge is how long what an action rests on must have stayed as it is (--min-age): the
	// engine applies it to the object acted on; a rule, to the state of another it reads.
	MinAge time.Duration
	// UnhealthyZoneThreshold is the fraction of a zone's nodes not Ready (more than two) from
	// which the zone is in an outage and nothing is force-deleted there
	// (--unhealthy-zone-threshold, as kube-controller-manager's).
	UnhealthyZoneThreshold float64
	// Finalizers are the controller mappings.
	Finalizers FinalizerMappings
	// HelmSQLStorage says some Helm releases are kept in SQL (Helm's sql driver), which the
	// sweeper cannot read: a release without a record in Secrets or ConfigMaps is undecided.
	HelmSQLStorage bool
}

// Registration is a rule of the registry: its name, its arguments (the rule's section of the
// config file, rules.<name>) and how to build it.
type Registration struct {
	// Name is the rule's name in --rules, the config file, the report and metrics.
	Name    string
	newArgs func() any
	build   func(args any, settings Settings) (Rule, error)
}

// Registry lists every rule, in the order their actions are applied: a rule whose actions must
// come first (RBAC before the finalizer that stood for it) comes first. A new rule is one file
// and one line here.
func Registry() []Registration {
	return []Registration{
		// What blocks every namespace deletion or every write of some resources goes first.
		register(DeadAPIServicesName, NewDeadAPIServices),
		register(DeadWebhooksName, NewDeadWebhooks),
		register(OLMRBACName, NewOLMRBAC),
		register(OLMv1LeftoversName, NewOLMv1Leftovers),
		register(OrphanedFinalizersName, NewOrphanedFinalizers),
		register(InstallPlanOwnersName, NewInstallPlanOwners),
		register(CatalogPodsName, NewCatalogPods),
		register(OperatorLeftoversName, NewOperatorLeftovers),
		register(StuckTerminatingName, NewStuckTerminating),
	}
}

// register adapts a rule's constructor, which takes its own …Args type, to the registry.
func register[A any, R Rule](name string, newRule func(A, Settings) (R, error)) Registration {
	return Registration{
		Name:    name,
		newArgs: func() any { return new(A) },
		build: func(args any, settings Settings) (Rule, error) {
			var typed A
			switch a := args.(type) {
			case nil:
			case A:
				typed = a
			case *A:
				typed = *a
			default:
				return nil, fmt.Errorf("rules.%s: arguments of type %T, want %T", name, args, typed)
			}
			return newRule(typed, settings)
		},
	}
}

// New builds the rule from its arguments, of its …Args type or a pointer to it (nil: the
// defaults). The error names the config key of every bad argument.
func (r Registration) New(args any, settings Settings) (Rule, error) {
	return r.build(args, settings)
}

// ArgsType is the type of the rule's arguments, for documentation.
func (r Registration) ArgsType() reflect.Type {
	return reflect.TypeOf(r.newArgs()).Elem()
}

// RuleConfig is a rule's section of the config file (rules.<name>): whether it runs, and its
// arguments.
type RuleConfig struct {
	// Enabled turns the rule on or off; nil keeps the default (on).
	Enabled *bool
	// Args are the rule's arguments, of its …Args type; nil means the defaults.
	Args any
}

// DecodeConfig decodes the rule's section of the config file, as JSON. Decoding is strict: an
// unknown or duplicate key is an error that names it by its full path
// ("rules.stuck-terminating.enable").
func (r Registration) DecodeConfig(data []byte) (RuleConfig, error) {
	var cfg RuleConfig
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return cfg, fmt.Errorf("rules.%s: %w", r.Name, err)
	}
	if enabled, ok := fields["enabled"]; ok {
		if err := json.Unmarshal(enabled, &cfg.Enabled); err != nil {
			return cfg, fmt.Errorf("rules.%s.enabled: %w", r.Name, err)
		}
		delete(fields, "enabled")
	}
	rest, err := json.Marshal(fields)
	if err != nil {
		return cfg, err
	}
	args := r.newArgs()
	strict, err := sigsjson.UnmarshalStrict(rest, args)
	if err != nil {
		return cfg, fmt.Errorf("rules.%s: %w", r.Name, err)
	}
	for _, e := range strict {
		var field sigsjson.FieldError
		if errors.As(e, &field) {
			field.SetFieldPath("rules." + r.Name + "." + field.FieldPath())
		}
	}
	if err := errors.Join(strict...); err != nil {
		return cfg, err
	}
	if len(fields) > 0 {
		cfg.Args = args
	}
	return cfg, nil
}
