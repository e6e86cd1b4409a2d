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
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
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

// run is main without the process: flags → Options → sweeper.Run → exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, fs, err := parseOptions(args)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		fmt.Fprintf(stdout, "Usage: operator-sweeper [flags]\n\n%s", fs.FlagUsages())
		return exitOK
	case errors.Is(err, errVersion):
		fmt.Fprintf(stdout, "operator-sweeper %s (commit %s)\n", version, commit)
		return exitOK
	case err != nil:
		printError(stderr, err)
		return exitInput
	}
	opts.Version = version

	err = sweeper.Run(ctx, opts, sweeper.Streams{Out: stdout, Err: stderr})
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
