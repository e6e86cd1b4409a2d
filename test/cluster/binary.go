package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/operator-sweeper/operator-sweeper/report"
)

// RepoRoot is the repository, from the directory of a test package under test/, where go test
// runs it.
const RepoRoot = "../.."

// Stamp is the version and commit `make build` stamps a binary with.
type Stamp struct{ Version, Commit string }

// ReleaseStamp is what the test packages that check the release build stamp it with: a version
// and commit no real release has, so that a test can tell its binary's stamp came through.
var ReleaseStamp = Stamp{Version: "v0.0.0-e2e", Commit: "e2ecafe"}

// Binary is the path of an executable the tests run: operator-sweeper as Build builds it, or a
// tool such as kubectl.
type Binary string

// Build builds operator-sweeper into dir, once for a test package (Main's setup). With a stamp,
// it builds as `make build` does, as the image and the release archives are built: static,
// -trimpath, the stamp's version and commit. With the zero Stamp, it builds with plain go build,
// as a developer does: the binary's version is "dev".
func Build(dir string, stamp Stamp) (Binary, error) {
	binary := filepath.Join(dir, "operator-sweeper")
	build := exec.Command("go", "build", "-o", binary, "github.com/operator-sweeper/operator-sweeper/cmd/operator-sweeper")
	if stamp != (Stamp{}) {
		build = exec.Command("make", "-C", RepoRoot, "build", "BIN="+binary, "VERSION="+stamp.Version, "COMMIT="+stamp.Commit)
	}
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build operator-sweeper (%s): %w", build, err)
	}
	return Binary(binary), nil
}

// BuildRace builds operator-sweeper into dir with the race detector, as go build -race does: a
// data race makes the binary print "WARNING: DATA RACE" and exit 66.
func BuildRace(dir string) (Binary, error) {
	binary := filepath.Join(dir, "operator-sweeper-race")
	build := exec.Command("go", "build", "-race", "-o", binary, "github.com/operator-sweeper/operator-sweeper/cmd/operator-sweeper")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build operator-sweeper -race (%s): %w", build, err)
	}
	return Binary(binary), nil
}

// BuildMaxRSS builds hack/bench/maxrss into dir: the launcher that measures a command's peak
// resident set. A child of the test process cannot be measured directly: Go starts children with
// vfork, and Linux carries the parent's high-water mark into the child's ru_maxrss.
func BuildMaxRSS(dir string) (Binary, error) {
	binary := filepath.Join(dir, "maxrss")
	build := exec.Command("go", "build", "-o", binary, "github.com/operator-sweeper/operator-sweeper/hack/bench/maxrss")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build maxrss (%s): %w", build, err)
	}
	return Binary(binary), nil
}

// RunMeasured is Run under maxrss, a binary BuildMaxRSS built, and also returns the run's peak
// resident set, in bytes.
func (b Binary) RunMeasured(t testing.TB, maxrss Binary, args ...string) (stdout, stderr string, code int, peak int64) {
	t.Helper()
	usage := filepath.Join(t.TempDir(), "usage.json")
	stdout, stderr, code = maxrss.Run(t, append([]string{"-o", usage, string(b)}, args...)...)
	data, err := os.ReadFile(usage)
	require.NoError(t, err, "maxrss wrote no usage: %s", stderr)
	var u struct {
		MaxRSSKiB int64 `json:"maxRSSKiB"`
	}
	require.NoError(t, json.Unmarshal(data, &u))
	return stdout, stderr, code, u.MaxRSSKiB << 10
}

// RunTimeout is how long a run (Run, RunIn) may take. One that takes longer is killed and fails
// its test: a hung binary must not hang the package until go test's own timeout.
const RunTimeout = 2 * time.Minute

// Run runs the binary with args in the test's environment, and returns what it printed and its
// exit code; see RunTimeout.
func (b Binary) Run(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return b.RunIn(t, nil, nil, args...)
}

// RunIn is Run in the environment env (KEY=value) alone, or the test's if env is nil, and as
// user if not nil.
func (b Binary) RunIn(t testing.TB, env []string, user *syscall.Credential, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	p := b.start(t, env, user, args)
	code = p.Wait(t, RunTimeout)
	return p.Stdout(), p.Stderr(), code
}

// RunReport is Run of a binary that prints a JSON report (-o json); stdout that is not one fails
// t.
func (b Binary) RunReport(t testing.TB, args ...string) (*report.Report, string, int) {
	t.Helper()
	stdout, stderr, code := b.Run(t, args...)
	return decodeReport(t, stdout, stderr), stderr, code
}

// Start starts the binary with args in the test's environment, and returns at once: for a test
// that acts on the process while it runs (signals it, runs others beside it). The process is
// killed when the test ends if it still runs, so that a failed test leaves nothing behind that
// acts on the next one's objects.
func (b Binary) Start(t testing.TB, args ...string) *Running {
	t.Helper()
	return b.start(t, nil, nil, args)
}

func (b Binary) start(t testing.TB, env []string, user *syscall.Credential, args []string) *Running {
	t.Helper()
	p := &Running{name: filepath.Base(string(b)), cmd: exec.Command(string(b), args...), done: make(chan struct{})}
	p.cmd.Env = env
	if user != nil {
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: user}
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	// A process the binary started must not keep the output open, and Wait from returning.
	p.cmd.WaitDelay = 5 * time.Second
	require.NoError(t, p.cmd.Start(), "start %s", b)
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.Exited() {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// Running is a process of a Binary, running or exited.
type Running struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer // written by exec's goroutines: read only once done is closed
	done           chan struct{}
	err            error
}

// Signal sends sig to the process.
func (p *Running) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Exited reports whether the process has exited.
func (p *Running) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits up to timeout for the process to exit and returns its exit code (-1 if a signal
// killed it). A process still running then is killed, and fails t.
func (p *Running) Wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		require.FailNow(t, p.name+" did not exit in time", "%s; killed. stderr:\n%s", timeout, p.stderr.String())
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		return exit.ExitCode()
	}
	require.NoError(t, p.err, "run %s", p.name)
	return 0
}

// Err is how the process exited, as exec says it (nil for exit code 0); only once it has.
func (p *Running) Err() error {
	<-p.done
	return p.err
}

// Stdout is what the process printed on stdout; only once it has exited.
func (p *Running) Stdout() string {
	<-p.done
	return p.stdout.String()
}

// Stderr is what the process printed on stderr; only once it has exited.
func (p *Running) Stderr() string {
	<-p.done
	return p.stderr.String()
}

// Report decodes the JSON report the exited process printed; stdout that is not one fails t.
func (p *Running) Report(t testing.TB) *report.Report {
	t.Helper()
	return decodeReport(t, p.Stdout(), p.Stderr())
}

func decodeReport(t testing.TB, stdout, stderr string) *report.Report {
	t.Helper()
	var rep report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), "stdout is not a JSON report:\n%s\nstderr:\n%s", stdout, stderr)
	return &rep
}
