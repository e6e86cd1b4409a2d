// Package report is what a run of operator-sweeper found and did, as data: the SweepReport with
// its findings, outcomes and pre-images, and its renderings (table, JSON, YAML, Markdown, HTML,
// the blockedBy chains and the explanation of one object). It reads nothing from the cluster and
// writes nowhere but where it is told.
package report

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// APIVersion and Kind identify a SweepReport.
const (
	APIVersion = "sweeper.operator-sweeper.io/v1alpha1"
	Kind       = "SweepReport"
)

// DryRunMode says whether and how actions reach the API server.
type DryRunMode string

const (
	// DryRunClient plans and reports; nothing is sent. The default.
	DryRunClient DryRunMode = "client"
	// DryRunServer sends every write with dryRun=All, so admission and RBAC are exercised and
	// nothing is persisted.
	DryRunServer DryRunMode = "server"
	// DryRunNone applies the actions.
	DryRunNone DryRunMode = "none"
)

// Done is the outcome of an action carried out in mode.
func (mode DryRunMode) Done() Outcome {
	switch mode {
	case DryRunNone:
		return OutcomeApplied
	case DryRunServer:
		return OutcomeDryRun
	default:
		return OutcomePlanned
	}
}

// The stages of a run, as named in Error.
const (
	StageInventory = "inventory"
	StageObserve   = "observe"
	StagePlan      = "plan"
	StageApply     = "apply"
	StagePush      = "push"
	StageNotify    = "notify"
)

// Outcome is what became of a finding's action.
type Outcome string

// The outcomes of an action.
const (
	// OutcomePlanned: --dry-run=client, nothing was sent.
	OutcomePlanned Outcome = "planned"
	// OutcomeDryRun: --dry-run=server, the server accepted the write and persisted nothing.
	OutcomeDryRun Outcome = "dry-run"
	// OutcomeApplied: the write was persisted, or the object was already gone.
	OutcomeApplied Outcome = "applied"
	// OutcomeFailed: the write failed; the finding says why.
	OutcomeFailed Outcome = "failed"
	// OutcomeSkipped: the action was not attempted; the finding says why.
	OutcomeSkipped Outcome = "skipped"
)

// Reason says, as a word, why an action was skipped or failed: the report's skipReason and
// failReason, and the reason label of operator_sweeper_actions.
type Reason string

// Why an action was skipped.
const (
	// ReasonOptIn: the rule needs an opt-in in the config that is not given.
	ReasonOptIn Reason = "opt-in"
	// ReasonProtectedNamespace: the object is in a --protected-namespaces namespace.
	ReasonProtectedNamespace Reason = "protected-namespace"
	// ReasonDependency: an action this one depends on was not done in this run.
	ReasonDependency Reason = "dependency"
	// ReasonLimit: --max-actions was reached.
	ReasonLimit Reason = "limit"
	// ReasonResolved: the object changed after it was observed, so that the action is no longer
	// needed, or no longer covered by what was checked; the next run looks again.
	ReasonResolved Reason = "resolved"
	// ReasonStale: a fact the action rests on no longer holds when read again, live, or could
	// not be read again.
	ReasonStale Reason = "stale"
	// ReasonMinAge: the object is younger than --min-age, or than the sweep.
	ReasonMinAge Reason = "min-age"
	// ReasonZoneOutage: the node is in a zone where most nodes are not Ready at once.
	ReasonZoneOutage Reason = rules.HeldZoneOutage
	// ReasonNotDrainable: a drain cannot tell which workload finalizes the custom resource.
	ReasonNotDrainable Reason = rules.HeldNotDrainable
	// ReasonInterrupted: the run was interrupted (SIGTERM, SIGINT, --timeout) before the action.
	ReasonInterrupted Reason = "interrupted"
	// ReasonNotRestorable: restore cannot undo the action (a pod deleted, a deletion under way).
	ReasonNotRestorable Reason = "not-restorable"
	// ReasonRefused: restore refuses a record it cannot trust: of another cluster, unsigned or
	// changed, not one a rule could have written, or whose pre-image does not match its finding.
	ReasonRefused Reason = "refused"
)

// Why an action failed.
const (
	// ReasonConflict: the object changed again while the action was being retried.
	ReasonConflict Reason = "conflict"
	// ReasonAPIError: the API server refused the write, or re-reading the object failed.
	ReasonAPIError Reason = "api-error"
	// ReasonNotInView: the finding names an object the view does not hold: a rule's bug.
	ReasonNotInView Reason = "not-in-view"
	// ReasonRuleFailed: the rule panicked while re-planning the action: a rule's bug.
	ReasonRuleFailed Reason = "rule-failed"
	// ReasonBackup: the pre-image could not be kept (in Secrets of the sweeper's namespace, or in
	// --backup-dir), so the write was not sent.
	ReasonBackup Reason = "backup"
	// ReasonStayed: the object was deleted, but still there when preflight --drain stopped
	// waiting for it to go: what should have finalized it did not.
	ReasonStayed Reason = "stayed"
)

// Report is what one run found and did. Its JSON form is the contract with whoever reads it:
// later rules add findings; fields are only ever added, and optional.
type Report struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   Metadata        `json:"metadata"`
	Summary    Summary         `json:"summary"`
	Findings   []FindingResult `json:"findings"`
	Errors     []Error         `json:"errors"`
}

// Metadata says when, where and how the run happened.
type Metadata struct {
	StartTime metav1.Time `json:"startTime"`
	EndTime   metav1.Time `json:"endTime"`
	Mode      DryRunMode  `json:"mode"`
	Version   string      `json:"version"`
	Cluster   string      `json:"cluster"`
	// ClusterUID is the UID of the cluster's kube-system namespace: which cluster it is, whatever
	// the context's name.
	ClusterUID string `json:"clusterUID,omitempty"`
	// RunID names the run, as the labels of its pre-images' Secrets do.
	RunID string `json:"runID,omitempty"`
	// Shard is "i/n" when the run is shard i of a sweep split across n processes: its findings
	// are those of the objects it owns.
	Shard string `json:"shard,omitempty"`
}

// Summary counts what the run did. Planned counts actions that were not persisted: planned
// under --dry-run=client and accepted under --dry-run=server.
type Summary struct {
	// Resources is the number of resource types walked (a list that failed is in errors).
	Resources int `json:"resources"`
	// Scanned is the number of objects listed.
	Scanned  int `json:"scanned"`
	Findings int `json:"findings"`
	Planned  int `json:"planned"`
	Applied  int `json:"applied"`
	Failed   int `json:"failed"`
	Skipped  int `json:"skipped"`
	// HeldBack counts the actions --max-actions held back (skipped, limit): the next runs take
	// them; RunsToFinish is how many runs at this cap that takes, this one's limit on each.
	HeldBack     int `json:"heldBack,omitempty"`
	RunsToFinish int `json:"runsToFinish,omitempty"`
	// Incomplete says the run could not observe everything, although no stage failed: an API
	// group's discovery or a list failed after retries (errors names each, stage inventory or
	// observe). Nothing is concluded from what was not fully listed, so findings may be missing.
	Incomplete bool `json:"incomplete"`
	// StuckNamespaces counts the Terminating namespaces stuck for longer than
	// --min-terminating-age by root cause: the name of the rule of a finding at the end of a
	// chain of blockedBy that calls for an action or warns, "unexplained" where there is none.
	// A namespace with several causes counts under each.
	StuckNamespaces map[string]int `json:"stuckNamespaces,omitempty"`
}

// FindingResult is a finding and what became of its action. A finding without an action (report
// only) has no action, outcome or error.
type FindingResult struct {
	// Cluster names the cluster of the finding in a report of several (a FleetReport's merged
	// view); empty in a report of one.
	Cluster  string         `json:"cluster,omitempty"`
	Rule     string         `json:"rule"`
	Severity rules.Severity `json:"severity"`
	Object   ObjectSummary  `json:"object"`
	Reason   string         `json:"reason"`
	Evidence []string       `json:"evidence"`
	// Symptom says the finding reports that its object is stuck, not why: what blocks it, and its
	// other findings, explain it.
	Symptom bool           `json:"symptom,omitempty"`
	Action  *ActionSummary `json:"action,omitempty"`
	Outcome Outcome        `json:"outcome,omitempty"`
	// SkipReason says, as a word, why a skipped action was skipped (limit, opt-in, …).
	SkipReason Reason `json:"skipReason,omitempty"`
	// FailReason says, as a word, why a failed action failed (api-error, conflict, …).
	FailReason Reason `json:"failReason,omitempty"`
	// Error says it for a human: the error of a failed action, or what the skip reason is about.
	Error string `json:"error,omitempty"`
	// BlockedBy are the objects that keep this one stuck; their findings say why.
	BlockedBy []ObjectSummary `json:"blockedBy,omitempty"`
	// OperatorGone is the operator uninstalled the finding blames, as its rule says: what the
	// preflight that would have prevented it is asked about.
	OperatorGone *rules.OperatorGone `json:"operatorGone,omitempty"`
	// Before says where the pre-image of the object written is kept, and what undoing needs
	// short of its body.
	Before *PreImage `json:"before,omitempty"`
	// Signature is the HMAC-SHA256 (hex) of the finding, its cluster and its run, with the key the
	// sweeper keeps in its namespace (see SigningPayload): restore undoes only what it signed.
	Signature string `json:"signature,omitempty"`
}

// ObjectSummary identifies the object of a finding.
type ObjectSummary struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Namespace  string    `json:"namespace,omitempty"`
	Name       string    `json:"name"`
	UID        types.UID `json:"uid"`
}

// ObjectOf summarizes the object a rule names.
func ObjectOf(ref rules.ObjectRef) ObjectSummary {
	return ObjectSummary{APIVersion: ref.APIVersion(), Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID}
}

// ActionSummary is an action as data in the report: its type and what it changes.
type ActionSummary struct {
	Type                  string                  `json:"type"`
	Finalizers            []string                `json:"finalizers,omitempty"`
	AddOwnerReferences    []metav1.OwnerReference `json:"addOwnerReferences,omitempty"`
	RemoveOwnerReferences []types.UID             `json:"removeOwnerReferences,omitempty"`
	GracePeriodSeconds    *int64                  `json:"gracePeriodSeconds,omitempty"`
}

// Error is a problem that kept part of the run from being done.
type Error struct {
	// Cluster names the cluster of the problem in a report of several; empty in a report of one.
	Cluster string `json:"cluster,omitempty"`
	// Stage is where it happened: inventory, observe, plan, apply, push or notify.
	Stage string `json:"stage"`
	// Rule is the rule that failed, for a problem of one rule.
	Rule string `json:"rule,omitempty"`
	// Resource is what could not be read: an API group version (inventory) or a list (observe).
	Resource string `json:"resource,omitempty"`
	Message  string `json:"message"`
	// Fatal says the problem fails the run (exit 1): a whole stage failed, a rule failed, the run
	// was interrupted, or a push or notification that was required failed.
	Fatal bool `json:"fatal,omitempty"`
}

// New returns an empty report of a run that started at start.
func New(start time.Time, meta Metadata) *Report {
	meta.StartTime = metav1.NewTime(start)
	return &Report{APIVersion: APIVersion, Kind: Kind, Metadata: meta, Findings: []FindingResult{}, Errors: []Error{}}
}

// Add appends a finding and counts it.
func (r *Report) Add(f FindingResult) {
	r.Summary.count(f)
	r.Findings = append(r.Findings, f)
}

// AddAll adds findings, in their order, as Add does each.
func (r *Report) AddAll(findings []FindingResult) {
	for _, f := range findings {
		r.Summary.count(f)
	}
	if r.Findings == nil {
		r.Findings = findings // not copied: the caller hands them over
		return
	}
	r.Findings = append(r.Findings, findings...)
}

// count counts a finding and its outcome.
func (s *Summary) count(f FindingResult) {
	s.Findings++
	switch {
	case f.Action == nil:
	case f.Outcome == OutcomePlanned, f.Outcome == OutcomeDryRun:
		s.Planned++
	case f.Outcome == OutcomeApplied:
		s.Applied++
	case f.Outcome == OutcomeFailed:
		s.Failed++
	case f.Outcome == OutcomeSkipped:
		s.Skipped++
		if f.SkipReason == ReasonLimit {
			s.HeldBack++
		}
	}
}

// HoldBack says what the held-back actions need at a cap of maxActions a run: RunsToFinish.
func (s *Summary) HoldBack(maxActions int) {
	s.RunsToFinish = 0
	if maxActions > 0 {
		s.RunsToFinish = (s.HeldBack + maxActions - 1) / maxActions
	}
}

// MarkStayed records that the objects of findings, deleted, were still there when the command
// stopped waiting for them: their actions failed (stayed), with the message of each UID; the
// summary is counted again, once. It returns how many findings it marked.
func (r *Report) MarkStayed(stayed map[types.UID]string) int {
	marked := 0
	for i := range r.Findings {
		f := &r.Findings[i]
		message, ok := stayed[f.Object.UID]
		if !ok || f.Action == nil {
			continue
		}
		f.Outcome, f.FailReason, f.SkipReason, f.Error = OutcomeFailed, ReasonStayed, "", message
		marked++
	}
	if marked > 0 {
		r.recount()
	}
	return marked
}

// recount counts the findings and their outcomes again.
func (r *Report) recount() {
	s := &r.Summary
	s.Findings, s.Planned, s.Applied, s.Failed, s.Skipped, s.HeldBack = 0, 0, 0, 0, 0, 0
	for _, f := range r.Findings {
		s.count(f)
	}
}

// Failed reports whether an action failed or a problem is fatal.
func (r *Report) Failed() bool {
	return r.Summary.Failed > 0 || slices.ContainsFunc(r.Errors, func(e Error) bool { return e.Fatal })
}

// String names the object as the report's table does: "Kind namespace/name".
func (o ObjectSummary) String() string { return o.Kind + " " + o.NamespacedName() }

// NamespacedName is "namespace/name", or "name" for a cluster-scoped object.
func (o ObjectSummary) NamespacedName() string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

// TypeName is the action's type, or "-" for none.
func (a *ActionSummary) TypeName() string {
	if a == nil {
		return "-"
	}
	return a.Type
}

// SweepStages are the stages every sweep goes through, in order; a run that notifies adds
// StageNotify.
func SweepStages() []string { return []string{StageInventory, StageObserve, StagePlan, StageApply} }
