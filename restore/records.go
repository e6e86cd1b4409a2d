package restore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/backup"
	"github.com/operator-sweeper/operator-sweeper/input"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// Source is what `operator-sweeper restore` undoes.
type Source struct {
	// From is a sweep's report (JSON or YAML, or a Job's logs that hold one), a --backup-dir (its
	// newest run) or one run's directory in it.
	From string
	// Run is the ID of a run whose pre-images are kept in Secrets of the sweeper's namespace.
	Run string
	// Only, if set, limits the restore to these objects, as TYPE/NAME.
	Only []string
}

// Record is an action a sweep applied, to undo: its signed finding, the run that signed it, and
// where the pre-image's body is.
type Record struct {
	report.FindingResult
	clusterUID, runID string
	// dir, if set, holds the body's file; otherwise the body is in Secrets.
	dir string
}

// Load reads the records src names that need no cluster (a report, a backup directory), and
// checks src's --only: bad input is an input.Error, found before the cluster is contacted. The
// records of a run ID are read by Run.
func Load(src Source) ([]Record, error) {
	for _, arg := range src.Only {
		if _, err := parseOnly(arg); err != nil {
			return nil, err
		}
	}
	if src.From == "" {
		return nil, nil
	}
	info, err := os.Stat(src.From)
	switch {
	case err != nil:
		return nil, input.Errorf("restore --from: %w", err)
	case info.IsDir():
		kept, dir, err := backup.LoadDir(src.From)
		if err != nil {
			return nil, input.Errorf("restore --from %w", err)
		}
		return fromBackups(kept, dir), nil
	}
	data, err := os.ReadFile(src.From)
	if err != nil {
		return nil, input.Errorf("restore --from: %w", err)
	}
	found, ok := report.Find(data)
	if !ok {
		return nil, input.Errorf("restore --from %s holds no %s: give a sweep's report (-o json or yaml, --report-file, or its Job's logs) or its --backup-dir",
			src.From, report.Kind)
	}
	var records []Record
	for _, f := range found.Findings {
		if f.Outcome == report.OutcomeApplied {
			records = append(records, Record{FindingResult: f, clusterUID: found.Metadata.ClusterUID, runID: found.Metadata.RunID})
		}
	}
	return records, nil
}

// loadRun reads the records of a run kept in Secrets.
func loadRun(ctx context.Context, clients *sweeper.Clients, namespace, runID string) ([]Record, error) {
	kept, err := backup.LoadRun(ctx, clients.Backup(), namespace, runID)
	if err != nil {
		return nil, err
	}
	if len(kept) == 0 {
		return nil, input.Errorf("restore --run %s: no pre-image of such a run is kept in namespace %s", runID, namespace)
	}
	return fromBackups(kept, ""), nil
}

// fromBackups are the records of a run's backups to undo: those whose write was applied, or whose
// answer is not known; of the attempts at one action (a write re-planned after a lost race), the
// last.
func fromBackups(kept []report.BackupRecord, dir string) []Record {
	var records []Record
	for _, rec := range kept {
		if rec.Finding.Outcome != report.OutcomeApplied && rec.Finding.Outcome != "" {
			continue
		}
		r := Record{FindingResult: rec.Finding, clusterUID: rec.ClusterUID, runID: rec.RunID, dir: dir}
		if i := slices.IndexFunc(records, func(o Record) bool { return o.Object.UID == r.Object.UID && o.Rule == r.Rule }); i >= 0 {
			records[i] = r // the files and Secrets of a run sort in the order they were kept
			continue
		}
		records = append(records, r)
	}
	return records
}

// onlyType is one --only: TYPE/NAME.
type onlyType struct{ typ, name string }

func parseOnly(arg string) (onlyType, error) {
	typ, name, ok := strings.Cut(arg, "/")
	if !ok || typ == "" || name == "" || strings.Contains(name, "/") {
		return onlyType{}, input.Errorf("restore --only %q: give an object as TYPE/NAME, such as clusterrole/etcd-operator or crd/etcdclusters.etcd.database.coreos.com", arg)
	}
	return onlyType{strings.ToLower(typ), name}, nil
}

// onlyRecords keeps the records --only names. TYPE is matched against the object's resource and
// kind, with or without the group, then, as kubectl resolves it (short names too), by discovery.
// An --only that names no record is bad input.
func onlyRecords(ctx context.Context, clients *sweeper.Clients, records []Record, only []string) ([]Record, error) {
	if len(only) == 0 {
		return records, nil
	}
	mapper := clients.Mapper()
	keep := make([]bool, len(records))
	var errs []error
	for _, arg := range only {
		o, _ := parseOnly(arg) // checked
		var discovered *schema.GroupResource
		if gvr, err := sweeper.ResourceFor(ctx, mapper, o.typ); err == nil {
			gr := gvr.GroupResource()
			discovered = &gr
		}
		matched := false
		for i, rec := range records {
			gr := rec.resource().GroupResource()
			kind := strings.ToLower(rec.Object.Kind)
			names := []string{gr.Resource, kind, gr.Resource + "." + gr.Group, kind + "." + gr.Group}
			if rec.Object.Name == o.name && (slices.Contains(names, o.typ) || discovered != nil && *discovered == gr) {
				keep[i], matched = true, true
			}
		}
		if !matched {
			errs = append(errs, fmt.Errorf("restore --only %s: no applied action on such an object to undo", arg))
		}
	}
	if len(errs) > 0 {
		return nil, &input.Error{Err: errors.Join(errs...)}
	}
	var out []Record
	for i, rec := range records {
		if keep[i] {
			out = append(out, rec)
		}
	}
	return out, nil
}

// resource is the resource of a record's object; without a pre-image, only its group and
// version are known.
func (rec Record) resource() schema.GroupVersionResource {
	gv, _ := schema.ParseGroupVersion(rec.Object.APIVersion)
	if rec.Before == nil {
		return gv.WithResource("")
	}
	return gv.WithResource(rec.Before.Resource)
}
