// Command releasefloor is the least work any tool that releases stuck objects must do: it lists
// the metadata of one resource in every namespace, page by page, and sends, for each object being
// deleted that holds a finalizer, one JSON patch (a test of its UID, then the removal of its
// finalizers), a few at a time. It keeps no pre-image, confirms nothing, records no Event: it is
// the floor hack/bench/repair measures operator-sweeper's repair against. It prints, as JSON, how
// many objects it listed and released.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/pager"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "releasefloor:", err)
		os.Exit(1)
	}
}

// result is what the floor prints.
type result struct {
	Listed   int64 `json:"listed"`
	Released int64 `json:"released"`
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("releasefloor", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
	group := fs.String("group", "", "the resource's API group")
	version := fs.String("version", "", "the resource's version")
	resource := fs.String("resource", "", "the resource")
	concurrency := fs.Int("concurrency", 8, "patches in flight at once")
	pageSize := fs.Int64("page-size", 500, "objects per list request")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("load %s: %w", *kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000 // as operator-sweeper's defaults
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	gvr := schema.GroupVersionResource{Group: *group, Version: *version, Resource: *resource}
	var res result
	var released atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(*concurrency)
	list := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.Resource(gvr).List(ctx, opts)
	})
	list.PageSize = *pageSize
	err = list.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return fmt.Errorf("list %s: got %T", gvr, obj)
		}
		res.Listed++
		if m.DeletionTimestamp == nil || len(m.Finalizers) == 0 {
			return nil
		}
		namespace, name, uid := m.Namespace, m.Name, m.UID
		g.Go(func() error {
			patch, err := json.Marshal([]map[string]any{
				{"op": "test", "path": "/metadata/uid", "value": uid},
				{"op": "remove", "path": "/metadata/finalizers"},
			})
			if err != nil {
				return err
			}
			if _, err := client.Resource(gvr).Namespace(namespace).Patch(gctx, name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("release %s/%s: %w", namespace, name, err)
			}
			released.Add(1)
			return nil
		})
		return nil
	})
	if werr := g.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	res.Released = released.Load()
	return json.NewEncoder(os.Stdout).Encode(res)
}
