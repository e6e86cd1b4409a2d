package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

var errVersion = errors.New("version requested")

// pushgatewayURLEnv names the environment variable the CronJob's Pushgateway overlay sets.
const pushgatewayURLEnv = "SWEEPER_PUSHGATEWAY_URL"

// parseOptions turns the command line into Options. Flags override the environment, which
// overrides the --config file: a first parse finds --config, then the file is read onto the
// defaults, the environment onto that, and the flags are parsed once more on top.
func parseOptions(args []string) (sweeper.Options, *pflag.FlagSet, error) {
	opts := sweeper.DefaultOptions()
	fs, showVersion := newFlagSet(&opts)
	if err := fs.Parse(args); err != nil {
		return opts, fs, err
	}
	if *showVersion {
		return opts, fs, errVersion
	}
	if fs.NArg() > 0 {
		return opts, fs, fmt.Errorf("unexpected argument %q: operator-sweeper takes flags only", fs.Arg(0))
	}
	base := sweeper.DefaultOptions()
	if opts.ConfigFile != "" {
		var err error
		if base, err = sweeper.LoadConfigFile(opts.ConfigFile, base); err != nil {
			return base, fs, err
		}
	}
	if url, ok := os.LookupEnv(pushgatewayURLEnv); ok && url != "" {
		base.PushgatewayURL = url
	}
	fs, _ = newFlagSet(&base)
	if err := fs.Parse(args); err != nil {
		return base, fs, err
	}
	return base, fs, nil
}

// newFlagSet binds every flag to o; the defaults shown are o's current values.
func newFlagSet(o *sweeper.Options) (*pflag.FlagSet, *bool) {
	fs := pflag.NewFlagSet("operator-sweeper", pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed once, by run
	fs.SortFlags = false

	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to the kubeconfig file (default: $KUBECONFIG, in-cluster, then ~/.kube/config).")
	fs.StringVar(&o.Context, "context", o.Context, "The kubeconfig context to use (default: the current context).")
	fs.StringVar(&o.ConfigFile, "config", o.ConfigFile, "YAML config file; its keys are these flag names, plus \"rules\". Flags override it.")
	fs.StringVar(&o.Cluster, "cluster", o.Cluster, "Cluster name in the report (default: the kubeconfig context, or \"in-cluster\").")
	fs.StringVar((*string)(&o.DryRun), "dry-run", string(o.DryRun), "client: plan and report, write nothing; server: send writes with dryRun=All; none: apply.")
	fs.StringVarP((*string)(&o.Output), "output", "o", string(o.Output), "Report format: table, json, yaml or markdown.")
	fs.StringVar(&o.ReportFile, "report-file", o.ReportFile, "Also write the report as JSON to this file.")
	fs.StringSliceVar(&o.Rules, "rules", o.Rules, "Rules to run: \"*\" is every enabled rule, \"foo\" enables foo, \"-foo\" disables foo.")
	fs.IntVar(&o.MaxActions, "max-actions", o.MaxActions, "At most this many actions per run; the rest are skipped (reason limit). 0: no cap.")
	fs.Float32Var(&o.QPS, "qps", o.QPS, "Queries per second to the API server.")
	fs.IntVar(&o.Burst, "burst", o.Burst, "Burst of queries to the API server.")
	fs.IntVar(&o.Concurrency, "concurrency", o.Concurrency, "Lists running in parallel.")
	fs.Int64Var(&o.PageSize, "page-size", o.PageSize, "Objects per list request (limit/continue paging).")
	fs.DurationVar(&o.Timeout.Duration, "timeout", o.Timeout.Duration, "Bound on the whole run; 0: none.")
	fs.StringSliceVar(&o.IncludeResources, "include-resources", o.IncludeResources, "Only walk these resources: \"pods\" (any group), \"deployments.apps\", \"*.operators.coreos.com\".")
	fs.StringSliceVar(&o.ExcludeResources, "exclude-resources", o.ExcludeResources, "Never walk these resources (same patterns as --include-resources).")
	fs.StringSliceVar(&o.IncludeNamespaces, "include-namespaces", o.IncludeNamespaces, "Only walk these namespaces (names or globs); cluster-scoped resources are still walked.")
	fs.StringSliceVar(&o.ExcludeNamespaces, "exclude-namespaces", o.ExcludeNamespaces, "Never walk these namespaces (names or globs).")
	fs.StringSliceVar(&o.ProtectedNamespaces, "protected-namespaces", o.ProtectedNamespaces, "Report, but never act, in these namespaces (names or globs).")
	fs.DurationVar(&o.MinTerminatingAge.Duration, "min-terminating-age", o.MinTerminatingAge.Duration, "How long an object must have been terminating to count as stuck.")
	fs.DurationVar(&o.CatalogPodSlack.Duration, "catalog-pod-slack", o.CatalogPodSlack.Duration, "How long past its grace period a CatalogSource pod on a lost node must be before it is force-deleted.")
	fs.DurationVar(&o.NodeNotReadyFor.Duration, "node-not-ready-for", o.NodeNotReadyFor.Duration, "How long a node must have been not Ready for its CatalogSource pods to count as lost.")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, "Log format on standard error: text or json.")
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "Log level: debug, info, warn or error.")
	fs.BoolVar(&o.FailOnFindings, "fail-on-findings", o.FailOnFindings, "Exit 3 when there are findings.")
	fs.StringVar(&o.PushgatewayURL, "pushgateway-url", o.PushgatewayURL, "Push the run's metrics to this Pushgateway (default: $SWEEPER_PUSHGATEWAY_URL; none if unset).")
	fs.DurationVar(&o.PushgatewayTimeout.Duration, "pushgateway-timeout", o.PushgatewayTimeout.Duration, "Bound on the push.")
	fs.StringVar(&o.PushgatewayUsername, "pushgateway-username", o.PushgatewayUsername, "Basic-auth user for the Pushgateway.")
	fs.StringVar(&o.PushgatewayPasswordFile, "pushgateway-password-file", o.PushgatewayPasswordFile, "File with the basic-auth password.")
	fs.StringVar(&o.PushgatewayBearerTokenFile, "pushgateway-bearer-token-file", o.PushgatewayBearerTokenFile, "File with a bearer token for the Pushgateway.")
	fs.StringVar(&o.PushgatewayCAFile, "pushgateway-ca-file", o.PushgatewayCAFile, "CA bundle of an HTTPS Pushgateway.")
	fs.BoolVar(&o.PushgatewayInsecureSkipVerify, "pushgateway-insecure-skip-verify", o.PushgatewayInsecureSkipVerify, "Do not verify an HTTPS Pushgateway's certificate.")
	fs.StringSliceVar(&o.PushGrouping, "push-grouping", o.PushGrouping, "Extra grouping labels, key=value, next to job and cluster.")
	fs.BoolVar(&o.RequirePush, "require-push", o.RequirePush, "Exit 1 when the push fails (default: report and log it).")
	showVersion := fs.Bool("version", false, "Print the version and exit.")
	return fs, showVersion
}
