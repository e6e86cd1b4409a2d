package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"

	"github.com/spf13/pflag"

	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

var errVersion = errors.New("version requested")

// pushgatewayURLEnv names the environment variable the CronJob's Pushgateway overlay sets.
const pushgatewayURLEnv = "SWEEPER_PUSHGATEWAY_URL"

// parseOptions turns the command line of a sweep into Options.
func parseOptions(args []string) (sweeper.Options, *pflag.FlagSet, error) {
	opts, fs, err := parseWith(args, nil)
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q: operator-sweeper takes flags only, explain TYPE/NAME, or restore --from REPORT|DIR", fs.Arg(0))
	}
	return opts, fs, err
}

// parseExplain turns the command line of `explain TYPE/NAME [-n NAMESPACE]`, flags anywhere, into
// Options and its target. It reports false if the command line is not explain's.
func parseExplain(args []string) (sweeper.Options, sweeper.Target, *pflag.FlagSet, bool, error) {
	var namespace string
	opts, fs, err := parseWith(args, func(fs *pflag.FlagSet) {
		fs.StringVarP(&namespace, "namespace", "n", "", "The namespace of the object, if its TYPE is namespaced.")
	})
	if fs.Arg(0) != "explain" {
		return opts, sweeper.Target{}, fs, false, nil
	}
	if err != nil {
		return opts, sweeper.Target{}, fs, true, err
	}
	if fs.NArg() != 2 {
		return opts, sweeper.Target{}, fs, true, fmt.Errorf("explain takes one object, as TYPE/NAME (namespace/logging, apiservice/v1.packages.operators.coreos.com); got %d arguments", fs.NArg()-1)
	}
	target, err := sweeper.ParseTarget(fs.Arg(1), namespace)
	return opts, target, fs, true, err
}

// parseRestore turns the command line of `restore --from REPORT|DIR [--only TYPE/NAME …]`, flags
// anywhere, into Options and what to restore. It reports false if the command line is not
// restore's.
func parseRestore(args []string) (sweeper.Options, sweeper.RestoreSource, *pflag.FlagSet, bool, error) {
	var src sweeper.RestoreSource
	opts, fs, err := parseWith(args, func(fs *pflag.FlagSet) {
		fs.StringVar(&src.From, "from", "", "A sweep's report (JSON or YAML, or its Job's logs), its --backup-dir (the newest run), or a run's directory in it.")
		fs.StringSliceVar(&src.Only, "only", nil, "Undo only the actions on these objects, as TYPE/NAME (clusterrole/etcd-operator, crd/etcdclusters.etcd.database.coreos.com).")
	})
	switch {
	case fs.Arg(0) != "restore":
		return opts, src, fs, false, nil
	case err != nil:
		return opts, src, fs, true, err
	case fs.NArg() > 1:
		return opts, src, fs, true, fmt.Errorf("restore takes flags only; got argument %q", fs.Arg(1))
	case src.From == "":
		return opts, src, fs, true, errors.New("restore needs --from: a sweep's report or its --backup-dir")
	}
	return opts, src, fs, true, nil
}

// parseWith parses the flags, and those extra adds. Flags override the environment, which
// overrides the --config file: a first parse finds --config, then the file is read onto the
// defaults, the environment onto that, and the flags are parsed once more on top.
func parseWith(args []string, extra func(*pflag.FlagSet)) (sweeper.Options, *pflag.FlagSet, error) {
	opts := sweeper.DefaultOptions()
	fs, showVersion := newFlagSet(&opts, extra)
	if err := fs.Parse(args); err != nil {
		return opts, fs, err
	}
	if *showVersion {
		return opts, fs, errVersion
	}
	base := sweeper.DefaultOptions()
	if opts.ConfigFile != "" {
		var err error
		if base, err = sweeper.LoadConfigFile(opts.ConfigFile, base); err != nil {
			return base, fs, err
		}
	}
	envURL := os.Getenv(pushgatewayURLEnv)
	if envURL != "" {
		base.PushgatewayURL = envURL
	}
	fs, _ = newFlagSet(&base, extra)
	if err := fs.Parse(args); err != nil {
		return base, fs, err
	}
	if envURL != "" && !fs.Changed(sweeper.FlagPushgatewayURL) {
		if err := checkPushgatewayURLEnv(envURL); err != nil {
			return base, fs, err
		}
	}
	if !fs.Changed(sweeper.FlagShard) {
		shard, err := shardFromEnv()
		if err != nil {
			return base, fs, err
		}
		base.Shard = cmp.Or(shard, base.Shard)
	}
	return base, fs, nil
}

// The environment of an Indexed Job: Kubernetes sets the index; the manifest sets the count,
// which Kubernetes does not pass on.
const (
	jobCompletionIndexEnv = "JOB_COMPLETION_INDEX"
	jobCompletionsEnv     = "JOB_COMPLETIONS"
)

// shardFromEnv is the shard an Indexed Job's environment selects, "i/n", or "" outside one.
func shardFromEnv() (string, error) {
	index, hasIndex := os.LookupEnv(jobCompletionIndexEnv)
	count, hasCount := os.LookupEnv(jobCompletionsEnv)
	switch {
	case !hasIndex && !hasCount:
		return "", nil
	case !hasCount:
		return "", fmt.Errorf("%s=%s is set but %s is not: set it to the Job's completions, or pass --%s", jobCompletionIndexEnv, index, jobCompletionsEnv, sweeper.FlagShard)
	case !hasIndex:
		return "", fmt.Errorf("%s=%s is set but %s is not: run it in an Indexed Job, or pass --%s", jobCompletionsEnv, count, jobCompletionIndexEnv, sweeper.FlagShard)
	}
	shard := index + "/" + count
	if _, err := sweeper.ParseShard(shard); err != nil {
		return "", fmt.Errorf("%s and %s: %w", jobCompletionIndexEnv, jobCompletionsEnv, err)
	}
	return shard, nil
}

// checkPushgatewayURLEnv checks the URL the environment gave. Validate would name the flag, which
// the user never passed; the variable is what to change (in the CronJob's overlay, usually).
func checkPushgatewayURLEnv(value string) error {
	u, err := url.Parse(value)
	switch {
	case err != nil:
		return fmt.Errorf("%s %q is invalid: use http(s)://host:port: %w", pushgatewayURLEnv, value, err)
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("%s %q is invalid: use http(s)://host:port", pushgatewayURLEnv, value)
	}
	return nil
}

// newFlagSet binds every flag to o; the defaults shown are o's current values.
func newFlagSet(o *sweeper.Options, extra func(*pflag.FlagSet)) (*pflag.FlagSet, *bool) {
	fs := pflag.NewFlagSet("operator-sweeper", pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed once, by run
	fs.SortFlags = false
	if extra != nil {
		extra(fs)
	}
	o.AddFlags(fs)
	showVersion := fs.Bool("version", false, "Print the version and exit.")
	return fs, showVersion
}
