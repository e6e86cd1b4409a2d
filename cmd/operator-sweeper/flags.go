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
	o.AddFlags(fs)
	showVersion := fs.Bool("version", false, "Print the version and exit.")
	return fs, showVersion
}
