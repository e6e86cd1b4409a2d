package options

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
)

// The fleet group's flags: the sweep's, over several kubeconfig contexts.
const (
	FlagContexts           = "contexts"
	FlagAllContexts        = "all-contexts"
	FlagClusterConcurrency = "cluster-concurrency"
)

// FleetOptions say which kubeconfig contexts a sweep covers, one run each, and how many at once.
type FleetOptions struct {
	// Contexts are kubeconfig contexts, by name or glob.
	Contexts []string `json:"contexts,omitempty"`
	// AllContexts is every context of the kubeconfig.
	AllContexts bool `json:"all-contexts,omitempty"`
	// ClusterConcurrency is how many clusters are swept at once.
	ClusterConcurrency int `json:"cluster-concurrency"`
}

func defaultFleetOptions() FleetOptions { return FleetOptions{ClusterConcurrency: 4} }

// AddFlags binds the group's flags to o; the defaults shown are o's current values.
func (o *FleetOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Contexts, FlagContexts, o.Contexts, "Run on these kubeconfig contexts (names or globs), one run each, into one report; each cluster is named by its context.")
	fs.BoolVar(&o.AllContexts, FlagAllContexts, o.AllContexts, "Run on every context of the kubeconfig (report only: writes need --contexts named).")
	fs.IntVar(&o.ClusterConcurrency, FlagClusterConcurrency, o.ClusterConcurrency, "Clusters run on at once with --contexts or --all-contexts.")
}

// Fleet reports whether the sweep covers several contexts.
func (o *FleetOptions) Fleet() bool { return len(o.Contexts) > 0 || o.AllContexts }

// Validate returns every problem of the group.
func (o *FleetOptions) Validate() []error {
	var errs []error
	if len(o.Contexts) > 0 && o.AllContexts {
		errs = append(errs, fmt.Errorf("--%s and --%s: give one", FlagContexts, FlagAllContexts))
	}
	if o.ClusterConcurrency < 1 {
		errs = append(errs, invalid(FlagClusterConcurrency, o.ClusterConcurrency, "use 1 or more"))
	}
	errs = append(errs, validPatterns(FlagContexts, o.Contexts)...)
	return errs
}

// ValidateFleet checks what the fleet group asks of the others: one cluster's flags make no sense
// over several, and --all-contexts does not write, as kubectl's broad selections would not.
func (o *Options) ValidateFleet() error {
	if !o.Fleet() {
		return nil
	}
	var errs []error
	if o.Context != "" {
		errs = append(errs, fmt.Errorf("--%s names one context: with --%s or --%s, each context is swept", FlagContext, FlagContexts, FlagAllContexts))
	}
	if o.Cluster != "" {
		errs = append(errs, fmt.Errorf("--%s names one cluster: with --%s or --%s, each is named by its context", FlagCluster, FlagContexts, FlagAllContexts))
	}
	if o.AllContexts && o.DryRun == "none" {
		errs = append(errs, fmt.Errorf("--%s with --%s=none: name the contexts to write to with --%s", FlagAllContexts, FlagDryRun, FlagContexts))
	}
	return errors.Join(errs...)
}
