package options

import (
	"fmt"
	"os"
	"path"

	"github.com/spf13/pflag"

	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// The walk group's flags.
const (
	FlagIncludeResources  = "include-resources"
	FlagExcludeResources  = "exclude-resources"
	FlagIncludeNamespaces = "include-namespaces"
	FlagExcludeNamespaces = "exclude-namespaces"
	FlagConcurrency       = "concurrency"
	FlagPageSize          = "page-size"
	FlagShard             = "shard"
)

// The environment of an Indexed Job: Kubernetes sets the index; the manifest sets the count,
// which Kubernetes does not pass on.
const (
	JobCompletionIndexEnv = "JOB_COMPLETION_INDEX"
	JobCompletionsEnv     = "JOB_COMPLETIONS"
)

// WalkOptions say what the run lists, how, and which part of it is this run's.
type WalkOptions struct {
	// IncludeResources and ExcludeResources select resources by pattern: "pods" (any group),
	// "deployments.apps", "*.operators.coreos.com".
	IncludeResources []string `json:"include-resources,omitempty"`
	ExcludeResources []string `json:"exclude-resources,omitempty"`
	// IncludeNamespaces and ExcludeNamespaces select namespaces by name or glob.
	IncludeNamespaces []string `json:"include-namespaces,omitempty"`
	ExcludeNamespaces []string `json:"exclude-namespaces,omitempty"`
	// Concurrency is how many lists run in parallel.
	Concurrency int `json:"concurrency"`
	// PageSize is the limit of each list request.
	PageSize int64 `json:"page-size"`
	// Shard is "i/n": this run is shard i of a sweep split across n processes (see sweeper.Shard);
	// empty means the whole sweep.
	Shard string `json:"shard,omitempty"`
}

func defaultWalkOptions() WalkOptions { return WalkOptions{Concurrency: 8, PageSize: 500} }

// AddFlags binds the group's flags to o; the defaults shown are o's current values.
func (o *WalkOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.Concurrency, FlagConcurrency, o.Concurrency, "Lists running in parallel.")
	fs.Int64Var(&o.PageSize, FlagPageSize, o.PageSize, "Objects per list request (limit/continue paging).")
	fs.StringSliceVar(&o.IncludeResources, FlagIncludeResources, o.IncludeResources, "Only walk these resources: \"pods\" (any group), \"deployments.apps\", \"*.operators.coreos.com\".")
	fs.StringSliceVar(&o.ExcludeResources, FlagExcludeResources, o.ExcludeResources, "Never walk these resources (same patterns as --include-resources).")
	fs.StringSliceVar(&o.IncludeNamespaces, FlagIncludeNamespaces, o.IncludeNamespaces, "Only walk these namespaces (names or globs); cluster-scoped resources are still walked.")
	fs.StringSliceVar(&o.ExcludeNamespaces, FlagExcludeNamespaces, o.ExcludeNamespaces, "Never walk these namespaces (names or globs).")
	fs.StringVar(&o.Shard, FlagShard, o.Shard, "i/n: sweep shard i of n, in an Indexed Job (default: $JOB_COMPLETION_INDEX/$JOB_COMPLETIONS if both are set, else the whole cluster).")
}

// Validate returns every problem of the group.
func (o *WalkOptions) Validate() []error {
	var errs []error
	if o.Concurrency < 1 {
		errs = append(errs, invalid(FlagConcurrency, o.Concurrency, "it must be at least 1"))
	}
	if o.PageSize < 1 {
		errs = append(errs, invalid(FlagPageSize, o.PageSize, "it must be at least 1"))
	}
	if o.Shard != "" {
		if _, err := sweeper.ParseShard(o.Shard); err != nil {
			errs = append(errs, fmt.Errorf("--%s %w", FlagShard, err))
		}
	}
	errs = append(errs, validPatterns(FlagIncludeResources, o.IncludeResources)...)
	errs = append(errs, validPatterns(FlagExcludeResources, o.ExcludeResources)...)
	errs = append(errs, validPatterns(FlagIncludeNamespaces, o.IncludeNamespaces)...)
	return append(errs, validPatterns(FlagExcludeNamespaces, o.ExcludeNamespaces)...)
}

// validPatterns returns a problem for each pattern of flag that is not a name or a glob.
func validPatterns(flag string, patterns []string) []error {
	var errs []error
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			errs = append(errs, fmt.Errorf("--%s: pattern %q is invalid: use a name or a glob such as \"*.operators.coreos.com\"", flag, p))
		}
	}
	return errs
}

// ApplyEnv takes the shard from an Indexed Job's environment, unless --shard was given.
func (o *WalkOptions) ApplyEnv(fs *pflag.FlagSet) error {
	if fs.Changed(FlagShard) {
		return nil
	}
	shard, err := shardFromEnv()
	if shard != "" {
		o.Shard = shard
	}
	return err
}

// shardFromEnv is the shard an Indexed Job's environment selects, "i/n", or "" outside one.
func shardFromEnv() (string, error) {
	index, hasIndex := os.LookupEnv(JobCompletionIndexEnv)
	count, hasCount := os.LookupEnv(JobCompletionsEnv)
	switch {
	case !hasIndex && !hasCount:
		return "", nil
	case !hasCount:
		return "", fmt.Errorf("%s=%s is set but %s is not: set it to the Job's completions, or pass --%s", JobCompletionIndexEnv, index, JobCompletionsEnv, FlagShard)
	case !hasIndex:
		return "", fmt.Errorf("%s=%s is set but %s is not: run it in an Indexed Job, or pass --%s", JobCompletionsEnv, count, JobCompletionIndexEnv, FlagShard)
	}
	shard := index + "/" + count
	if _, err := sweeper.ParseShard(shard); err != nil {
		return "", fmt.Errorf("%s and %s: %w", JobCompletionIndexEnv, JobCompletionsEnv, err)
	}
	return shard, nil
}

// ApplyTo sets what the sweep walks.
func (o *WalkOptions) ApplyTo(cfg *sweeper.Config) {
	cfg.IncludeResources, cfg.ExcludeResources = o.IncludeResources, o.ExcludeResources
	cfg.IncludeNamespaces, cfg.ExcludeNamespaces = o.IncludeNamespaces, o.ExcludeNamespaces
	cfg.Concurrency, cfg.PageSize = o.Concurrency, o.PageSize
	cfg.Shard = sweeper.Shard{}
	if o.Shard != "" {
		cfg.Shard, _ = sweeper.ParseShard(o.Shard) // validated
	}
}
