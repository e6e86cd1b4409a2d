// Command operator-sweeper finds what uninstalled or broken operators left behind in a
// Kubernetes cluster, explains it, and (with --dry-run=none) cleans it up.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// Stamped at build time: -ldflags "-X main.version=… -X main.commit=…" (see the Makefile).
var (
	version = "dev"
	commit  = "unknown"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, commandName(os.Args[0]), os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK       = 0
	exitFailed   = 1 // a stage or an action failed; the report was printed
	exitInput    = 2 // bad flags, config file or kubeconfig; nothing was done
	exitFindings = 3 // findings present and --fail-on-findings set
)

// commandName is how the user called the binary, for its usage: "operator-sweeper", or, run by
// kubectl as the plugin kubectl-sweeper, "kubectl sweeper" (kubectl maps "_" in a plugin's file
// name to "-").
func commandName(argv0 string) string {
	base := filepath.Base(argv0)
	if plugin, ok := strings.CutPrefix(base, "kubectl-"); ok {
		return "kubectl " + strings.ReplaceAll(plugin, "_", "-")
	}
	return "operator-sweeper"
}

// run is main without the process: flags → Options → sweeper.Run (or sweeper.Explain, or
// sweeper.Restore) → exit code. command is how the user called it, for the usage.
func run(ctx context.Context, command string, args []string, stdout, stderr io.Writer) int {
	usage := fmt.Sprintf("Usage: %[1]s [flags]\n       %[1]s explain TYPE/NAME [-n NAMESPACE] [flags]\n       %[1]s restore --from REPORT|DIR [--only TYPE/NAME,…] [flags]", command)
	streams := sweeper.Streams{Out: stdout, Err: stderr}
	var opts sweeper.Options
	var fs *pflag.FlagSet
	var err error
	var sweep func(sweeper.Options) error
	var target sweeper.Target
	var src sweeper.RestoreSource
	var explain, restore bool
	if opts, target, fs, explain, err = parseExplain(args); explain {
		sweep = func(opts sweeper.Options) error { return sweeper.Explain(ctx, opts, target, streams) }
	} else if opts, src, fs, restore, err = parseRestore(args); restore {
		sweep = func(opts sweeper.Options) error { return sweeper.Restore(ctx, opts, src, streams) }
	} else {
		opts, fs, err = parseOptions(args)
		sweep = func(opts sweeper.Options) error { return sweeper.Run(ctx, opts, streams) }
	}
	switch {
	case errors.Is(err, pflag.ErrHelp):
		fmt.Fprintf(stdout, "%s\n\n%s", usage, fs.FlagUsages())
		return exitOK
	case errors.Is(err, errVersion):
		fmt.Fprintf(stdout, "operator-sweeper %s (commit %s)\n", version, commit)
		return exitOK
	case err != nil:
		printError(stderr, err)
		return exitInput
	}
	opts.Version = version

	err = sweep(opts)
	if err == nil {
		return exitOK
	}
	printError(stderr, err)
	var input *sweeper.InputError
	switch {
	case errors.As(err, &input):
		return exitInput
	case errors.Is(err, sweeper.ErrFindings):
		return exitFindings
	default:
		return exitFailed
	}
}

// printError prints an input error one problem a line, and any other error on one line, whatever
// a library put in it.
func printError(w io.Writer, err error) {
	lines := []string{strings.Join(strings.Fields(err.Error()), " ")}
	if input := (*sweeper.InputError)(nil); errors.As(err, &input) {
		lines = strings.Split(input.Error(), "\n")
	}
	for _, line := range lines {
		fmt.Fprintln(w, "error:", line)
	}
}
