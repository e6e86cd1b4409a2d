package sweeper

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"

	"github.com/operator-sweeper/operator-sweeper/backup"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// Keeper keeps what undoing a run's writes needs, signed with the key the sweeper keeps in its
// namespace: the record of each write and its object's pre-image, in Store. It is safe for
// concurrent use: the Store is called by one write at a time.
type Keeper struct {
	Store backup.Store
	// Run is the run's metadata: its cluster's identity and its ID are in every signature.
	Run report.Metadata
	// Key returns the signing key; it is asked once, at the first write.
	Key func(context.Context) ([]byte, error)

	mu   sync.Mutex // over Store, key and fail
	key  []byte
	fail error
}

// signingKey is the key, asked for once.
func (k *Keeper) signingKey(ctx context.Context) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.signingKeyLocked(ctx)
}

func (k *Keeper) signingKeyLocked(ctx context.Context) ([]byte, error) {
	if k.key == nil && k.fail == nil {
		k.key, k.fail = k.Key(ctx)
	}
	return k.key, k.fail
}

// Sign signs a finding of the run.
func (k *Keeper) Sign(ctx context.Context, f *report.FindingResult) error {
	if err := k.identified(); err != nil {
		return err
	}
	key, err := k.signingKey(ctx)
	if err != nil {
		return err
	}
	return k.sign(key, f)
}

// identified says whether the run knows its cluster's identity, which every signature holds.
func (k *Keeper) identified() error {
	if k.Run.ClusterUID == "" {
		return errors.New("the cluster's identity (the UID of namespace kube-system) could not be read: nothing is signed, and no write sent")
	}
	return nil
}

func (k *Keeper) sign(key []byte, f *report.FindingResult) error {
	if err := k.identified(); err != nil {
		return err
	}
	var err error
	f.Signature, err = backup.Sign(key, *f, k.Run.ClusterUID, k.Run.RunID)
	return err
}

// backupRecord is the signed record of a write.
func (k *Keeper) backupRecord(key []byte, f report.FindingResult) (report.BackupRecord, error) {
	if err := k.sign(key, &f); err != nil {
		return report.BackupRecord{}, err
	}
	return report.BackupRecord{APIVersion: report.BackupAPIVersion, Kind: report.BackupKind, Cluster: k.Run.Cluster, ClusterUID: k.Run.ClusterUID,
		RunID: k.Run.RunID, StartTime: k.Run.StartTime, Finding: f}, nil
}

// record keeps the signed record of a write; with outcome, the record of what became of it.
func (k *Keeper) record(ctx context.Context, f report.FindingResult, outcome bool) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	key, err := k.signingKeyLocked(ctx)
	if err != nil {
		return err
	}
	rec, err := k.backupRecord(key, f)
	if err != nil {
		return err
	}
	return k.Store.Record(ctx, rec, outcome)
}

// body keeps the body of one write's pre-image, which write streams (a CustomResourceDefinition's
// custom resources with it).
func (k *Keeper) body(ctx context.Context, name string, pre *report.PreImage, write func(*report.BodyWriter) error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.Store.Body(ctx, name, pre, write)
}

// batched is one write of a batch: its finding, with the action to send, and its object as read
// right before the write.
type batched struct {
	finding rules.Finding
	object  *unstructured.Unstructured
	pre     *report.PreImage
}

// batch keeps the pre-images and signed records of a batch of writes, before any is sent.
func (k *Keeper) batch(ctx context.Context, writes []batched) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	key, err := k.signingKeyLocked(ctx)
	if err != nil {
		return err
	}
	entries := make([]backup.Entry, len(writes))
	for i, w := range writes {
		entries[i] = backup.Entry{Name: backup.FileSafe(report.ObjectOf(w.finding.Object)), Object: w.object, Pre: w.pre,
			Record: func(pre *report.PreImage) (report.BackupRecord, error) {
				return k.backupRecord(key, NewFindingResult(w.finding, Result{Before: pre}))
			}}
	}
	return k.Store.Batch(ctx, entries)
}

// customResources are who a CRD's custom resources were at a list: how many, and a digest of
// their UIDs and resourceVersions in the order the list gave them (etcd's key order, the same at
// every list). One deleted and one created, or one updated, changes the digest, not the count.
type customResources struct {
	count  int
	digest string
}

// eachCustomResource hands fn, page by page, every custom resource of crd, in its storage version
// if served, else in the first served one, and says who they were.
func eachCustomResource(ctx context.Context, client dynamic.Interface, crd *unstructured.Unstructured, fn func(*unstructured.Unstructured) error) (customResources, error) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var served []string
	for _, v := range versions {
		v, _ := v.(map[string]any)
		name, _ := v["name"].(string)
		if ok, _ := v["served"].(bool); ok {
			if storage, _ := v["storage"].(bool); storage {
				served = slices.Insert(served, 0, name)
			} else {
				served = append(served, name)
			}
		}
	}
	var crs customResources
	if len(served) == 0 {
		return crs, fmt.Errorf("CustomResourceDefinition %s serves no version: its custom resources cannot be read", crd.GetName())
	}
	gvr := schema.GroupVersionResource{Group: group, Version: served[0], Resource: plural}
	digest := sha256.New()
	list := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.Resource(gvr).List(ctx, opts)
	})
	err := list.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("list %s: got %T", gvr, obj)
		}
		crs.count++
		fmt.Fprintf(digest, "%s %s\n", u.GetUID(), u.GetResourceVersion())
		return fn(u)
	})
	crs.digest = hex.EncodeToString(digest.Sum(nil))
	if err != nil {
		return crs, fmt.Errorf("list the custom resources of CustomResourceDefinition %s (%s): %w", crd.GetName(), gvr.GroupResource(), err)
	}
	return crs, nil
}
