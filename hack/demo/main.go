// Command demo starts a real kube-apiserver and etcd, seeds the field cases of uninstalled and
// broken operators (OLM v0, logging-operator, a lost node), and prints operator-sweeper's dry-run
// report of it. With --real, kube-controller-manager, kube-scheduler, kwok nodes and OLM v0 run
// too, and make the debris themselves.
// `make demo` and `make demo-real` build everything and run it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

func main() {
	sweeper := flag.String("sweeper", "bin/operator-sweeper", "the operator-sweeper binary to run")
	keep := flag.Bool("keep", false, "keep the cluster running after the report, until interrupted")
	withControllers := flag.Bool("real", false, "run the real controllers and OLM, and let them make the debris (needs `hack/testbin.sh all`)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *sweeper, *keep, *withControllers, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, sweeper string, keep, withControllers bool, extraArgs []string) error {
	components, seed := cluster.Components{}, cluster.SeedDemo
	// The debris is seconds old, so the demo does not wait for the default --min-terminating-age,
	// --catalog-pod-slack and --min-age.
	young := []string{"--min-terminating-age=0s", "--catalog-pod-slack=0s", "--min-age=0s"}
	what := "kube-apiserver and etcd"
	if withControllers {
		what = "kube-apiserver, etcd, kube-controller-manager, kube-scheduler and OLM"
		components = cluster.Components{Controllers: true, OLM: true}
		seed = func(ctx context.Context, c *cluster.Cluster) error {
			return cluster.SeedReal(ctx, c, func(s string) { fmt.Fprintln(os.Stderr, "demo:", s) })
		}
		// The node is lost for seconds, not minutes.
		young = append(young, "--node-not-ready-for=20s")
	}
	fmt.Fprintf(os.Stderr, "demo: starting %s …\n", what)
	c, err := cluster.StartWith(components)
	if err != nil {
		return err
	}
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "demo: stop the cluster:", err)
		}
	}()
	if err := seed(ctx, c); err != nil {
		return err
	}
	args := slices.Concat([]string{"--kubeconfig", c.Kubeconfig}, young, []string{"--log-level=warn"}, extraArgs)
	fmt.Fprintf(os.Stderr, "demo: seeded sample debris; running: %s %v\n\n", sweeper, args)
	cmd := exec.CommandContext(ctx, sweeper, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", sweeper, err)
	}
	if keep {
		fmt.Fprintf(os.Stderr, "\ndemo: the cluster keeps running; try:\n  %s --kubeconfig %s %s -o yaml\nPress Ctrl-C to stop it.\n", sweeper, c.Kubeconfig, strings.Join(young, " "))
		<-ctx.Done()
	}
	return nil
}
