package sweeper

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/operator-sweeper/operator-sweeper/report"
)

// Write is one request to the API server, guarded by preconditions that it carries: a JSON patch
// that tests what the change rests on, a delete with the UID and resourceVersion read, a create
// (which fails if the name is taken), or a server-side apply of the fields it owns with the UID and
// resourceVersion read. An Action makes it from the object as read.
type Write struct {
	Resource        schema.GroupVersionResource
	Namespace, Name string
	// One of:
	patch  []jsonPatchOp
	delete *metav1.DeleteOptions
	create *unstructured.Unstructured
	apply  *unstructured.Unstructured
}

// jsonPatchOp is an operation of a JSON patch (RFC 6902).
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// Writer sends every write operator-sweeper makes, a sweep's and a restore's alike: it is the only
// code that changes the cluster. It sends nothing under --dry-run=client, and everything with
// dryRun=All under --dry-run=server; the preconditions are the Write's.
type Writer struct {
	// Metadata sends patches and deletes, whose answers need no more than metadata.
	Metadata metadata.Interface
	// Dynamic sends creates and applies, which carry whole objects.
	Dynamic dynamic.Interface
	Mode    report.DryRunMode
	// FieldManager names the writer in the objects' managedFields; empty leaves it to the server
	// (the User-Agent's).
	FieldManager string
}

// Send sends w, and says what became of it if it was accepted: planned (nothing was sent), dry-run
// or applied. It returns the object a create made.
func (wr *Writer) Send(ctx context.Context, w Write) (report.Outcome, *unstructured.Unstructured, error) {
	if wr.Mode == report.DryRunClient {
		return report.OutcomePlanned, nil, nil
	}
	var dryRun []string
	if wr.Mode == report.DryRunServer {
		dryRun = []string{metav1.DryRunAll}
	}
	var created *unstructured.Unstructured
	var err error
	switch {
	case w.patch != nil:
		var data []byte
		if data, err = json.Marshal(w.patch); err != nil {
			return "", nil, fmt.Errorf("encode the patch of %s %s/%s: %w", w.Resource, w.Namespace, w.Name, err)
		}
		_, err = resourceClient(wr.Metadata, w.Resource, w.Namespace).Patch(ctx, w.Name, types.JSONPatchType, data,
			metav1.PatchOptions{DryRun: dryRun, FieldManager: wr.FieldManager})
	case w.delete != nil:
		opts := *w.delete
		opts.DryRun = dryRun
		err = resourceClient(wr.Metadata, w.Resource, w.Namespace).Delete(ctx, w.Name, opts)
	case w.create != nil:
		created, err = dynamicClient(wr.Dynamic, w.Resource, w.Namespace).Create(ctx, w.create,
			metav1.CreateOptions{DryRun: dryRun, FieldManager: wr.FieldManager})
	case w.apply != nil:
		_, err = dynamicClient(wr.Dynamic, w.Resource, w.Namespace).Apply(ctx, w.Name, w.apply,
			metav1.ApplyOptions{DryRun: dryRun, FieldManager: wr.FieldManager})
	default:
		err = fmt.Errorf("%w: a write of %s %s/%s with no request", errUnknownAction, w.Resource, w.Namespace, w.Name)
	}
	if err != nil {
		return "", nil, err
	}
	return wr.Mode.Done(), created, nil
}
