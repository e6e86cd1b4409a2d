// Command maxrss runs a command, waits for it, and writes its peak resident set size (wait4's
// ru_maxrss, which covers the descendants it waited for) as JSON to the file -o names; it exits
// as the command did.
//
// hack/bench measures through it because a child's ru_maxrss starts at its parent's: Go starts
// children with vfork, so the child shares the parent's memory until it executes, and Linux
// carries that memory's high-water mark into the child's ru_maxrss. This launcher links only the
// standard library, so the mark it passes on (a few MiB) is below what any measured program
// uses, where hack/bench's own, after seeding 110,000 objects, is not.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// Usage is what maxrss writes.
type Usage struct {
	// MaxRSSKiB is ru_maxrss, in KiB as Linux gives it.
	MaxRSSKiB int64 `json:"maxRSSKiB"`
}

func main() {
	out := flag.String("o", "", "write the usage to this file")
	flag.Parse()
	code, err := run(*out, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "maxrss:", err)
		code = 125
	}
	os.Exit(code)
}

// run runs args and returns its exit code.
func run(out string, args []string) (int, error) {
	if out == "" || len(args) == 0 {
		return 0, errors.New("usage: maxrss -o FILE COMMAND [ARG…]")
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return 0, fmt.Errorf("run %s: %w", args[0], err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, errors.New("no rusage from wait4")
	}
	data, err := json.Marshal(Usage{MaxRSSKiB: ru.Maxrss})
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		return 0, fmt.Errorf("write %s: %w", out, err)
	}
	return cmd.ProcessState.ExitCode(), nil
}
