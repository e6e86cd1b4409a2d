// Package restore undoes a sweep: it reads the actions a sweep applied, from its report or its
// backup directory, and puts their objects back as they were, newest first. What each type of
// action needs to be undone is the engine's (sweeper.PlanUndo), and so is every write it sends
// (sweeper.Writer): restore decides which records, in which order, and against which objects.
package restore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// Rule names the findings of a restore in its report.
const Rule = "restore"

// FieldManager is the field manager of restore's writes.
const FieldManager = "operator-sweeper-restore"

// Source is what `operator-sweeper restore` undoes.
type Source struct {
	// From is a sweep's report (JSON or YAML, or a Job's logs that hold one), a --backup-dir (its
	// newest run) or one run's directory in it.
	From string
	// Only, if set, limits the restore to these objects, as TYPE/NAME.
	Only []string
}

// Config is what a restore reads of its options.
type Config struct {
	// Cluster and Version name the run in its report.
	Cluster, Version string
	// DryRun says whether and how the writes reach the API server: client, the default, reads and
	// plans only.
	DryRun report.DryRunMode
}

// Load reads the applied actions of src, and checks its --only: bad input is an InputError, found
// before the cluster is contacted.
func Load(src Source) ([]report.FindingResult, error) {
	records, err := loadRecords(src.From)
	if err != nil {
		return nil, err
	}
	for _, arg := range src.Only {
		if _, err := parseOnly(arg); err != nil {
			return nil, err
		}
	}
	return records, nil
}

// Run undoes the actions of records (those src.Only names, if any), newest first: it re-creates
// what was deleted (never a pod), re-adds the finalizers it removed and puts back the
// ownerReferences it changed. An object that exists and is neither as the sweep left it nor as it
// was before is left alone (failed, reason conflict). It returns a report like a sweep's, with
// findings of rule "restore"; an --only that names no record is an InputError.
func Run(ctx context.Context, cfg Config, clients *sweeper.Clients, records []report.FindingResult, only []string, logger *slog.Logger) (*report.Report, error) {
	records, err := onlyRecords(ctx, clients, records, only)
	if err != nil {
		return nil, err
	}
	r := &restorer{Writer: clients.Writer(cfg.DryRun, FieldManager), Logger: logger, records: records}
	out := report.New(clients.Clock().Now(), report.Metadata{Mode: cfg.DryRun, Version: cfg.Version, Cluster: cfg.Cluster})
	for _, rec := range restoreOrder(records) {
		out.Add(r.restore(ctx, rec))
	}
	out.Metadata.EndTime.Time = clients.Clock().Now()
	logger.InfoContext(ctx, "restore done", "mode", cfg.DryRun, "planned", out.Summary.Planned,
		"applied", out.Summary.Applied, "failed", out.Summary.Failed, "skipped", out.Summary.Skipped)
	return out, nil
}

// loadRecords reads the applied actions of a sweep: the findings of a report, or the records of a
// backup directory.
func loadRecords(from string) ([]report.FindingResult, error) {
	info, err := os.Stat(from)
	switch {
	case err != nil:
		return nil, sweeper.InputErrorf("restore --from: %w", err)
	case info.IsDir():
		return loadBackupRecords(from)
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return nil, sweeper.InputErrorf("restore --from: %w", err)
	}
	found, ok := findReport(data)
	if !ok {
		return nil, sweeper.InputErrorf("restore --from %s holds no %s: give a sweep's report (-o json or yaml, --report-file, or its Job's logs) or its --backup-dir",
			from, report.Kind)
	}
	return slices.DeleteFunc(found.Findings, func(f report.FindingResult) bool { return f.Outcome != report.OutcomeApplied }), nil
}

// findReport finds a SweepReport in data: the whole of it, JSON or YAML, or the last one printed
// as JSON among other lines, as in a Job's logs.
func findReport(data []byte) (*report.Report, bool) {
	var whole report.Report
	if err := yaml.Unmarshal(data, &whole); err == nil && whole.Kind == report.Kind {
		return &whole, true
	}
	var found *report.Report
	for offset := 0; offset < len(data); {
		line := data[offset:]
		if next := bytes.IndexByte(line, '\n'); next >= 0 {
			line = line[:next+1]
		}
		if bytes.HasPrefix(line, []byte("{")) {
			var r report.Report
			if err := json.NewDecoder(bytes.NewReader(data[offset:])).Decode(&r); err == nil && r.Kind == report.Kind {
				found = &r
			}
		}
		offset += len(line)
	}
	return found, found != nil
}

// loadBackupRecords reads the records of a run's backup directory; given --backup-dir itself,
// those of its newest run. A record whose write failed or did not happen is left out; one without
// an outcome (the run ended before the answer) is kept.
func loadBackupRecords(dir string) ([]report.FindingResult, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, sweeper.InputErrorf("restore --from: %w", err)
	}
	if !slices.ContainsFunc(entries, func(e os.DirEntry) bool { return filepath.Ext(e.Name()) == ".json" }) {
		var runs []string
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), sweeper.RunDirPrefix) {
				runs = append(runs, e.Name())
			}
		}
		if len(runs) == 0 {
			return nil, sweeper.InputErrorf("restore --from %s holds no backup: give a --backup-dir or one of its %s* directories", dir, sweeper.RunDirPrefix)
		}
		return loadBackupRecords(filepath.Join(dir, slices.Max(runs))) // the names sort by start time
	}
	var records []report.FindingResult
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".json" || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		file := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, sweeper.InputErrorf("restore --from: %w", err)
		}
		var rec report.BackupRecord
		if err := json.Unmarshal(data, &rec); err != nil || rec.Kind != report.BackupKind {
			return nil, sweeper.InputErrorf("restore --from: %s is not a %s: %v", file, report.BackupKind, cmp.Or(err, fmt.Errorf("kind %q", rec.Kind)))
		}
		if rec.Finding.Outcome == report.OutcomeApplied || rec.Finding.Outcome == "" {
			records = append(records, rec.Finding)
		}
	}
	return records, nil
}

// onlyType is one --only: TYPE/NAME.
type onlyType struct{ typ, name string }

func parseOnly(arg string) (onlyType, error) {
	typ, name, ok := strings.Cut(arg, "/")
	if !ok || typ == "" || name == "" || strings.Contains(name, "/") {
		return onlyType{}, sweeper.InputErrorf("restore --only %q: give an object as TYPE/NAME, such as clusterrole/etcd-operator or crd/etcdclusters.etcd.database.coreos.com", arg)
	}
	return onlyType{strings.ToLower(typ), name}, nil
}

// onlyRecords keeps the records --only names. TYPE is matched against the object's resource and
// kind, with or without the group, then, as kubectl resolves it (short names too), by discovery.
// An --only that names no record is bad input.
func onlyRecords(ctx context.Context, clients *sweeper.Clients, records []report.FindingResult, only []string) ([]report.FindingResult, error) {
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
			gr := recordResource(rec).GroupResource()
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
		return nil, &sweeper.InputError{Err: errors.Join(errs...)}
	}
	var out []report.FindingResult
	for i, rec := range records {
		if keep[i] {
			out = append(out, rec)
		}
	}
	return out, nil
}

// recordResource is the resource of a record's object; without a pre-image, only its group and
// version are known.
func recordResource(rec report.FindingResult) schema.GroupVersionResource {
	gv, _ := schema.ParseGroupVersion(rec.Object.APIVersion)
	if rec.Before == nil {
		return gv.WithResource("")
	}
	return gv.WithResource(rec.Before.Resource)
}

// restoreOrder is the order restore undoes records in: CustomResourceDefinitions first (their
// custom resources need them), then the owners of other records' objects, then the rest, the last
// action first.
func restoreOrder(records []report.FindingResult) []report.FindingResult {
	owners := map[types.UID]bool{}
	for _, rec := range records {
		if rec.Before != nil && rec.Before.Object != nil {
			for _, ref := range rec.Before.Object.GetOwnerReferences() {
				owners[ref.UID] = true
			}
		}
	}
	rank := func(rec report.FindingResult) int {
		switch {
		case recordResource(rec).GroupResource() == rules.CustomResourceDefinitions.GroupResource():
			return 0
		case owners[rec.Object.UID]:
			return 1
		}
		return 2
	}
	ordered := slices.Clone(records)
	slices.Reverse(ordered)
	slices.SortStableFunc(ordered, func(a, b report.FindingResult) int { return cmp.Compare(rank(a), rank(b)) })
	return ordered
}

// restorer undoes the actions of records.
type restorer struct {
	Writer  sweeper.Writer
	Logger  *slog.Logger
	records []report.FindingResult
}

// restore undoes the action of one record, and returns it as a finding of the restore report.
func (r *restorer) restore(ctx context.Context, rec report.FindingResult) report.FindingResult {
	gvr := recordResource(rec)
	f := rules.Finding{
		Rule:     Rule,
		Severity: rules.SeverityInfo,
		Object:   rules.ObjectRef{Resource: gvr, Kind: rec.Object.Kind, Namespace: rec.Object.Namespace, Name: rec.Object.Name, UID: rec.Object.UID},
		Reason:   fmt.Sprintf("undo %s by rule %s", rec.Action.TypeName(), rec.Rule),
		Action:   sweeper.Recreate(0),
	}
	if rec.Before == nil || rec.Before.Object == nil || rec.Action == nil {
		return sweeper.NewFindingResult(f, sweeper.Skipped(report.ReasonNotRestorable, "no pre-image of the object was kept: the sweep ran before operator-sweeper kept them"))
	}
	f.Action = sweeper.UndoOf(rec)
	client := r.Writer.Dynamic.Resource(gvr).Namespace(rec.Object.Namespace)
	want, evidence := r.expected(ctx, rec.Before.Object)
	current, err := client.Get(ctx, rec.Object.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		current = nil
	case err != nil:
		return sweeper.NewFindingResult(f, sweeper.Failed(report.ReasonAPIError, "read it: %v", err))
	}
	plan := sweeper.PlanUndo(rec, want, current)
	f.Evidence = append(evidence, plan.Evidence...)
	res := plan.Result
	if plan.Action != nil {
		f.Action = plan.Action
		res = r.Writer.Undo(ctx, gvr, plan.Action, want, current)
	}
	if isCRD(gvr) && (res.Outcome != report.OutcomeFailed && res.Outcome != report.OutcomeSkipped || res.Reason == report.ReasonResolved) {
		res = r.restoreInstances(ctx, rec, res)
		f.Action = sweeper.Recreate(len(rec.Before.Instances))
	}
	return sweeper.NewFindingResult(f, res)
}

func isCRD(gvr schema.GroupVersionResource) bool {
	return gvr.GroupResource() == rules.CustomResourceDefinitions.GroupResource()
}

// expected is the pre-image as restore writes it back: an ownerReference to an object this
// restore re-creates points to the object as it is now (its new UID), if it exists.
func (r *restorer) expected(ctx context.Context, before *unstructured.Unstructured) (*unstructured.Unstructured, []string) {
	want := before.DeepCopy()
	refs := want.GetOwnerReferences()
	var evidence []string
	for i, ref := range refs {
		j := slices.IndexFunc(r.records, func(rec report.FindingResult) bool { return rec.Object.UID == ref.UID })
		if j < 0 {
			continue
		}
		owner := r.records[j]
		now, err := r.Writer.Dynamic.Resource(recordResource(owner)).Namespace(owner.Object.Namespace).Get(ctx, owner.Object.Name, metav1.GetOptions{})
		if err != nil || now.GetUID() == ref.UID {
			continue
		}
		refs[i].UID = now.GetUID()
		evidence = append(evidence, fmt.Sprintf("its owner %s %s was re-created: the reference now has its new UID %s", ref.Kind, ref.Name, now.GetUID()))
	}
	if len(evidence) > 0 {
		want.SetOwnerReferences(refs)
	}
	return want, evidence
}

// restoreInstances re-creates the custom resources of a CustomResourceDefinition restored (or
// found already restored) as res says, once the API server serves them.
func (r *restorer) restoreInstances(ctx context.Context, rec report.FindingResult, res sweeper.Result) sweeper.Result {
	instances := rec.Before.Instances
	if len(instances) == 0 {
		return res
	}
	name := rec.Object.Name
	if r.Writer.Mode != report.DryRunNone && res.Outcome != report.OutcomeSkipped {
		res.Evidence = append(res.Evidence, fmt.Sprintf("its %d custom resources are re-created once it is served", len(instances)))
		return res
	}
	plural, _, _ := unstructured.NestedString(rec.Before.Object.Object, "spec", "names", "plural")
	if err := r.waitEstablished(ctx, name); err != nil {
		return sweeper.Failed(report.ReasonAPIError, "CustomResourceDefinition %s is not served, so its %d custom resources were not re-created: %v", name, len(instances), err)
	}
	var created, present int
	var problems []string
	conflict := false
	for _, inst := range instances {
		gv, _ := schema.ParseGroupVersion(inst.GetAPIVersion())
		resource := gv.WithResource(plural)
		current, err := r.Writer.Dynamic.Resource(resource).Namespace(inst.GetNamespace()).Get(ctx, inst.GetName(), metav1.GetOptions{})
		switch {
		case err == nil && sweeper.SameImage(inst, current):
			present++
			continue
		case err == nil:
			conflict = true
			problems = append(problems, fmt.Sprintf("%s exists and differs from its pre-image: left alone", objectName(inst)))
			continue
		case !apierrors.IsNotFound(err):
			problems = append(problems, fmt.Sprintf("read %s: %v", objectName(inst), err))
			continue
		}
		if done := r.Writer.Undo(ctx, resource, sweeper.Recreate(0), inst, nil); done.Outcome == report.OutcomeFailed {
			conflict = conflict || done.Reason == report.ReasonConflict
			problems = append(problems, fmt.Sprintf("re-create %s: %s", objectName(inst), done.Detail))
			continue
		}
		created++
	}
	res.Evidence = append(res.Evidence, fmt.Sprintf("of its %d custom resources, %d re-created, %d already there", len(instances), created, present))
	switch {
	case len(problems) > 0 && conflict:
		return res.Then(sweeper.Failed(report.ReasonConflict, "%s", strings.Join(problems, "; ")))
	case len(problems) > 0:
		return res.Then(sweeper.Failed(report.ReasonAPIError, "%s", strings.Join(problems, "; ")))
	case created > 0 && res.Outcome == report.OutcomeSkipped:
		return res.Then(sweeper.Result{Outcome: r.Writer.Mode.Done()})
	}
	return res
}

// waitEstablished waits until the API server serves the CustomResourceDefinition's resource.
func (r *restorer) waitEstablished(ctx context.Context, name string) error {
	client := r.Writer.Dynamic.Resource(rules.CustomResourceDefinitions.GroupVersionResource)
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, c := range conditions {
			c, _ := c.(map[string]any)
			if c["type"] == "Established" && c["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
}

// objectName names an object for a message: "Kind namespace/name".
func objectName(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetKind() + " " + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetNamespace() + "/" + obj.GetName()
}
