package sweeper

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
	"reflect"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// RestoreRule names the findings of a restore in its report.
const RestoreRule = "restore"

// RestoreFieldManager is the field manager of restore's writes.
const RestoreFieldManager = "operator-sweeper-restore"

// RestoreSource is what `operator-sweeper restore` undoes.
type RestoreSource struct {
	// From is a sweep's report (JSON or YAML, or a Job's logs that hold one), a --backup-dir (its
	// newest run) or one run's directory in it.
	From string
	// Only, if set, limits the restore to these objects, as TYPE/NAME.
	Only []string
}

// Restore undoes the actions a sweep applied, from its report or its backup directory, newest
// first: it re-creates what was deleted (never a pod), re-adds the finalizers it removed and puts
// back the ownerReferences it changed. An object that exists and is neither as the sweep left it
// nor as it was before is left alone (failed, reason conflict). --dry-run applies as to a sweep:
// client, the default, reads and plans only. It prints a report like a sweep's, with findings of
// rule "restore", and returns the errors Run does.
func Restore(ctx context.Context, opts Options, src RestoreSource, streams Streams) error {
	opts.PushgatewayURL, opts.BackupDir, opts.FailOnFindings = "", "", false
	opts.NotifyOptions = DefaultOptions().NotifyOptions // a restore is no sweep: it notifies nothing
	records, err := loadRestoreRecords(src.From)
	if err != nil {
		return err
	}
	for _, arg := range src.Only {
		if _, err := parseOnly(arg); err != nil {
			return err
		}
	}
	engine, runCtx, cancel, err := connect(ctx, &opts, streams)
	if err != nil {
		return err
	}
	defer cancel()
	if records, err = onlyRecords(runCtx, engine.Clients, records, src.Only); err != nil {
		return err
	}
	r := &restorer{Dynamic: engine.Clients.Dynamic, Mode: opts.DryRun, Logger: engine.Logger, records: records}
	report := newReport(engine.Clients.Clock().Now(), opts)
	for _, rec := range restoreOrder(records) {
		f, res := r.restore(runCtx, rec)
		report.addFinding(f, res)
	}
	report.Metadata.EndTime = metav1.NewTime(engine.Clients.Clock().Now())
	engine.Logger.InfoContext(ctx, "restore done", "from", src.From, "mode", opts.DryRun, "planned", report.Summary.Planned,
		"applied", report.Summary.Applied, "failed", report.Summary.Failed, "skipped", report.Summary.Skipped)
	return opts.finish(ctx, report, nil, streams.Out, engine.Logger)
}

// loadRestoreRecords reads the applied actions of a sweep: the findings of a report, or the
// records of a backup directory.
func loadRestoreRecords(from string) ([]FindingResult, error) {
	info, err := os.Stat(from)
	switch {
	case err != nil:
		return nil, inputErrorf("restore --from: %w", err)
	case info.IsDir():
		return loadBackupRecords(from)
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return nil, inputErrorf("restore --from: %w", err)
	}
	report, ok := findReport(data)
	if !ok {
		return nil, inputErrorf("restore --from %s holds no %s: give a sweep's report (-o json or yaml, --%s, or its Job's logs) or its --%s",
			from, ReportKind, FlagReportFile, FlagBackupDir)
	}
	return slices.DeleteFunc(report.Findings, func(f FindingResult) bool { return f.Outcome != OutcomeApplied }), nil
}

// findReport finds a SweepReport in data: the whole of it, JSON or YAML, or the last one printed
// as JSON among other lines, as in a Job's logs.
func findReport(data []byte) (*Report, bool) {
	var report Report
	if err := yaml.Unmarshal(data, &report); err == nil && report.Kind == ReportKind {
		return &report, true
	}
	var found *Report
	for offset := 0; offset < len(data); {
		line := data[offset:]
		if next := bytes.IndexByte(line, '\n'); next >= 0 {
			line = line[:next+1]
		}
		if bytes.HasPrefix(line, []byte("{")) {
			var r Report
			if err := json.NewDecoder(bytes.NewReader(data[offset:])).Decode(&r); err == nil && r.Kind == ReportKind {
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
func loadBackupRecords(dir string) ([]FindingResult, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, inputErrorf("restore --from: %w", err)
	}
	if !slices.ContainsFunc(entries, func(e os.DirEntry) bool { return filepath.Ext(e.Name()) == ".json" }) {
		var runs []string
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), runDirPrefix) {
				runs = append(runs, e.Name())
			}
		}
		if len(runs) == 0 {
			return nil, inputErrorf("restore --from %s holds no backup: give a --%s or one of its %s* directories", dir, FlagBackupDir, runDirPrefix)
		}
		return loadBackupRecords(filepath.Join(dir, slices.Max(runs))) // the names sort by start time
	}
	var records []FindingResult
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".json" || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		file := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, inputErrorf("restore --from: %w", err)
		}
		var rec BackupRecord
		if err := json.Unmarshal(data, &rec); err != nil || rec.Kind != BackupKind {
			return nil, inputErrorf("restore --from: %s is not a %s: %v", file, BackupKind, cmp.Or(err, fmt.Errorf("kind %q", rec.Kind)))
		}
		if rec.Finding.Outcome == OutcomeApplied || rec.Finding.Outcome == "" {
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
		return onlyType{}, inputErrorf("restore --only %q: give an object as TYPE/NAME, such as clusterrole/etcd-operator or crd/etcdclusters.etcd.database.coreos.com", arg)
	}
	return onlyType{strings.ToLower(typ), name}, nil
}

// onlyRecords keeps the records --only names. TYPE is matched against the object's resource and
// kind, with or without the group, then, as kubectl resolves it (short names too), by discovery.
// An --only that names no record is bad input.
func onlyRecords(ctx context.Context, clients *Clients, records []FindingResult, only []string) ([]FindingResult, error) {
	if len(only) == 0 {
		return records, nil
	}
	cached := memory.NewMemCacheClientWithContext(clients.Discovery)
	mapper := restmapper.NewShortcutExpanderWithContext(restmapper.NewDeferredDiscoveryRESTMapperWithContext(cached), cached, nil)
	keep := make([]bool, len(records))
	var errs []error
	for _, arg := range only {
		o, _ := parseOnly(arg) // checked
		var discovered *schema.GroupResource
		if gvr, err := resourceFor(ctx, mapper, o.typ); err == nil {
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
		return nil, &InputError{Err: errors.Join(errs...)}
	}
	var out []FindingResult
	for i, rec := range records {
		if keep[i] {
			out = append(out, rec)
		}
	}
	return out, nil
}

// recordResource is the resource of a record's object; without a pre-image, only its group and
// version are known.
func recordResource(rec FindingResult) schema.GroupVersionResource {
	gv, _ := schema.ParseGroupVersion(rec.Object.APIVersion)
	if rec.Before == nil {
		return gv.WithResource("")
	}
	return gv.WithResource(rec.Before.Resource)
}

// restoreOrder is the order restore undoes records in: CustomResourceDefinitions first (their
// custom resources need them), then the owners of other records' objects, then the rest, the last
// action first.
func restoreOrder(records []FindingResult) []FindingResult {
	owners := map[types.UID]bool{}
	for _, rec := range records {
		if rec.Before != nil && rec.Before.Object != nil {
			for _, ref := range rec.Before.Object.GetOwnerReferences() {
				owners[ref.UID] = true
			}
		}
	}
	rank := func(rec FindingResult) int {
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
	slices.SortStableFunc(ordered, func(a, b FindingResult) int { return cmp.Compare(rank(a), rank(b)) })
	return ordered
}

// restorer undoes the actions of records.
type restorer struct {
	Dynamic dynamic.Interface
	Mode    DryRunMode
	Logger  *slog.Logger
	records []FindingResult
}

// The actions of a restore.
type (
	// recreate creates a deleted object again from its pre-image; for a
	// CustomResourceDefinition, its custom resources too.
	recreate struct{ instances int }
	// addFinalizers puts removed finalizers back on the object, by server-side apply.
	addFinalizers struct{ finalizers []string }
	// setOwners puts the object's ownerReferences back as they were.
	setOwners struct {
		refs   []metav1.OwnerReference
		change rules.SetOwnerReferences
	}
)

func (recreate) Type() string { return "Create" }

func (a recreate) String() string {
	if a.instances > 0 {
		return fmt.Sprintf("re-create from the pre-image, with %d custom resources", a.instances)
	}
	return "re-create from the pre-image"
}

func (addFinalizers) Type() string { return "AddFinalizers" }

func (a addFinalizers) String() string { return "add finalizers " + strings.Join(a.finalizers, ", ") }

func (setOwners) Type() string { return (rules.SetOwnerReferences{}).Type() }

func (a setOwners) String() string { return a.change.String() }

// restore undoes the action of one record, and returns it as a finding of the restore report.
func (r *restorer) restore(ctx context.Context, rec FindingResult) (rules.Finding, Result) {
	gvr := recordResource(rec)
	f := rules.Finding{
		Rule:     RestoreRule,
		Severity: rules.SeverityInfo,
		Object:   rules.ObjectRef{Resource: gvr, Kind: rec.Object.Kind, Namespace: rec.Object.Namespace, Name: rec.Object.Name, UID: rec.Object.UID},
		Reason:   fmt.Sprintf("undo %s by rule %s", rec.Action.typeName(), rec.Rule),
		Action:   recreate{},
	}
	if rec.Before == nil || rec.Before.Object == nil || rec.Action == nil {
		return f, skipped(ReasonNotRestorable, "no pre-image of the object was kept: the sweep ran before operator-sweeper kept them")
	}
	f.Action = undoOf(rec)
	client := dynamicClient(r.Dynamic, gvr, rec.Object.Namespace)
	want, evidence := r.expected(ctx, rec.Before.Object)
	current, err := client.Get(ctx, rec.Object.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		current = nil
	case err != nil:
		return f, failed(ReasonAPIError, "read it: %v", err)
	}
	plan := planUndo(rec, want, current)
	f.Evidence = append(evidence, plan.evidence...)
	res := plan.result
	if plan.action != nil {
		f.Action = plan.action
		res = r.send(ctx, client, want, current, plan.action)
	}
	if isCRD(gvr) && (res.Outcome != OutcomeFailed && res.Outcome != OutcomeSkipped || res.Reason == ReasonResolved) {
		res = r.restoreInstances(ctx, rec, res)
		f.Action = recreate{instances: len(rec.Before.Instances)}
	}
	return f, res
}

// undoOf is the action that undoes rec's, as the report names it.
func undoOf(rec FindingResult) rules.Action {
	switch rec.Action.Type {
	case (rules.RemoveFinalizers{}).Type():
		return addFinalizers{rec.Action.Finalizers}
	case (rules.SetOwnerReferences{}).Type():
		return setOwners{}
	}
	return recreate{}
}

// undo is what restore does about one record: an action to send, or a result that says why
// there is none.
type undo struct {
	action   rules.Action
	result   Result
	evidence []string
}

// planUndo decides what undoes rec's action, given the object as restore wants it back (want: the
// pre-image, owners remapped) and as it is now (current, nil if it does not exist).
func planUndo(rec FindingResult, want, current *unstructured.Unstructured) undo {
	original := rec.Object.UID
	var u undo
	switch {
	case rec.Action.Type == (rules.Delete{}).Type() && recordResource(rec).GroupResource() == rules.Pods.GroupResource():
		u.result = skipped(ReasonNotRestorable, "a deleted pod is re-created by its controller (a CatalogSource's by OLM), never by restore")
	case current == nil && rec.Action.Type == (rules.SetOwnerReferences{}).Type():
		u.result = skipped(ReasonNotRestorable, "the object no longer exists")
	case current == nil:
		u.action = recreate{}
		if rec.Action.Type != (rules.Delete{}).Type() {
			u.evidence = append(u.evidence, "the object was deleted once its finalizers were released: it is re-created from the pre-image, without deletionTimestamp")
		}
	case current.GetUID() != original && sameImage(want, current):
		u.result = skipped(ReasonResolved, "already restored: the object (uid %s) is as it was before the sweep", current.GetUID())
	case current.GetUID() != original:
		u.result = failed(ReasonConflict, "an object of that name (uid %s) exists and differs from the pre-image: left alone", current.GetUID())
	default:
		u = planUndoInPlace(rec, want, current)
	}
	return u
}

// planUndoInPlace decides what undoes rec's action on the very object it was taken on.
func planUndoInPlace(rec FindingResult, want, current *unstructured.Unstructured) undo {
	var u undo
	switch rec.Action.Type {
	case (rules.Delete{}).Type():
		if current.GetDeletionTimestamp() == nil {
			u.result = skipped(ReasonResolved, "the object was not deleted: nothing to undo")
		} else {
			u.result = skipped(ReasonNotRestorable, "its deletion is under way (finalizers %s); once it is gone, restore re-creates it",
				strings.Join(current.GetFinalizers(), ", "))
		}
	case (rules.RemoveFinalizers{}).Type():
		removed := rec.Action.Finalizers
		after := want.DeepCopy()
		after.SetFinalizers(nilIfEmpty(slices.DeleteFunc(slices.Clone(want.GetFinalizers()), func(f string) bool { return slices.Contains(removed, f) })))
		switch {
		case !slices.ContainsFunc(removed, func(f string) bool { return !slices.Contains(current.GetFinalizers(), f) }):
			u.result = skipped(ReasonResolved, "the finalizers are on the object")
		case current.GetDeletionTimestamp() != nil:
			u.result = skipped(ReasonNotRestorable, "the object is being deleted, and the API server adds no finalizer to an object being deleted")
		case !sameImage(after, current):
			u.result = failed(ReasonConflict, "the object changed after the sweep removed its finalizers: left alone")
		default:
			u.action = addFinalizers{removed}
		}
	case (rules.SetOwnerReferences{}).Type():
		after := want.DeepCopy()
		after.SetOwnerReferences(nilIfEmpty(ownerReferences(want.GetOwnerReferences(),
			rules.SetOwnerReferences{Add: rec.Action.AddOwnerReferences, Remove: rec.Action.RemoveOwnerReferences})))
		refs := want.GetOwnerReferences()
		switch {
		case reflect.DeepEqual(refs, current.GetOwnerReferences()):
			u.result = skipped(ReasonResolved, "the ownerReferences are as they were before the sweep")
		case !sameImage(after, current):
			u.result = failed(ReasonConflict, "the object changed after the sweep set its ownerReferences: left alone")
		default:
			u.action = setOwners{refs: refs, change: ownerChange(current.GetOwnerReferences(), refs)}
		}
	default:
		u.result = skipped(ReasonNotRestorable, "restore does not know action %s", rec.Action.Type)
	}
	return u
}

// nilIfEmpty is list, or nil if it is empty: the API server keeps no empty list of finalizers or
// ownerReferences, so an image to compare with an object must not hold one.
func nilIfEmpty[T any](list []T) []T {
	if len(list) == 0 {
		return nil
	}
	return list
}

// ownerChange is what turns the references from into to, for the report.
func ownerChange(from, to []metav1.OwnerReference) rules.SetOwnerReferences {
	var change rules.SetOwnerReferences
	for _, ref := range to {
		// Equal, not ==: Controller and BlockOwnerDeletion are pointers.
		if !slices.ContainsFunc(from, func(f metav1.OwnerReference) bool { return reflect.DeepEqual(f, ref) }) {
			change.Add = append(change.Add, ref)
		}
	}
	for _, ref := range from {
		if !slices.ContainsFunc(to, func(t metav1.OwnerReference) bool { return t.UID == ref.UID }) {
			change.Remove = append(change.Remove, ref.UID)
		}
	}
	return change
}

// sameImage reports whether two objects are the same but for status and what the server sets.
func sameImage(a, b *unstructured.Unstructured) bool {
	return reflect.DeepEqual(preImage(a).Object, preImage(b).Object)
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
		j := slices.IndexFunc(r.records, func(rec FindingResult) bool { return rec.Object.UID == ref.UID })
		if j < 0 {
			continue
		}
		owner := r.records[j]
		now, err := dynamicClient(r.Dynamic, recordResource(owner), owner.Object.Namespace).Get(ctx, owner.Object.Name, metav1.GetOptions{})
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

// send carries out a restore action, with the same preconditions as a sweep's writes: a create
// fails if the object exists meanwhile; a change tests the UID and resourceVersion read.
func (r *restorer) send(ctx context.Context, client dynamic.ResourceInterface, want, current *unstructured.Unstructured, action rules.Action) Result {
	var dryRun []string
	if r.Mode == DryRunServer {
		dryRun = []string{metav1.DryRunAll}
	}
	var err error
	var evidence string
	if r.Mode == DryRunClient {
		return Result{Outcome: OutcomePlanned}
	}
	switch act := action.(type) {
	case recreate:
		var created *unstructured.Unstructured
		created, err = client.Create(ctx, want, metav1.CreateOptions{FieldManager: RestoreFieldManager, DryRun: dryRun})
		if err == nil && r.Mode == DryRunNone {
			evidence = fmt.Sprintf("re-created with a new UID %s", created.GetUID())
		}
	case addFinalizers:
		apply := &unstructured.Unstructured{}
		apply.SetAPIVersion(current.GetAPIVersion())
		apply.SetKind(current.GetKind())
		apply.SetNamespace(current.GetNamespace())
		apply.SetName(current.GetName())
		apply.SetUID(current.GetUID())
		apply.SetResourceVersion(current.GetResourceVersion())
		apply.SetFinalizers(act.finalizers)
		_, err = client.Apply(ctx, current.GetName(), apply, metav1.ApplyOptions{FieldManager: RestoreFieldManager, DryRun: dryRun})
	case setOwners:
		refs := act.refs
		if refs == nil {
			refs = []metav1.OwnerReference{}
		}
		var patch []byte
		patch, err = json.Marshal([]jsonPatchOp{
			{Op: "test", Path: "/metadata/uid", Value: current.GetUID()},
			{Op: "test", Path: "/metadata/resourceVersion", Value: current.GetResourceVersion()},
			{Op: "add", Path: "/metadata/ownerReferences", Value: refs},
		})
		if err == nil {
			_, err = client.Patch(ctx, current.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: RestoreFieldManager, DryRun: dryRun})
		}
	}
	switch {
	case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err), apierrors.IsInvalid(err) && current != nil:
		return failed(ReasonConflict, "the object changed while it was restored (%v): left alone; run restore again to look at it afresh", err)
	case err != nil:
		return failed(ReasonAPIError, "%v", err)
	case r.Mode == DryRunServer:
		return Result{Outcome: OutcomeDryRun}
	}
	res := Result{Outcome: OutcomeApplied}
	if evidence != "" {
		res.Evidence = []string{evidence}
	}
	return res
}

// restoreInstances re-creates the custom resources of a CustomResourceDefinition restored (or
// found already restored) as res says, once the API server serves them.
func (r *restorer) restoreInstances(ctx context.Context, rec FindingResult, res Result) Result {
	instances := rec.Before.Instances
	if len(instances) == 0 {
		return res
	}
	name := rec.Object.Name
	if r.Mode != DryRunNone && res.Outcome != OutcomeSkipped {
		res.Evidence = append(res.Evidence, fmt.Sprintf("its %d custom resources are re-created once it is served", len(instances)))
		return res
	}
	plural, _, _ := unstructured.NestedString(rec.Before.Object.Object, "spec", "names", "plural")
	if err := r.waitEstablished(ctx, name); err != nil {
		return failed(ReasonAPIError, "CustomResourceDefinition %s is not served, so its %d custom resources were not re-created: %v", name, len(instances), err)
	}
	var created, present int
	var problems []string
	conflict := false
	for _, inst := range instances {
		gv, _ := schema.ParseGroupVersion(inst.GetAPIVersion())
		client := dynamicClient(r.Dynamic, gv.WithResource(plural), inst.GetNamespace())
		current, err := client.Get(ctx, inst.GetName(), metav1.GetOptions{})
		switch {
		case err == nil && sameImage(inst, current):
			present++
			continue
		case err == nil:
			conflict = true
			problems = append(problems, fmt.Sprintf("%s exists and differs from its pre-image: left alone", objectName(inst)))
			continue
		case !apierrors.IsNotFound(err):
			problems = append(problems, fmt.Sprintf("read %s: %v", objectName(inst), err))
			continue
		case r.Mode == DryRunClient:
			created++
			continue
		}
		var dryRun []string
		if r.Mode == DryRunServer {
			dryRun = []string{metav1.DryRunAll}
		}
		if _, err := client.Create(ctx, inst, metav1.CreateOptions{FieldManager: RestoreFieldManager, DryRun: dryRun}); err != nil {
			conflict = conflict || apierrors.IsAlreadyExists(err)
			problems = append(problems, fmt.Sprintf("re-create %s: %v", objectName(inst), err))
			continue
		}
		created++
	}
	res.Evidence = append(res.Evidence, fmt.Sprintf("of its %d custom resources, %d re-created, %d already there", len(instances), created, present))
	switch {
	case len(problems) > 0 && conflict:
		return res.then(failed(ReasonConflict, "%s", strings.Join(problems, "; ")))
	case len(problems) > 0:
		return res.then(failed(ReasonAPIError, "%s", strings.Join(problems, "; ")))
	case created > 0 && res.Outcome == OutcomeSkipped:
		outcome := Result{Outcome: OutcomeApplied}
		switch r.Mode {
		case DryRunClient:
			outcome.Outcome = OutcomePlanned
		case DryRunServer:
			outcome.Outcome = OutcomeDryRun
		}
		return res.then(outcome)
	}
	return res
}

// waitEstablished waits until the API server serves the CustomResourceDefinition's resource.
func (r *restorer) waitEstablished(ctx context.Context, name string) error {
	client := r.Dynamic.Resource(rules.CustomResourceDefinitions.GroupVersionResource)
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
