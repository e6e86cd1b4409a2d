package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// sample is what one run cost.
type sample struct {
	wall time.Duration
	// requests is the growth of the API server's apiserver_request_total over the run.
	requests int64
	// clientRequests are the requests the floor counted itself; 0 for the others.
	clientRequests int64
	apiserverCPU   time.Duration
	// maxRSS is the peak resident set of the child and of every descendant it waited for, in
	// bytes (wait4's ru_maxrss, read by hack/bench/maxrss).
	maxRSS int64
	// objects is what the run saw: the floor's count, the sweep's summary.scanned; 0 for kubectl.
	objects int
	// findings is what a sweep with -o json reported; lines, what one with -o table printed.
	findings, lines int
	// invocations is how many processes the kubectl script ran.
	invocations int
}

// best keeps, of every figure, the least of the runs: each is the run with the least
// interference from whatever else the machine did meanwhile.
func (s sample) best(o sample) sample {
	s.wall = min(s.wall, o.wall)
	s.requests = min(s.requests, o.requests)
	s.clientRequests = min(s.clientRequests, o.clientRequests)
	s.apiserverCPU = min(s.apiserverCPU, o.apiserverCPU)
	s.maxRSS = min(s.maxRSS, o.maxRSS)
	return s
}

// measurement is one of the compared ways to read the cluster.
type measurement struct {
	name string
	// command returns the child to run, with its files in dir, and what to read of its output
	// once it exited.
	command func(dir string) (*exec.Cmd, func(*sample) error, error)
}

// result is the best of the runs of a measurement at a scale.
type result struct {
	scale       float64
	objects     int // seeded
	measurement string
	best        sample
	runs        int
}

// bench is one run of the benchmark: the cluster, what reads the API server's costs, and the
// helper programs, built into dir.
type bench struct {
	cfg        config
	cluster    *cluster.Cluster
	probe      *probe
	dir        string
	floorBin   string
	maxrssBin  string
	kubeconfig string
}

// measureAll builds the helpers, starts the cluster, seeds each scale in turn and measures at it.
func measureAll(ctx context.Context, cfg config) ([]result, environment, error) {
	dir, err := os.MkdirTemp("", "operator-sweeper-bench-")
	if err != nil {
		return nil, environment{}, err
	}
	defer os.RemoveAll(dir)
	b := &bench{cfg: cfg, dir: dir, floorBin: filepath.Join(dir, "floor"), maxrssBin: filepath.Join(dir, "maxrss")}
	if err := buildHelpers(ctx, map[string]string{b.floorBin: "floor", b.maxrssBin: "maxrss"}); err != nil {
		return nil, environment{}, err
	}
	logf("starting kube-apiserver and etcd")
	if b.cluster, err = cluster.Start(); err != nil {
		return nil, environment{}, err
	}
	defer func() {
		if err := b.cluster.Stop(); err != nil {
			logf("stop the cluster: %v", err)
		}
	}()
	b.kubeconfig = b.cluster.Kubeconfig
	env, err := describe(ctx, cfg, b.cluster)
	if err != nil {
		return nil, env, err
	}
	if b.probe, err = newProbe(ctx, b.cluster); err != nil {
		return nil, env, err
	}
	results, err := b.measureScales(ctx, &env)
	return results, env, err
}

// buildHelpers builds the helper programs of hack/bench, output path to package name, as the
// Makefile builds the binary.
func buildHelpers(ctx context.Context, helpers map[string]string) error {
	for out, pkg := range helpers {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, "github.com/operator-sweeper/operator-sweeper/hack/bench/"+pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build hack/bench/%s (run from the repository, as make bench does): %w\n%s", pkg, err, msg)
		}
	}
	return nil
}

// measureScales seeds each scale and measures at it.
func (b *bench) measureScales(ctx context.Context, env *environment) ([]result, error) {
	s, err := newSeeder(b.cluster.Config, b.cfg.seed)
	if err != nil {
		return nil, err
	}
	var results []result
	for _, scale := range b.cfg.scales {
		start := time.Now()
		if err := s.seedTo(ctx, scale); err != nil {
			return nil, err
		}
		env.seedTimes = append(env.seedTimes, time.Since(start))
		if b.cfg.hold {
			continue
		}
		if len(env.loads) == 0 {
			env.loads = append(env.loads, loadavg())
		}
		logf("measuring at %s (%d objects seeded)", scaleText(scale), b.cfg.seed.objects(scale))
		rs, err := b.measureScale(ctx, b.measurements(scale))
		if err != nil {
			return nil, err
		}
		for i := range rs {
			rs[i].scale, rs[i].objects = scale, b.cfg.seed.objects(scale)
		}
		results = append(results, rs...)
	}
	if b.cfg.hold {
		logf("seeded %d objects; holding the cluster until interrupted: --kubeconfig %s", b.cfg.seed.objects(b.cfg.scales[len(b.cfg.scales)-1]), b.kubeconfig)
		<-ctx.Done()
		return nil, nil
	}
	env.loads = append(env.loads, loadavg())
	return results, nil
}

func newProbe(ctx context.Context, c *cluster.Cluster) (*probe, error) {
	pid, err := findAPIServer(os.Getenv("KUBEBUILDER_ASSETS"), c.Config.Host)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	p := &probe{pid: pid, metrics: kube.Discovery().RESTClient()}
	return p, p.calibrate(ctx)
}

// stuckArgs make every Terminating object stuck, past --min-terminating-age, as in a cluster an
// operator was uninstalled from a while ago: each is a finding of stuck-terminating and of
// orphaned-finalizers.
var stuckArgs = []string{"--min-terminating-age=0s"}

// The sweeps measured: the quiet path (the objects deleted seconds ago are not stuck yet), and
// the stuck one as JSON and as the table an admin reads.
const (
	quietSweep      = "sweep"
	stuckSweep      = "sweep, stuck"
	stuckTableSweep = "sweep, stuck, table"
)

// measurements are what runs at a scale: the floor, the sweeps and, at the scales asked, kubectl.
func (b *bench) measurements(scale float64) []measurement {
	stuck := 2 * b.cfg.seed.terminating(scale)
	ms := []measurement{b.floorMeasurement(), b.sweepMeasurement(quietSweep, nil, "json", 0),
		b.sweepMeasurement(stuckSweep, stuckArgs, "json", stuck), b.sweepMeasurement(stuckTableSweep, stuckArgs, "table", stuck)}
	if len(b.cfg.sweepArgs) > 0 {
		ms = append(ms, b.sweepMeasurement(sweepVariant(b.cfg.sweepArgs), b.cfg.sweepArgs, "json", 0))
	}
	if slices.Contains(b.cfg.kubectlScales, scale) {
		ms = append(ms, b.kubectlMeasurement())
	}
	return ms
}

// measureScale runs every measurement reps times, interleaved and in a rotating order, so that
// a slow moment of the machine or a cold cache does not fall on one of them only.
func (b *bench) measureScale(ctx context.Context, ms []measurement) ([]result, error) {
	results := make([]result, len(ms))
	for rep := range b.cfg.reps {
		for k := range ms {
			i := (rep + k) % len(ms)
			got, err := b.measureOnce(ctx, ms[i])
			if err != nil {
				return nil, fmt.Errorf("%s, run %d: %w", ms[i].name, rep+1, err)
			}
			logf("  %-8s run %d: %s, %d requests, API server CPU %s, peak RSS %d MiB",
				ms[i].name, rep+1, got.wall.Round(time.Millisecond), got.requests, got.apiserverCPU, got.maxRSS>>20)
			if results[i].runs == 0 {
				results[i] = result{measurement: ms[i].name, best: got}
			} else {
				results[i].best = results[i].best.best(got)
			}
			results[i].runs++
		}
	}
	return results, nil
}

// measureOnce runs a measurement's child once, under maxrss, when the API server idles, and reads
// what it cost. The request counter is scraped outside the CPU window: the scrape costs CPU too.
func (b *bench) measureOnce(ctx context.Context, m measurement) (sample, error) {
	var s sample
	if err := b.probe.settle(ctx); err != nil {
		return s, err
	}
	inner, check, err := m.command(b.dir)
	if err != nil {
		return s, err
	}
	defer closeFiles(inner)
	usageFile := filepath.Join(b.dir, "usage.json")
	cmd := exec.CommandContext(ctx, b.maxrssBin, append([]string{"-o", usageFile, inner.Path}, inner.Args[1:]...)...)
	cmd.Env, cmd.Stdout, cmd.Stderr = inner.Env, inner.Stdout, inner.Stderr
	reqBefore, err := b.probe.requests(ctx)
	if err != nil {
		return s, err
	}
	cpuBefore, err := b.probe.cpu()
	if err != nil {
		return s, err
	}
	start := time.Now()
	runErr := cmd.Run()
	s.wall = time.Since(start)
	cpuAfter, err := b.probe.cpu()
	if err != nil {
		return s, err
	}
	reqAfter, err := b.probe.requests(ctx)
	if err != nil {
		return s, err
	}
	if runErr != nil {
		return s, fmt.Errorf("%s: %w%s", inner.Path, runErr, stderrTail(inner))
	}
	s.apiserverCPU = cpuAfter - cpuBefore
	s.requests = reqAfter - reqBefore - b.probe.scrapeRequests
	if s.maxRSS, err = readMaxRSS(usageFile); err != nil {
		return s, err
	}
	return s, check(&s)
}

// readMaxRSS reads what maxrss wrote, in bytes.
func readMaxRSS(file string) (int64, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("peak RSS: %w", err)
	}
	var u struct {
		MaxRSSKiB int64 `json:"maxRSSKiB"`
	}
	if err := json.Unmarshal(data, &u); err != nil {
		return 0, fmt.Errorf("peak RSS in %s: %w", file, err)
	}
	return u.MaxRSSKiB << 10, nil
}

// stderrTail is the end of a failed child's standard error, when it went to a file.
func stderrTail(cmd *exec.Cmd) string {
	f, ok := cmd.Stderr.(*os.File)
	if !ok {
		return ""
	}
	data, _ := os.ReadFile(f.Name())
	return "\n" + string(data[max(0, len(data)-2000):])
}

// floorMeasurement is hack/bench/floor.
func (b *bench) floorMeasurement() measurement {
	return measurement{name: "floor", command: func(dir string) (*exec.Cmd, func(*sample) error, error) {
		stderr, err := os.Create(filepath.Join(dir, "floor.stderr"))
		if err != nil {
			return nil, nil, err
		}
		cmd := exec.Command(b.floorBin, b.cfg.floor.args(b.kubeconfig)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, stderr
		return cmd, func(s *sample) error {
			var res struct {
				Objects  int64 `json:"objects"`
				Requests int64 `json:"requests"`
			}
			if err := json.Unmarshal(out.Bytes(), &res); err != nil {
				return fmt.Errorf("the floor's output %q: %w", out.String(), err)
			}
			s.objects, s.clientRequests = int(res.Objects), res.Requests
			return nil
		}, nil
	}}
}

// sweepVariant names the sweep with extra flags.
func sweepVariant(args []string) string { return "sweep " + strings.Join(args, " ") }

// sweepMeasurement is the operator-sweeper binary with its defaults and extra, the report in
// format (json or table) to a file. A JSON report must list at least findings findings, each
// counted in its summary.
func (b *bench) sweepMeasurement(name string, extra []string, format string, findings int) measurement {
	return measurement{name: name, command: func(dir string) (*exec.Cmd, func(*sample) error, error) {
		report := filepath.Join(dir, "report."+format)
		out, err := os.Create(report)
		if err != nil {
			return nil, nil, err
		}
		stderr, err := os.Create(filepath.Join(dir, "sweep.stderr"))
		if err != nil {
			out.Close()
			return nil, nil, err
		}
		cmd := exec.Command(b.cfg.sweeper, append([]string{"--kubeconfig", b.kubeconfig, "-o", format}, extra...)...)
		cmd.Stdout, cmd.Stderr = out, stderr
		return cmd, func(s *sample) error {
			data, err := os.ReadFile(report)
			if err != nil {
				return err
			}
			if format == "table" {
				return readTable(data, s)
			}
			var r struct {
				Summary struct {
					Scanned    int  `json:"scanned"`
					Findings   int  `json:"findings"`
					Incomplete bool `json:"incomplete"`
				} `json:"summary"`
				Findings []json.RawMessage `json:"findings"`
				Errors   []json.RawMessage `json:"errors"`
			}
			if err := json.Unmarshal(data, &r); err != nil {
				return fmt.Errorf("the sweep's report: %w", err)
			}
			if r.Summary.Incomplete || len(r.Errors) > 0 {
				return fmt.Errorf("the sweep was incomplete: %d errors", len(r.Errors))
			}
			if len(r.Findings) != r.Summary.Findings || len(r.Findings) < findings {
				return fmt.Errorf("the report lists %d findings and counts %d, of at least %d: one of each rule per object stuck", len(r.Findings), r.Summary.Findings, findings)
			}
			s.objects, s.findings = r.Summary.Scanned, len(r.Findings)
			return nil
		}, nil
	}}
}

// readTable reads what a sweep printed as a table: how many lines, and, from its summary line,
// how many objects it scanned.
func readTable(data []byte, s *sample) error {
	s.lines = bytes.Count(data, []byte("\n"))
	for line := range strings.SplitSeq(string(data), "\n") {
		if _, after, ok := strings.Cut(line, " in "); ok && strings.Contains(line, " findings (") {
			if _, err := fmt.Sscan(after, &s.objects); err != nil {
				return fmt.Errorf("the table's summary line %q: %w", line, err)
			}
			return nil
		}
	}
	return errors.New("the table has no summary line")
}

// kubectlScript is what admins run to dump a cluster: every listable resource, one kubectl after
// the other. It prints, on standard error last, how many kubectl processes it ran.
const kubectlScript = `
set -u
rc=0 n=1
for r in $("$KUBECTL" api-resources --verbs=list -o name); do
  "$KUBECTL" get "$r" -A -o json >/dev/null || rc=1
  n=$((n+1))
done
echo "invocations=$n" >&2
exit $rc
`

// kubectlMeasurement is the kubectl script, run by bash, with a HOME of its own: the first run
// fills kubectl's discovery cache there, the next ones use it, as an admin's would.
func (b *bench) kubectlMeasurement() measurement {
	return measurement{name: "kubectl", command: func(dir string) (*exec.Cmd, func(*sample) error, error) {
		stderr, err := os.Create(filepath.Join(dir, "kubectl.stderr"))
		if err != nil {
			return nil, nil, err
		}
		cmd := exec.Command("bash", "-c", kubectlScript)
		cmd.Env = append(os.Environ(), "KUBECTL="+b.cfg.kubectl, "KUBECONFIG="+b.kubeconfig, "HOME="+filepath.Join(dir, "home"))
		cmd.Stderr = stderr
		return cmd, func(s *sample) error {
			data, err := os.ReadFile(stderr.Name())
			if err != nil {
				return err
			}
			_, after, ok := strings.Cut(string(data), "invocations=")
			if !ok {
				return errors.New("the kubectl script did not say how many processes it ran")
			}
			_, err = fmt.Sscan(after, &s.invocations)
			return err
		}, nil
	}}
}

// closeFiles closes the files a child wrote to: exec closes only those it opened itself.
func closeFiles(cmd *exec.Cmd) {
	for _, w := range []any{cmd.Stdout, cmd.Stderr} {
		if f, ok := w.(*os.File); ok {
			f.Close()
		}
	}
}
