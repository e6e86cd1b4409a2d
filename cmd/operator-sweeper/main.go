// Command operator-sweeper finds what uninstalled or broken operators left behind in a
// Kubernetes cluster, explains it, and (with --dry-run=none) cleans it up.
//
// It binds each command's flags (cobra, over the option groups of package options), hands the
// options to the command's action (package action), prints the result and maps how the run ended
// to the exit code; nothing else.
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

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/operator-sweeper/operator-sweeper/action"
	"github.com/operator-sweeper/operator-sweeper/input"
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

// streams are where a command writes: the report to out, logs to err.
type streams struct {
	out, err io.Writer
}

// print prints the result of an action to out, unless the action failed, and returns how the run
// ended (see action.Result.Print).
func (s streams) print(result *action.Result, err error) error {
	if err != nil {
		return err
	}
	return result.Print(s.out)
}

// run is main without the process: the command line → its command's options → the command →
// exit code. name is how the user called the binary, for the usage.
func run(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	s := streams{out: stdout, err: stderr}
	// Until the command runs, every error is the input's.
	started := false
	root := newRoot(name, s, func(ctx context.Context, p parsed) error {
		opts := p.opts
		opts.Version = version
		// client-go logs through klog: to the same structured log, set once for the process (klog's
		// logger is not safe to set while in use); a cluster's own lines carry its name through the
		// context.
		klog.SetSlogLogger(opts.Logger(stderr))
		stopProfile, err := startProfile(opts.LogOptions)
		if err != nil {
			return err
		}
		started = true
		err = p.cmd.run(ctx, opts, s)
		if perr := stopProfile(); perr != nil {
			fmt.Fprintln(stderr, "warning: --profile:", perr)
		}
		return err
	})
	err := execute(ctx, root, args)
	if err == nil {
		return exitOK
	}
	printError(stderr, err)
	var inputErr *input.Error
	switch {
	case !started || errors.As(err, &inputErr):
		return exitInput
	case errors.Is(err, action.ErrFindings):
		return exitFindings
	default:
		return exitFailed
	}
}

// execute runs the command tree on a command line.
func execute(ctx context.Context, root *cobra.Command, args []string) error {
	root.SetArgs(append([]string{}, nameFirst(args)...)) // never nil: cobra would read os.Args
	return root.ExecuteContext(ctx)
}

// printError prints an input error one problem a line, and any other error on one line, whatever
// a library put in it.
func printError(w io.Writer, err error) {
	lines := []string{strings.Join(strings.Fields(err.Error()), " ")}
	if inputErr := (*input.Error)(nil); errors.As(err, &inputErr) {
		lines = strings.Split(inputErr.Error(), "\n")
	}
	for _, line := range lines {
		fmt.Fprintln(w, "error:", line)
	}
}
