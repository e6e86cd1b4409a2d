package backup

import (
	"cmp"
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

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/report"
)

// RunDirPrefix starts the name of each run's directory under --backup-dir; nothing else there is
// pruned.
const RunDirPrefix = "run-"

// Dir keeps a run's records and bodies under --backup-dir, in a directory of its own
// (run-<start time>-<random>), two files a write, mode 0600: NNNNNN-<object>.json, the record,
// and NNNNNN-<object>.body.gz, the body; each written and synced before the write. The directory is
// created at the first write.
type Dir struct {
	// Root is --backup-dir; StartTime is the run's.
	Root      string
	StartTime time.Time
	dir       string
	files     int
}

// bodySuffix ends the name of a body's file; the record's is the same with .json.
const bodySuffix = ".body.gz"

// Body implements Store: the body goes to a file of its own, NNNNNN-<name>.body.gz.
func (d *Dir) Body(_ context.Context, name string, pre *report.PreImage, write func(*report.BodyWriter) error) error {
	if d.dir == "" {
		dir, err := os.MkdirTemp(d.Root, RunDirPrefix+d.StartTime.UTC().Format("20060102T150405Z")+"-*")
		if err != nil {
			return fmt.Errorf("create the run's backup directory: %w", err)
		}
		d.dir = dir
	}
	d.files++
	file := fmt.Sprintf("%06d-%s%s", d.files, name, bodySuffix)
	var sum string
	err := report.WriteAtomically(filepath.Join(d.dir, file), func(w io.Writer) error {
		body := report.NewBodyWriter(w)
		err := errors.Join(write(body), body.Close())
		sum = body.Sum()
		return err
	})
	if err != nil {
		return fmt.Errorf("keep the pre-image in %s: %w", filepath.Join(d.dir, file), err)
	}
	pre.Kept, pre.Parts, pre.SHA256 = "file:"+file, 0, sum
	return nil
}

// Record implements Store: the record goes next to its body, replaced once its outcome is known.
func (d *Dir) Record(_ context.Context, rec report.BackupRecord, _ bool) error {
	body, ok := strings.CutPrefix(rec.Finding.Before.Kept, "file:")
	if !ok || d.dir == "" {
		return fmt.Errorf("the record of %s names no body kept in %s", rec.Finding.Object, d.Root)
	}
	file := filepath.Join(d.dir, strings.TrimSuffix(body, bodySuffix)+".json")
	err := report.WriteAtomically(file, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rec)
	})
	if err != nil {
		return fmt.Errorf("back up %s to %s: %w", rec.Finding.Object, file, err)
	}
	return nil
}

// Batch implements Store: each entry's two files, written and synced in turn.
func (d *Dir) Batch(ctx context.Context, entries []Entry) error {
	for _, e := range entries {
		err := d.Body(ctx, e.Name, e.Pre, func(body *report.BodyWriter) error { return body.Write(e.Object) })
		if err != nil {
			return err
		}
		rec, err := e.Record(e.Pre)
		if err == nil {
			err = d.Record(ctx, rec, false)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

var unsafeFileChars = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// FileSafe names an object in a file or object name: kind.group-namespace-name.
func FileSafe(obj report.ObjectSummary) string {
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

// PruneDir removes the files under root last written before cutoff, and the run directories they
// leave empty, or that were empty since before cutoff (not one another run has just made). It
// touches nothing but the runs' directories and their files.
func PruneDir(root string, cutoff time.Time) (removed int, err error) {
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
			kept := filepath.Ext(f.Name()) == ".json" || strings.HasSuffix(f.Name(), bodySuffix)
			if err != nil || f.IsDir() || !kept || !info.ModTime().Before(cutoff) {
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

// LoadDir reads the records of a run's directory; given --backup-dir itself, those of its newest
// run. It returns the directory the records are of, whose files hold their bodies.
func LoadDir(dir string) ([]report.BackupRecord, string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, "", err
	}
	if !slices.ContainsFunc(entries, func(e os.DirEntry) bool { return filepath.Ext(e.Name()) == ".json" }) {
		var runs []string
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), RunDirPrefix) {
				runs = append(runs, e.Name())
			}
		}
		if len(runs) == 0 {
			return nil, "", fmt.Errorf("%s holds no backup: give a --backup-dir or one of its %s* directories", dir, RunDirPrefix)
		}
		return LoadDir(filepath.Join(dir, slices.Max(runs))) // the names sort by start time
	}
	var records []report.BackupRecord
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".json" || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		file := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, "", err
		}
		var rec report.BackupRecord
		if err := json.Unmarshal(data, &rec); err != nil || rec.Kind != report.BackupKind {
			return nil, "", fmt.Errorf("%s is not a %s: %v", file, report.BackupKind, cmp.Or(err, fmt.Errorf("kind %q", rec.Kind)))
		}
		records = append(records, rec)
	}
	return records, dir, nil
}

// OpenFile opens the body of a record LoadDir found in dir.
func OpenFile(dir string, pre *report.PreImage) (*Body, error) {
	name, ok := strings.CutPrefix(pre.Kept, "file:")
	if !ok || name != filepath.Base(name) || !strings.HasSuffix(name, bodySuffix) {
		return nil, fmt.Errorf("the record names no body of a backup directory (%q)", pre.Kept)
	}
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	reader, err := report.NewBodyReader(f, pre.SHA256)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Body{BodyReader: reader, close: f.Close}, nil
}
