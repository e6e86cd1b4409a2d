package sweeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"
)

// PreImage is an object as it was read right before the sweeper wrote to it: what restore brings
// back.
type PreImage struct {
	// Resource is the object's resource by its plural name ("clusterroles"); the object's
	// apiVersion gives its group and version.
	Resource string `json:"resource"`
	// Object is the object without status and what the API server sets (uid, resourceVersion,
	// managedFields, creationTimestamp, generation, deletionTimestamp).
	Object *unstructured.Unstructured `json:"object"`
	// Instances are, for a CustomResourceDefinition that was deleted, its custom resources, which
	// went with it, in the same form.
	Instances []*unstructured.Unstructured `json:"instances,omitempty"`
}

// preImage is obj as it is kept before a write: without status and what the server sets.
func preImage(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	delete(out.Object, "status")
	for _, field := range []string{"uid", "resourceVersion", "managedFields", "creationTimestamp", "generation",
		"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
		unstructured.RemoveNestedField(out.Object, "metadata", field)
	}
	return out
}

// The identity of a backup file.
const (
	BackupAPIVersion = ReportAPIVersion
	BackupKind       = "SweepBackup"
)

// BackupRecord is one file of --backup-dir: a write the sweeper was about to make, with the
// pre-image of its object, and, once known, its outcome. A record without an outcome is of a run
// that ended before the write's answer: restore judges it by the object as it is.
type BackupRecord struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Cluster and StartTime say which run wrote it.
	Cluster   string      `json:"cluster"`
	StartTime metav1.Time `json:"startTime"`
	// Finding is the finding whose action the write carries out, with its pre-image in before.
	Finding FindingResult `json:"finding"`
}

// runDirPrefix starts the name of each run's directory under --backup-dir; nothing else there is
// pruned.
const runDirPrefix = "run-"

// backupDir keeps the pre-images of a run's writes under --backup-dir, in a directory of its own
// (run-<start time>-<random>), one file per object, written and synced before the write. The
// directory is created at the first write.
type backupDir struct {
	root      string
	cluster   string
	startTime time.Time
	dir       string
	files     int
}

// keep writes the record of a write about to be made, and syncs it; file, if not empty, is the
// record of the same action written before (an earlier attempt, or before its outcome was known),
// which this one replaces. It returns the record's file.
func (b *backupDir) keep(rec FindingResult, file string) (string, error) {
	if b.dir == "" {
		dir, err := os.MkdirTemp(b.root, runDirPrefix+b.startTime.UTC().Format("20060102T150405Z")+"-*")
		if err != nil {
			return "", fmt.Errorf("create the run's backup directory: %w", err)
		}
		b.dir = dir
	}
	if file == "" {
		b.files++
		file = filepath.Join(b.dir, fmt.Sprintf("%06d-%s.json", b.files, fileSafe(rec.Object)))
	}
	return file, b.write(file, rec)
}

// write replaces file with rec, durably (writeAtomically).
func (b *backupDir) write(file string, rec FindingResult) error {
	record := BackupRecord{APIVersion: BackupAPIVersion, Kind: BackupKind, Cluster: b.cluster, StartTime: metav1.NewTime(b.startTime), Finding: rec}
	err := writeAtomically(file, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(record)
	})
	if err != nil {
		return fmt.Errorf("back up %s to %s: %w", rec.Object, file, err)
	}
	return nil
}

var unsafeFileChars = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// fileSafe names an object in a file name: kind.group-namespace-name.
func fileSafe(obj ObjectSummary) string {
	parts := []string{strings.ToLower(obj.Kind)}
	if group := schema.FromAPIVersionAndKind(obj.APIVersion, obj.Kind).Group; group != "" {
		parts[0] += "." + group
	}
	if obj.Namespace != "" {
		parts = append(parts, obj.Namespace)
	}
	name := unsafeFileChars.ReplaceAllString(strings.Join(append(parts, obj.Name), "-"), "_")
	if len(name) > 200 {
		name = name[:200]
	}
	return name
}

// pruneBackups removes the record files under root last written before cutoff, and the run
// directories they leave empty, or that were empty since before cutoff (not one another run has
// just made). It touches nothing but the runs' directories and their files.
func pruneBackups(root string, cutoff time.Time) (removed int, err error) {
	runs, err := os.ReadDir(root)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, run := range runs {
		if !run.IsDir() || !strings.HasPrefix(run.Name(), runDirPrefix) {
			continue
		}
		dir := filepath.Join(root, run.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		left, removedHere := len(files), 0
		for _, f := range files {
			info, err := f.Info()
			if err != nil || f.IsDir() || filepath.Ext(f.Name()) != ".json" || !info.ModTime().Before(cutoff) {
				continue
			}
			if err := os.Remove(filepath.Join(dir, f.Name())); err != nil {
				errs = append(errs, err)
				continue
			}
			removed++
			removedHere++
			left--
		}
		if info, err := run.Info(); left == 0 && err == nil && (removedHere > 0 || info.ModTime().Before(cutoff)) {
			if err := os.Remove(dir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return removed, errors.Join(errs...)
}

// customResources lists, in full and page by page, every custom resource of crd, in its storage
// version if served, else in the first served one.
func customResources(ctx context.Context, client dynamic.Interface, crd *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
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
	if len(served) == 0 {
		return nil, fmt.Errorf("CustomResourceDefinition %s serves no version: its custom resources cannot be read", crd.GetName())
	}
	gvr := schema.GroupVersionResource{Group: group, Version: served[0], Resource: plural}
	var items []*unstructured.Unstructured
	list := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.Resource(gvr).List(ctx, opts)
	})
	err := list.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("list %s: got %T", gvr, obj)
		}
		items = append(items, preImage(u))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the custom resources of CustomResourceDefinition %s (%s): %w", crd.GetName(), gvr.GroupResource(), err)
	}
	return items, nil
}
