package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// probe reads what the API server spent: its CPU time from /proc and its request counter from
// its metrics endpoint.
type probe struct {
	pid     int
	metrics rest.Interface
	// scrapeRequests is how much apiserver_request_total grows by a scrape alone, over which
	// nothing else ran: the first scrape of a measurement is counted once answered.
	scrapeRequests int64
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100 on every Linux
// architecture Go supports (sysconf(_SC_CLK_TCK) would need cgo).
const clockTicks = 100

// findAPIServer returns the pid of the kube-apiserver that runs from assets and serves host:
// test/cluster starts it through envtest, which keeps the process to itself.
func findAPIServer(assets, host string) (int, error) {
	u, err := url.Parse(host)
	if err != nil {
		return 0, fmt.Errorf("parse the API server's address %q: %w", host, err)
	}
	binary, err := filepath.EvalSymlinks(filepath.Join(assets, "kube-apiserver"))
	if err != nil {
		return 0, fmt.Errorf("kube-apiserver in %s: %w", assets, err)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("read /proc: %w", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); exe != binary {
			continue
		}
		if slices.Contains(cmdline(pid), "--secure-port="+u.Port()) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process of %s serves port %s", binary, u.Port())
}

func cmdline(pid int) []string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
}

// cpu is the CPU time, user and system, the API server has used since it started.
func (p *probe) cpu() (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return 0, fmt.Errorf("the API server's CPU time: %w", err)
	}
	// The command name, in parentheses, may hold spaces: the fields counted are after it.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("the API server's CPU time: /proc/<pid>/stat has no command name")
	}
	fields := strings.Fields(string(data[i+1:]))
	// utime and stime are fields 14 and 15 of stat(5); fields[0] here is field 3, the state.
	if len(fields) < 13 {
		return 0, errors.New("the API server's CPU time: /proc/<pid>/stat is short")
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("the API server's CPU time: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// requests is the sum of the API server's apiserver_request_total, every request it has
// answered, whatever the verb, resource and code.
func (p *probe) requests(ctx context.Context) (int64, error) {
	body, err := p.metrics.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("scrape the API server's metrics: %w", err)
	}
	var total float64
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("apiserver_request_total: %w", err)
		}
		total += v
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read the API server's metrics: %w", err)
	}
	return int64(total), nil
}

// calibrate measures scrapeRequests: the least growth of the counter over three pairs of scrapes.
func (p *probe) calibrate(ctx context.Context) error {
	p.scrapeRequests = -1
	for range 3 {
		before, err := p.requests(ctx)
		if err != nil {
			return err
		}
		after, err := p.requests(ctx)
		if err != nil {
			return err
		}
		if d := after - before; p.scrapeRequests < 0 || d < p.scrapeRequests {
			p.scrapeRequests = d
		}
	}
	return nil
}

// settle has the API server collect its garbage, then waits until it idles (under 5% of a core
// over a second), at most a minute. Without the collection, the API server's own garbage
// collector, a second or more of CPU time over its heap of every object, runs in whichever
// measurement reaches its threshold: every few runs, and, with the runs interleaved in a fixed
// rotation, always in the same one.
func (p *probe) settle(ctx context.Context) error {
	// net/http/pprof's heap profile runs a garbage collection first when asked (gc=1); the
	// API server serves it to an admin (--profiling, on by default).
	if err := p.metrics.Get().AbsPath("/debug/pprof/heap").Param("gc", "1").Do(ctx).Error(); err != nil {
		return fmt.Errorf("have the API server collect its garbage (/debug/pprof/heap?gc=1): %w", err)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		before, err := p.cpu()
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		after, err := p.cpu()
		if err != nil {
			return err
		}
		if after-before < 50*time.Millisecond {
			return nil
		}
	}
	logf("the API server is still busy after a minute; measuring anyway")
	return nil
}
