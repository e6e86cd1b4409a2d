// Package restore undoes a sweep: it reads the actions a sweep applied (from its report, its run's
// Secrets or its backup directory), checks that it can trust each (signed by this cluster's sweeper,
// a write its rule declares, a pre-image that matches its finding), and puts the objects back as
// they were, newest first. What each type of action needs to be undone is the engine's
// (sweeper.PlanUndo), and so is every write it sends (sweeper.Writer): restore decides which
// records, in which order, against which objects.
package restore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/operator-sweeper/operator-sweeper/backup"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// Rule names the findings of a restore in its report.
const Rule = "restore"

// FieldManager is the field manager of restore's writes.
const FieldManager = "operator-sweeper-restore"

// Config is what a restore reads of its options.
type Config struct {
	// Cluster and Version name the run in its report.
	Cluster, Version string
	// Namespace is the sweeper's: where the pre-images of a run and the signing key are.
	Namespace string
	// DryRun says whether and how the writes reach the API server: client, the default, reads and
	// plans only, and lists what it would re-create with what that grants.
	DryRun report.DryRunMode
}

// Run undoes the actions of records, or of src's run, those src.Only names if any, newest first:
// it re-creates what was deleted (never a pod), re-adds the finalizers it removed and puts back
// the ownerReferences it changed. A record it cannot trust is refused; an object that exists and
// is neither as the sweep left it nor as it was before is left alone (failed, reason conflict). A
// record refused or failed never stops the others. It returns a report like a sweep's, with
// findings of rule "restore"; an --only that names no record is an input.Error.
func Run(ctx context.Context, cfg Config, clients *sweeper.Clients, records []Record, src Source, logger *slog.Logger) (*report.Report, error) {
	if src.Run != "" {
		var err error
		if records, err = loadRun(ctx, clients, cfg.Namespace, src.Run); err != nil {
			return nil, err
		}
	}
	records, err := onlyRecords(ctx, clients, records, src.Only)
	if err != nil {
		return nil, err
	}
	uid, err := clients.ClusterUID(ctx)
	if err != nil {
		return nil, fmt.Errorf("tell which cluster this is: %w", err)
	}
	key, keyErr := backup.Key(ctx, clients.Dynamic, cfg.Namespace, false)
	authorized, broken := declared(rules.Registry(), nil)
	writer := clients.Writer(cfg.DryRun, FieldManager)
	r := &restorer{
		Writer:  writer,
		Logger:  logger,
		records: records,
		trust:   trust{cluster: cfg.Cluster, clusterUID: string(uid), key: key, keyErr: keyErr, rules: authorized, broken: broken},
		mapper:  clients.Mapper(),
		secrets: &backup.SecretsReader{Client: writer.Dynamic},
	}
	out := report.New(clients.Clock().Now(), report.Metadata{Mode: cfg.DryRun, Version: cfg.Version, Cluster: cfg.Cluster, ClusterUID: string(uid)})
	out.Errors = append(out.Errors, brokenRules(broken)...)
	for _, rec := range restoreOrder(records) {
		out.Add(r.restore(ctx, rec))
	}
	out.Metadata.EndTime.Time = clients.Clock().Now()
	logger.InfoContext(ctx, "restore done", "mode", cfg.DryRun, "planned", out.Summary.Planned,
		"applied", out.Summary.Applied, "failed", out.Summary.Failed, "skipped", out.Summary.Skipped)
	return out, nil
}

// restoreOrder is the order restore undoes records in: CustomResourceDefinitions first (their
// custom resources need them), then the owners of other records' objects, then the rest, the last
// action first.
func restoreOrder(records []Record) []Record {
	owners := map[types.UID]bool{}
	for _, rec := range records {
		if rec.Before != nil {
			for _, ref := range rec.Before.OwnerReferences {
				owners[ref.UID] = true
			}
		}
	}
	rank := func(rec Record) int {
		switch {
		case isCRD(rec.resource()):
			return 0
		case owners[rec.Object.UID]:
			return 1
		}
		return 2
	}
	ordered := slices.Clone(records)
	slices.Reverse(ordered)
	slices.SortStableFunc(ordered, func(a, b Record) int { return cmp.Compare(rank(a), rank(b)) })
	return ordered
}

// restorer undoes the actions of records.
type restorer struct {
	Writer  sweeper.Writer
	Logger  *slog.Logger
	records []Record
	trust   trust
	mapper  meta.RESTMapperWithContext
	secrets *backup.SecretsReader
}

// restore undoes the action of one record, and returns it as a finding of the restore report.
func (r *restorer) restore(ctx context.Context, rec Record) report.FindingResult {
	gvr := rec.resource()
	f := rules.Finding{
		Rule:     Rule,
		Severity: rules.SeverityInfo,
		Object:   rules.ObjectRef{Resource: gvr, Kind: rec.Object.Kind, Namespace: rec.Object.Namespace, Name: rec.Object.Name, UID: rec.Object.UID},
		Reason:   fmt.Sprintf("undo %s by rule %s", rec.Action.TypeName(), rec.Rule),
		Action:   sweeper.Recreate(0),
	}
	if rec.Before == nil || rec.Before.Kept == "" || rec.Action == nil {
		return sweeper.NewFindingResult(f, sweeper.Skipped(report.ReasonNotRestorable, "no pre-image of the object was kept: the sweep ran before operator-sweeper kept them"))
	}
	f.Action = sweeper.UndoOf(rec.FindingResult)
	if err := r.trust.record(rec); err != nil {
		return sweeper.NewFindingResult(f, sweeper.Skipped(report.ReasonRefused, "%v", err))
	}
	before, err := r.preImage(ctx, rec)
	if err == nil {
		err = r.trust.preImage(rec, before)
	}
	if err != nil {
		return sweeper.NewFindingResult(f, sweeper.Skipped(report.ReasonRefused, "%v", err))
	}
	want, evidence := r.expected(ctx, before)
	current, err := r.Writer.Dynamic.Resource(gvr).Namespace(rec.Object.Namespace).Get(ctx, rec.Object.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		current = nil
	case err != nil:
		return sweeper.NewFindingResult(f, sweeper.Failed(report.ReasonAPIError, "read it: %v", err))
	}
	plan := sweeper.PlanUndo(rec.FindingResult, want, current, func(ref metav1.OwnerReference) bool { return r.ownerExists(ctx, rec, ref) })
	f.Evidence = append(evidence, plan.Evidence...)
	res := plan.Result
	if plan.Action != nil {
		f.Action = plan.Action
		if plan.Action.Type() == sweeper.Recreate(0).Type() {
			f.Evidence = append(f.Evidence, grants(plan.Object)...)
		}
		res = r.Writer.Undo(ctx, gvr, plan, current)
	}
	if isCRD(gvr) && (res.Outcome != report.OutcomeFailed && res.Outcome != report.OutcomeSkipped || res.Reason == report.ReasonResolved) {
		res = r.restoreInstances(ctx, rec, before, res)
		f.Action = sweeper.Recreate(rec.Before.CustomResources)
	}
	return sweeper.NewFindingResult(f, res)
}

// open opens a record's body, where it is kept.
func (r *restorer) open(ctx context.Context, rec Record) (*backup.Body, error) {
	if rec.dir != "" {
		return backup.OpenFile(rec.dir, rec.Before)
	}
	if strings.HasPrefix(rec.Before.Kept, "file:") {
		return nil, fmt.Errorf("its pre-image is kept in a --backup-dir (%s): restore --from that directory", rec.Before.Kept)
	}
	return r.secrets.Open(ctx, rec.Before)
}

// preImage reads a record's pre-image, and the rest of its body, which it checks against its
// SHA-256 as kept: a body that was changed is refused before anything is written.
func (r *restorer) preImage(ctx context.Context, rec Record) (*unstructured.Unstructured, error) {
	body, err := r.open(ctx, rec)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	obj, err := body.Next()
	if err != nil {
		return nil, err
	}
	n := 0
	for ; ; n++ {
		if _, err := body.Next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
	}
	if n != rec.Before.CustomResources {
		return nil, fmt.Errorf("its pre-image holds %d custom resources, not %d as its record says", n, rec.Before.CustomResources)
	}
	return obj, nil
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
		j := slices.IndexFunc(r.records, func(rec Record) bool { return rec.Object.UID == ref.UID })
		if j < 0 {
			continue
		}
		owner := r.records[j]
		now, err := r.Writer.Dynamic.Resource(owner.resource()).Namespace(owner.Object.Namespace).Get(ctx, owner.Object.Name, metav1.GetOptions{})
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

// ownerExists reports whether the owner an ownerReference of rec's object names exists, with its
// UID: in the object's namespace, or cluster-scoped.
func (r *restorer) ownerExists(ctx context.Context, rec Record, ref metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false
	}
	mapping, err := r.mapper.RESTMappingWithContext(ctx, gv.WithKind(ref.Kind).GroupKind(), gv.Version)
	if err != nil {
		return false
	}
	namespace := ""
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		namespace = rec.Object.Namespace
	}
	owner, err := r.Writer.Dynamic.Resource(mapping.Resource).Namespace(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	return err == nil && owner.GetUID() == ref.UID
}

// restoreInstances re-creates the custom resources of a CustomResourceDefinition restored (or
// found already restored) as res says, once the API server serves them, read from its pre-image
// one at a time.
func (r *restorer) restoreInstances(ctx context.Context, rec Record, crd *unstructured.Unstructured, res sweeper.Result) sweeper.Result {
	total := rec.Before.CustomResources
	if total == 0 {
		return res
	}
	name := rec.Object.Name
	if r.Writer.Mode != report.DryRunNone && res.Outcome != report.OutcomeSkipped {
		res.Evidence = append(res.Evidence, fmt.Sprintf("its %d custom resources are re-created once it is served", total))
		return res
	}
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	if err := r.waitEstablished(ctx, name); err != nil {
		return sweeper.Failed(report.ReasonAPIError, "CustomResourceDefinition %s is not served, so its %d custom resources were not re-created: %v", name, total, err)
	}
	body, err := r.open(ctx, rec)
	if err != nil {
		return sweeper.Failed(report.ReasonAPIError, "read its custom resources: %v", err)
	}
	defer body.Close()
	if _, err := body.Next(); err != nil { // the CRD itself
		return sweeper.Failed(report.ReasonAPIError, "read its custom resources: %v", err)
	}
	var created, present int
	var problems []string
	conflict := false
	for {
		inst, err := body.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			problems = append(problems, err.Error())
			break
		}
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
		if done := r.Writer.Undo(ctx, resource, sweeper.Recreation(inst), nil); done.Outcome == report.OutcomeFailed {
			conflict = conflict || done.Reason == report.ReasonConflict
			problems = append(problems, fmt.Sprintf("re-create %s: %s", objectName(inst), done.Detail))
			continue
		}
		created++
	}
	res.Evidence = append(res.Evidence, fmt.Sprintf("of its %d custom resources, %d re-created, %d already there", total, created, present))
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

// brokenRules are the errors of a restore whose rules could not all be built: each fails the run,
// and the records of its rule are refused.
func brokenRules(broken map[string]error) []report.Error {
	var errs []report.Error
	for _, name := range slices.Sorted(maps.Keys(broken)) {
		errs = append(errs, report.Error{Stage: report.StagePlan, Rule: name, Fatal: true,
			Message: fmt.Sprintf("rule %s could not be built, so its records cannot be checked: %v", name, broken[name])})
	}
	return errs
}
