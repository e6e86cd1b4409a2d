package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a control-plane component the cluster runs as a child process, with its output in a
// log file of its own. One that restarts is started again whenever it exits, until stopped: OLM's
// operators exit on purpose to restart.
type Process struct {
	Name string
	// Log is the file its output goes to.
	Log string

	path    string
	args    []string
	env     []string
	restart bool

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	stop   chan struct{} // closed by Stop
	done   chan struct{} // closed when supervise returns
}

// startProcess starts binary (in the cluster's assets) as name.
func (c *Cluster) startProcess(name, binary string, restart bool, env []string, args ...string) (*Process, error) {
	if _, err := os.Stat(filepath.Join(c.assets, binary)); err != nil {
		return nil, fmt.Errorf("%s is not in KUBEBUILDER_ASSETS=%s: point it at the folder `hack/testbin.sh all` prints (%w)", binary, c.assets, err)
	}
	return c.startBinary(name, filepath.Join(c.assets, binary), restart, env, args...)
}

// startBinary starts the binary at path as name.
func (c *Cluster) startBinary(name, path string, restart bool, env []string, args ...string) (*Process, error) {
	if err := os.MkdirAll(c.LogDir, 0o755); err != nil {
		return nil, err
	}
	p := &Process{
		Name:    name,
		Log:     filepath.Join(c.LogDir, name+".log"),
		path:    path,
		args:    args,
		env:     childEnv(env),
		restart: restart,
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	if err := p.run(); err != nil {
		return nil, err
	}
	c.processes = append(c.processes, p)
	go p.supervise()
	return p, nil
}

// childEnv is this process's environment with env on top, without CI: OLM's client panics on
// objects without its olm.managed label when CI is set.
func childEnv(env []string) []string {
	out := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CI=") })
	return append(out, env...)
}

func (p *Process) run() error {
	log, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group, so that a test's Ctrl-C does not reach it before Stop does; and
	// killed if the test binary dies without stopping it (a timeout, kill -9).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(exited)
	}()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	return nil
}

// supervise starts the process again each time it exits, if it restarts, until it is stopped.
func (p *Process) supervise() {
	defer close(p.done)
	for {
		p.mu.Lock()
		exited := p.exited
		p.mu.Unlock()
		select {
		case <-p.stop:
			return
		case <-exited:
		}
		if !p.restart {
			return
		}
		select {
		case <-p.stop:
			return
		case <-time.After(time.Second):
		}
		if err := p.run(); err != nil {
			return
		}
	}
}

// Stop stops the process: SIGTERM, then SIGKILL after 10 seconds; it is not restarted.
func (p *Process) Stop() error {
	p.mu.Lock()
	select {
	case <-p.stop:
		p.mu.Unlock()
		return nil // stopped already
	default:
		close(p.stop)
	}
	p.mu.Unlock()
	<-p.done // no restart from now on
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	return nil
}

// stopProcesses stops every process, the last started first.
func (c *Cluster) stopProcesses() error {
	var errs []error
	for _, p := range slices.Backward(c.processes) {
		errs = append(errs, p.Stop())
	}
	c.processes = nil
	return errors.Join(errs...)
}
