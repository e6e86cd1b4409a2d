// Command bench measures operator-sweeper at cluster scale on the real API server that
// test/cluster runs (kube-apiserver and etcd from hack/testbin.sh): it seeds CRDs, custom objects
// (half of them Terminating) and pods, then times, side by side and interleaved, best of N:
//
//   - floor:   the least any tool must do, a concurrent metadata-only list of every resource
//     (client-go's metadata client): hack/bench/floor, a program of its own, so that its peak
//     RSS is its own;
//   - sweep:   the operator-sweeper binary with every default rule, `-o json`;
//   - kubectl: the script admins use, `kubectl get <resource> -A -o json` once per listable
//     resource, one after the other.
//
// Every child runs under hack/bench/maxrss, which reports its peak RSS. It prints a Markdown
// table of wall time, requests, the API server's CPU time and peak RSS, with the machine and the
// date, and the targets of issue 15 as PASS/FAIL lines; with --out it writes the same to a file.
// `make bench` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runBench(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	sweeper string
	kubectl string
	out     string
	// seed is what one unit of scale holds; the scales are in units, ascending.
	seed   seedSpec
	scales []float64
	// kubectlScales are the scales the kubectl loop runs at.
	kubectlScales []float64
	reps          int
	floor         floorSpec
	// sweepArgs, if any, are flags for a second sweep, measured next to the one with defaults.
	sweepArgs []string
	// hold seeds the scales and keeps the cluster running, measuring nothing, until interrupted:
	// for a profile (--profile) or a look at it by hand.
	hold bool
}

// floorSpec is how the floor lists: hack/bench/floor's flags.
type floorSpec struct {
	concurrency int
	qps         float64
	pageSize    int64
}

// args are hack/bench/floor's arguments for the cluster of kubeconfig.
func (s floorSpec) args(kubeconfig string) []string {
	return []string{
		"--kubeconfig", kubeconfig,
		"--concurrency", fmt.Sprint(s.concurrency),
		"--qps", fmt.Sprint(s.qps),
		"--page-size", fmt.Sprint(s.pageSize),
	}
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var c config
	var scales, kubectlScales, sweepArgs string
	fs.StringVar(&c.sweeper, "sweeper", "bin/operator-sweeper", "the operator-sweeper binary (make build)")
	fs.StringVar(&c.kubectl, "kubectl", "", "the kubectl binary (default: kubectl in $KUBEBUILDER_ASSETS, which `hack/testbin.sh kubectl` builds)")
	fs.StringVar(&c.out, "out", "", "also write the results, with the machine and the date, to this Markdown file")
	fs.IntVar(&c.seed.crds, "crds", 50, "CRDs per scale (the same CRDs at every scale)")
	fs.IntVar(&c.seed.objectsPerCRD, "objects", 1000, "objects of each CRD per unit of scale; half of them Terminating")
	fs.IntVar(&c.seed.pods, "pods", 5000, "pods per unit of scale; one in ten labelled olm.catalogSource")
	fs.IntVar(&c.seed.namespaces, "namespaces", 10, "namespaces the objects and pods are spread over")
	fs.StringVar(&scales, "scales", "0.1,1,2", "units of scale to measure at, ascending")
	// At 2× one kubectl loop takes about a minute: three would not fit in make bench's 15 minutes.
	fs.StringVar(&kubectlScales, "kubectl-scales", "0.1,1", "the scales the kubectl loop runs at too (it is the slowest by far)")
	fs.StringVar(&sweepArgs, "sweep-args", "", "flags, space-separated, for a second sweep measured next to the one with defaults (e.g. \"--qps=1000 --burst=1000\")")
	fs.IntVar(&c.reps, "reps", 3, "runs of each measurement, interleaved; the best counts")
	fs.IntVar(&c.floor.concurrency, "floor-concurrency", 8, "lists in parallel in the floor (operator-sweeper's default --concurrency)")
	fs.Float64Var(&c.floor.qps, "floor-qps", 1000, "client QPS (and burst) of the floor")
	fs.Int64Var(&c.floor.pageSize, "floor-page-size", 500, "page size of the floor's lists")
	fs.BoolVar(&c.hold, "hold", false, "seed the scales, then keep the cluster running and print its kubeconfig, measuring nothing, until interrupted (for operator-sweeper --profile)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var err error
	if c.scales, err = parseScales(scales); err != nil {
		return c, fmt.Errorf("--scales: %w", err)
	}
	if c.kubectlScales, err = parseScales(kubectlScales); err != nil {
		return c, fmt.Errorf("--kubectl-scales: %w", err)
	}
	c.sweepArgs = strings.Fields(sweepArgs)
	if c.kubectl == "" {
		c.kubectl = filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	}
	return c, nil
}

func runBench(ctx context.Context, args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	if err := checkBinaries(cfg); err != nil {
		return err
	}
	results, env, err := measureAll(ctx, cfg)
	if err != nil || cfg.hold {
		return err
	}
	doc := render(cfg, env, results)
	fmt.Print(doc)
	if cfg.out == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(cfg.out), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", cfg.out, err)
	}
	if err := os.WriteFile(cfg.out, []byte(doc), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", cfg.out, err)
	}
	fmt.Fprintln(os.Stderr, "bench: wrote", cfg.out)
	return nil
}

// checkBinaries fails early, before the minutes of seeding, when a binary is missing.
func checkBinaries(cfg config) error {
	for _, b := range []struct{ path, hint string }{
		{cfg.sweeper, "make build"},
		{cfg.kubectl, "hack/testbin.sh kubectl"},
	} {
		if _, err := os.Stat(b.path); err != nil {
			return fmt.Errorf("%s is missing (%s builds it): %w", b.path, b.hint, err)
		}
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

// parseScales parses a comma-separated list of positive numbers.
func parseScales(s string) ([]float64, error) {
	var out []float64
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// scaleText is how a scale reads: 0.1×, 2×.
func scaleText(scale float64) string { return strconv.FormatFloat(scale, 'g', -1, 64) + "×" }
