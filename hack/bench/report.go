package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// environment is what the figures depend on besides the code: the machine and the versions.
type environment struct {
	date      time.Time
	cpus      int
	cpuModel  string
	memory    string
	kernel    string
	goVersion string
	apiserver string
	sweeper   string
	kubectl   string
	seedTimes []time.Duration
	// loads are /proc/loadavg before the first and after the last measurement: the bench is not
	// alone on a shared machine.
	loads []string
}

// loadavg is the 1, 5 and 15 minute load averages.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}

// describe reads the machine and the versions of what runs.
func describe(ctx context.Context, cfg config, c *cluster.Cluster) (environment, error) {
	env := environment{
		date:      time.Now().UTC(),
		cpus:      runtime.NumCPU(),
		cpuModel:  procField("/proc/cpuinfo", "model name"),
		memory:    procField("/proc/meminfo", "MemTotal"),
		goVersion: runtime.Version(),
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		env.kernel = strings.TrimSpace(string(data))
	}
	v, err := c.Kube.Discovery().ServerVersion()
	if err != nil {
		return env, fmt.Errorf("the API server's version: %w", err)
	}
	env.apiserver = v.GitVersion
	env.sweeper = firstLine(exec.CommandContext(ctx, cfg.sweeper, "--version"))
	env.kubectl = firstLine(exec.CommandContext(ctx, cfg.kubectl, "version", "--client"))
	return env, nil
}

// procField is the value of the first "key: value" line of a /proc file with key.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func firstLine(cmd *exec.Cmd) string {
	out, err := cmd.Output()
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return line
}

// Targets of issue 15 (the quiet path), and of issue 23 (the stuck one).
const (
	maxSweepTimeOverFloor  = 1.3
	maxSweepRSSMiB         = 150
	maxTimeGrowthAt2x      = 2.1
	maxSweepCPUOverFloor   = 1.5
	mib                    = 1 << 20
	rssTargetScale         = 1.0 // 55,000 objects
	growthBase, growthNext = 1.0, 2.0
	// The quiet path no worse than before issue 23.
	maxQuietTimeOverFloor = 1.15
	maxQuietRSSMiB        = 80
	// The stuck path: as close to the floor as the quiet one, in memory bounded by findings.
	maxStuckTimeOverFloor = 1.3
	maxStuckTableLines    = 400
)

// maxStuckRSSMiB is the peak RSS a stuck sweep may take at a scale: 150 MiB at 55,000 objects,
// 256 MiB at 110,000.
var maxStuckRSSMiB = map[float64]float64{1: 150, 2: 256}

// targetScales are those the time and CPU targets are set at: 55,000 and 110,000 objects.
var targetScales = []float64{1, 2}

// render is the Markdown document of the results: the machine, how each figure is measured, the
// table and the targets.
func render(cfg config, env environment, results []result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# operator-sweeper at cluster scale (`make bench`)\n\n")
	b.WriteString("Written by `make bench` (`hack/bench`): change the program, not this file.\n\n")
	fmt.Fprintf(&b, "Run on %s: %d CPUs (%s), %s memory, Linux %s, %s.\n", env.date.Format("2006-01-02 15:04 MST"), env.cpus, env.cpuModel, env.memory, env.kernel, env.goVersion)
	fmt.Fprintf(&b, "kube-apiserver %s and etcd from `hack/testbin.sh`, on the same machine; %s; kubectl %s.\n\n", env.apiserver, env.sweeper, strings.TrimPrefix(env.kubectl, "Client Version: "))
	writeSeed(&b, cfg, env)
	writeMethod(&b, cfg)
	writeTable(&b, results)
	if len(env.loads) > 0 {
		fmt.Fprintf(&b, "\nLoad average (1, 5, 15 min) before the first measurement: %s; after the last: %s.\n", env.loads[0], env.loads[len(env.loads)-1])
	}
	b.WriteString("\n")
	for _, t := range targets(results) {
		b.WriteString(t + "\n")
	}
	return b.String()
}

func writeSeed(b *strings.Builder, cfg config, env environment) {
	s := cfg.seed
	fmt.Fprintf(b, "Each unit of scale is %d CRDs × %d objects (half of them Terminating: created with a finalizer, then deleted; finalizers mixed: logging-operator's, OLM's csv-cleanup, an unknown example.com one) and %d Pending pods (one in ten labelled `olm.catalogSource`), over %d namespaces; the cluster also has test/cluster's OLM and logging-operator CRDs. ",
		s.crds, s.objectsPerCRD, s.pods, s.namespaces)
	var times []string
	for i, t := range env.seedTimes {
		times = append(times, fmt.Sprintf("%s in %s", scaleText(cfg.scales[i]), t.Round(time.Second)))
	}
	fmt.Fprintf(b, "Seeded (%d parallel creates): %s.\n\n", seedWorkers, strings.Join(times, ", then "))
}

func writeMethod(b *strings.Builder, cfg config) {
	fmt.Fprintf(b, "How each figure is measured (best of %d runs, interleaved in a rotating order; each figure is its own best; every run starts once the API server has collected its garbage (`/debug/pprof/heap?gc=1`) and idles: its own collector, over a heap of every object, would otherwise fall in whichever run reaches its threshold):\n\n", cfg.reps)
	fmt.Fprintf(b, "- **floor**: `hack/bench/floor`, a program of its own: discovery, then client-go's metadata client lists every listable resource, %d at a time, pages of %d, QPS and burst %g; it counts objects and keeps nothing.\n", cfg.floor.concurrency, cfg.floor.pageSize, cfg.floor.qps)
	b.WriteString("- **sweep**: `bin/operator-sweeper --kubeconfig … -o json` with every other flag at its default (every enabled rule, dry run), the report to a file: the quiet path, as the objects deleted seconds before are not stuck yet.\n")
	fmt.Fprintf(b, "- **%s**: the same with `%s`: every Terminating object is stuck, a finding of stuck-terminating and one of orphaned-finalizers, as in a cluster an operator was uninstalled from; the report must list every one.\n", stuckSweep, strings.Join(stuckArgs, " "))
	fmt.Fprintf(b, "- **%s**: the same with `-o table`, which shows similar findings as one row; its lines are counted.\n", stuckTableSweep)
	if len(cfg.sweepArgs) > 0 {
		fmt.Fprintf(b, "- **%s**: the same with `%s`.\n", sweepVariant(cfg.sweepArgs), strings.Join(cfg.sweepArgs, " "))
	}
	fmt.Fprintf(b, "- **kubectl**: `for r in $(kubectl api-resources --verbs=list -o name); do kubectl get \"$r\" -A -o json >/dev/null; done` in bash (kubectl pages by 500 by default); its discovery cache warm after the first run. Run at %s only: at 2× one loop takes about a minute, and three would not fit in make bench's 15 minutes.\n", scalesText(cfg.kubectlScales))
	b.WriteString("- **wall**: from the child's start to its exit, process start-up included.\n")
	b.WriteString("- **requests**: the growth of the API server's `apiserver_request_total` (summed over every label) from just before to just after the run, less the scrape itself; for the floor, the requests it counted in its own transport in parentheses.\n")
	b.WriteString("- **API server CPU**: utime + stime of the kube-apiserver process (`/proc/<pid>/stat`) from just before to just after the run.\n")
	b.WriteString("- **peak RSS**: `ru_maxrss` from wait4, read by `hack/bench/maxrss`, a launcher that links only the standard library, between hack/bench and each child: Go starts children with vfork, and Linux starts a child's `ru_maxrss` at its parent's high-water mark, which for hack/bench after seeding is larger than what is measured. For the bash loop it is that of its largest kubectl.\n\n")
}

func scalesText(scales []float64) string {
	var s []string
	for _, n := range scales {
		s = append(s, scaleText(n))
	}
	return strings.Join(s, " and ")
}

func writeTable(b *strings.Builder, results []result) {
	b.WriteString("| scale | objects seeded | run | objects listed | findings | wall | requests | API server CPU | peak RSS | wall ÷ floor | API server CPU ÷ floor |\n")
	b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		f, _ := find(results, r.scale, "floor")
		listed, requests := "–", fmt.Sprint(r.best.requests)
		switch r.measurement {
		case "floor":
			listed = count(r.best.objects)
			requests = fmt.Sprintf("%d (%d)", r.best.requests, r.best.clientRequests)
		case "kubectl":
			listed = fmt.Sprintf("– (%d kubectl runs)", r.best.invocations)
		default: // the sweeps
			listed = count(r.best.objects)
		}
		findings := "–"
		switch {
		case r.best.lines > 0:
			findings = fmt.Sprintf("(%s lines)", count(r.best.lines))
		case r.measurement != "floor" && r.measurement != "kubectl":
			findings = count(r.best.findings)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %.2f s | %s | %.2f s | %d MiB | %s | %s |\n",
			scaleText(r.scale), count(r.objects), r.measurement, listed, findings, r.best.wall.Seconds(), requests,
			r.best.apiserverCPU.Seconds(), r.best.maxRSS/mib,
			ratio(r.best.wall, f.best.wall), ratio(r.best.apiserverCPU, f.best.apiserverCPU))
	}
}

// count writes n with thousands separators: 110,276.
func count(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

func find(results []result, scale float64, name string) (result, bool) {
	for _, r := range results {
		if r.scale == scale && r.measurement == name {
			return r, true
		}
	}
	return result{}, false
}

// targets are the PASS/FAIL lines of the targets that the scales measured can judge.
func targets(results []result) []string {
	var out []string
	for _, scale := range targetScales {
		sweep, ok1 := find(results, scale, "sweep")
		floor, ok2 := find(results, scale, "floor")
		if !ok1 || !ok2 {
			continue
		}
		out = append(out, check(fmt.Sprintf("sweep time ≤ %.1f× the floor at %s objects", maxSweepTimeOverFloor, count(sweep.objects)),
			float64(sweep.best.wall)/float64(floor.best.wall), maxSweepTimeOverFloor, "×"))
		out = append(out, check(fmt.Sprintf("API server CPU of a sweep ≤ %.1f× that of the floor at %s objects", maxSweepCPUOverFloor, count(sweep.objects)),
			float64(sweep.best.apiserverCPU)/float64(floor.best.apiserverCPU), maxSweepCPUOverFloor, "×"))
	}
	if sweep, ok := find(results, rssTargetScale, "sweep"); ok {
		out = append(out, check(fmt.Sprintf("peak RSS of the sweep ≤ %d MiB at %s objects", maxSweepRSSMiB, count(sweep.objects)),
			float64(sweep.best.maxRSS)/mib, maxSweepRSSMiB, " MiB"))
	}
	base, ok1 := find(results, growthBase, "sweep")
	next, ok2 := find(results, growthNext, "sweep")
	if ok1 && ok2 {
		out = append(out, check(fmt.Sprintf("sweep time at %s objects ≤ %.1f× that at %s", count(next.objects), maxTimeGrowthAt2x, count(base.objects)),
			float64(next.best.wall)/float64(base.best.wall), maxTimeGrowthAt2x, "×"))
	}
	return append(out, stuckTargets(results)...)
}

// stuckTargets are the PASS/FAIL lines of issue 23: the stuck sweeps, as JSON and as a table, in
// time and memory, the table's length, and the quiet path no worse than before.
func stuckTargets(results []result) []string {
	var out []string
	if quiet, ok := find(results, rssTargetScale, quietSweep); ok {
		floor, _ := find(results, rssTargetScale, "floor")
		out = append(out,
			check(fmt.Sprintf("quiet sweep time ≤ %.2f× the floor at %s objects", maxQuietTimeOverFloor, count(quiet.objects)),
				float64(quiet.best.wall)/float64(floor.best.wall), maxQuietTimeOverFloor, "×"),
			check(fmt.Sprintf("peak RSS of the quiet sweep ≤ %d MiB at %s objects", maxQuietRSSMiB, count(quiet.objects)),
				float64(quiet.best.maxRSS)/mib, maxQuietRSSMiB, " MiB"))
	}
	for _, scale := range targetScales {
		floor, ok := find(results, scale, "floor")
		if !ok {
			continue
		}
		for _, name := range []string{stuckSweep, stuckTableSweep} {
			stuck, ok := find(results, scale, name)
			if !ok {
				continue
			}
			json, _ := find(results, scale, stuckSweep)
			what := fmt.Sprintf("%s at %s objects with %s findings", name, count(stuck.objects), count(json.best.findings))
			out = append(out,
				check(fmt.Sprintf("time of the %s ≤ %.1f× the floor", what, maxStuckTimeOverFloor), float64(stuck.best.wall)/float64(floor.best.wall), maxStuckTimeOverFloor, "×"),
				check(fmt.Sprintf("peak RSS of the %s ≤ %.0f MiB", what, maxStuckRSSMiB[scale]), float64(stuck.best.maxRSS)/mib, maxStuckRSSMiB[scale], " MiB"))
			if name == stuckTableSweep {
				out = append(out, check(fmt.Sprintf("lines of the %s ≤ %d", what, maxStuckTableLines), float64(stuck.best.lines), maxStuckTableLines, ""))
			}
		}
	}
	return out
}

func check(what string, got, limit float64, unit string) string {
	verdict := "PASS"
	if got > limit {
		verdict = "FAIL"
	}
	return fmt.Sprintf("- %s: %s (%.2f%s)", verdict, what, got, unit)
}
