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

	"github.com/operator-sweeper/operator-sweeper/report"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"
)

// RunDirPrefix starts the name of each run's directory under --backup-dir; nothing else there is
// pruned.
const RunDirPrefix = "run-"

// BackupDir keeps the pre-images of a run's writes under --backup-dir, in a directory of its own
// (run-<start time>-<random>), one file per object, written and synced before the write. The
// directory is created at the first write.
type BackupDir struct {
	// Root is --backup-dir; Cluster and StartTime say which run the records are of.
	Root      string
	Cluster   string
	StartTime time.Time
	dir       string
	files     int
}

// Keep writes the record of a write about to be made, and syncs it; file, if not empty, is the
// record of the same action written before (an earlier attempt, or before its outcome was known),
// which this one replaces. It returns the record's file.
func (b *BackupDir) Keep(rec report.FindingResult, file string) (string, error) {
	if b.dir == "" {
		dir, err := os.MkdirTemp(b.Root, RunDirPrefix+b.StartTime.UTC().Format("20060102T150405Z")+"-*")
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
func (b *BackupDir) write(file string, rec report.FindingResult) error {
	record := report.BackupRecord{APIVersion: report.BackupAPIVersion, Kind: report.BackupKind, Cluster: b.Cluster, StartTime: metav1.NewTime(b.StartTime), Finding: rec}
	err := report.WriteAtomically(file, func(w io.Writer) error {
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
func fileSafe(obj report.ObjectSummary) string {
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
		if !run.IsDir() || !strings.HasPrefix(run.Name(), RunDirPrefix) {
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
		items = append(items, report.Image(u))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the custom resources of CustomResourceDefinition %s (%s): %w", crd.GetName(), gvr.GroupResource(), err)
	}
	return items, nil
}
