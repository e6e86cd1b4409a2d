// Command floor is the least work any tool that looks at every object of a cluster must do: it
// discovers the listable resources, lists the metadata of every one of them with client-go's
// metadata client, concurrently and page by page, keeps nothing, and prints, as JSON, how many
// resources, objects and requests that took. hack/bench runs it as a child of its own, with
// nothing else linked in, so that its peak RSS is a metadata lister's alone.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

// options are how the floor lists.
type options struct {
	concurrency int
	qps         float64
	pageSize    int64
}

// result is what the floor prints.
type result struct {
	Resources int   `json:"resources"`
	Objects   int64 `json:"objects"`
	// Requests are counted by the floor's own transport: discovery and every page.
	Requests int64 `json:"requests"`
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
	var o options
	fs.IntVar(&o.concurrency, "concurrency", 8, "lists in parallel")
	fs.Float64Var(&o.qps, "qps", 1000, "client QPS and burst")
	fs.Int64Var(&o.pageSize, "page-size", 500, "objects per list request")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("load %s: %w", *kubeconfig, err)
	}
	res, err := floor(ctx, cfg, o)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// floor discovers the listable resources, then lists the metadata of every one of them, pages of
// o.pageSize, o.concurrency at a time, and counts.
func floor(ctx context.Context, base *rest.Config, o options) (result, error) {
	var res result
	var requests, objects atomic.Int64
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = float32(o.qps), int(o.qps)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &requests} })
	resources, err := listableResources(cfg)
	if err != nil {
		return res, err
	}
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		return res, fmt.Errorf("metadata client: %w", err)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(o.concurrency)
	for _, gvr := range resources {
		g.Go(func() error {
			n, err := listAll(ctx, client.Resource(gvr), o.pageSize)
			objects.Add(n)
			if err != nil {
				return fmt.Errorf("list %s: %w", gvr, err)
			}
			return nil
		})
	}
	err = g.Wait()
	return result{Resources: len(resources), Objects: objects.Load(), Requests: requests.Load()}, err
}

// listableResources are the preferred version of every resource that can be listed: what the
// sweeper and kubectl api-resources --verbs=list discover.
func listableResources(cfg *rest.Config) ([]schema.GroupVersionResource, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		return nil, fmt.Errorf("discover resources: %w", err)
	}
	var out []schema.GroupVersionResource
	for _, list := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list"}}, lists) {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		for _, r := range list.APIResources {
			if !strings.Contains(r.Name, "/") { // subresources are not listed
				out = append(out, gv.WithResource(r.Name))
			}
		}
	}
	return out, nil
}

// listAll lists every object of a resource in every namespace, page by page, and returns how
// many there were.
func listAll(ctx context.Context, client metadata.ResourceInterface, pageSize int64) (int64, error) {
	var n int64
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		list, err := client.List(ctx, opts)
		if err != nil {
			return n, fmt.Errorf("page after %d objects: %w", n, err)
		}
		n += int64(len(list.Items))
		if list.Continue == "" {
			return n, nil
		}
		opts.Continue = list.Continue
	}
}

// countingTransport counts the requests that reach the network.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.next.RoundTrip(req)
}
