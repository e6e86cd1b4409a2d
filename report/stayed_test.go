package report

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// drainReport is the report of a drain: deletes applied, planned, skipped and failed, and findings
// without an action, of the objects named by their UIDs.
func drainReport() *Report {
	r := New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), Metadata{Mode: DryRunNone})
	r.Summary.Resources, r.Summary.Scanned, r.Summary.Incomplete = 12, 340, true
	r.Summary.StuckNamespaces = map[string]int{"preflight": 1}
	deleted := func(uid string, outcome Outcome) FindingResult {
		return FindingResult{Rule: "preflight", Object: ObjectSummary{APIVersion: "acme.io/v1", Kind: "Widget", Namespace: "shop", Name: uid, UID: types.UID(uid)},
			Reason: "holds widgets.acme.io/finalizer", Evidence: []string{}, Action: &ActionSummary{Type: "Delete"}, Outcome: outcome}
	}
	skipped := deleted("skipped", OutcomeSkipped)
	skipped.SkipReason, skipped.Error = ReasonOptIn, "set drain-protected to act"
	failed := deleted("failed", OutcomeFailed)
	failed.FailReason, failed.Error = ReasonAPIError, "admission webhook denied the request"
	for _, f := range []FindingResult{
		deleted("a", OutcomeApplied),
		deleted("b", OutcomeApplied),
		deleted("planned", OutcomePlanned),
		skipped,
		failed,
		{Rule: "preflight", Object: ObjectSummary{Kind: "Namespace", Name: "shop", UID: "report-only"}, Reason: "2 of its custom resources hold a finalizer"},
		// The same object twice: first a finding without an action, then its delete.
		{Rule: "preflight", Object: ObjectSummary{Kind: "Widget", Namespace: "shop", Name: "twice", UID: "twice"}, Reason: "reported"},
		deleted("twice", OutcomeApplied),
	} {
		r.Add(f)
	}
	return r
}

func TestMarkStayed(t *testing.T) {
	const stayed = "still there after 5m0s with finalizers widgets.acme.io/finalizer: the operator did not remove them"
	base := drainReport()
	require.Equal(t, Summary{Resources: 12, Scanned: 340, Findings: 8, Planned: 1, Applied: 3, Failed: 1, Skipped: 1, Incomplete: true,
		StuckNamespaces: map[string]int{"preflight": 1}}, base.Summary)

	tests := []struct {
		name        string
		uids        []types.UID
		wantMarked  []bool
		wantChanged []int // the indexes of the findings marked
		wantSummary func(s *Summary)
	}{
		{
			name:        "an applied delete stayed: failed (stayed)",
			uids:        []types.UID{"a"},
			wantMarked:  []bool{true},
			wantChanged: []int{0},
			wantSummary: func(s *Summary) { s.Applied, s.Failed = 2, 2 },
		},
		{
			name:        "two stayed, each counted once",
			uids:        []types.UID{"a", "b", "a"},
			wantMarked:  []bool{true, true, true},
			wantChanged: []int{0, 1},
			wantSummary: func(s *Summary) { s.Applied, s.Failed = 1, 3 },
		},
		{
			name:        "a skipped action: its skip reason goes",
			uids:        []types.UID{"skipped"},
			wantMarked:  []bool{true},
			wantChanged: []int{3},
			wantSummary: func(s *Summary) { s.Skipped, s.Failed = 0, 2 },
		},
		{
			name:        "an action that failed already: failed (stayed), counted once",
			uids:        []types.UID{"failed"},
			wantMarked:  []bool{true},
			wantChanged: []int{4},
			wantSummary: func(s *Summary) {},
		},
		{
			name:        "the finding of the object with an action, not the one without",
			uids:        []types.UID{"twice"},
			wantMarked:  []bool{true},
			wantChanged: []int{7},
			wantSummary: func(s *Summary) { s.Applied, s.Failed = 2, 2 },
		},
		{
			name:        "a finding without an action: not marked",
			uids:        []types.UID{"report-only"},
			wantMarked:  []bool{false},
			wantSummary: func(s *Summary) {},
		},
		{
			name:        "no finding has the object",
			uids:        []types.UID{"unknown", ""},
			wantMarked:  []bool{false, false},
			wantSummary: func(s *Summary) {},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := drainReport()
			for i, uid := range tt.uids {
				want := 0
				if tt.wantMarked[i] {
					want = 1
				}
				assert.Equal(t, want, r.MarkStayed(map[types.UID]string{uid: stayed}), uid)
			}
			want := drainReport()
			for _, i := range tt.wantChanged {
				f := &want.Findings[i]
				f.Outcome, f.FailReason, f.SkipReason, f.Error = OutcomeFailed, ReasonStayed, "", stayed
			}
			tt.wantSummary(&want.Summary)
			assert.Equal(t, want.Findings, r.Findings)
			assert.Equal(t, want.Summary, r.Summary)
			assert.Equal(t, len(tt.wantChanged) > 0 || base.Failed(), r.Failed())
		})
	}
}

func TestMarkStayedFailsTheRun(t *testing.T) {
	r := New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), Metadata{Mode: DryRunNone})
	r.Add(FindingResult{Rule: "preflight", Object: ObjectSummary{Kind: "Widget", Name: "w", UID: "w"}, Action: &ActionSummary{Type: "Delete"}, Outcome: OutcomeApplied})
	require.False(t, r.Failed())
	require.Equal(t, 1, r.MarkStayed(map[types.UID]string{"w": "still there"}))
	assert.True(t, r.Failed(), "something stayed: do not uninstall yet")
	assert.Equal(t, Summary{Findings: 1, Failed: 1}, r.Summary)
}

func TestRecount(t *testing.T) {
	tests := []struct {
		name     string
		findings []FindingResult
		want     Summary
	}{
		{name: "no findings", want: Summary{Resources: 4, Scanned: 9}},
		{
			name: "every outcome",
			findings: []FindingResult{
				{Action: &ActionSummary{Type: "Delete"}, Outcome: OutcomePlanned},
				{Action: &ActionSummary{Type: "Delete"}, Outcome: OutcomeDryRun},
				{Action: &ActionSummary{Type: "Delete"}, Outcome: OutcomeApplied},
				{Action: &ActionSummary{Type: "Delete"}, Outcome: OutcomeFailed},
				{Action: &ActionSummary{Type: "Delete"}, Outcome: OutcomeSkipped},
				{},
				{Outcome: OutcomeApplied}, // no action: an outcome counts only with one
			},
			want: Summary{Resources: 4, Scanned: 9, Findings: 7, Planned: 2, Applied: 1, Failed: 1, Skipped: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Counts that are wrong on purpose: recount starts again from the findings.
			r := &Report{Findings: tt.findings, Summary: Summary{Resources: 4, Scanned: 9, Findings: 99, Planned: 5, Applied: 5, Failed: 5, Skipped: 5}}
			r.recount()
			assert.Equal(t, tt.want, r.Summary)
			r.recount()
			assert.Equal(t, tt.want, r.Summary, "recounting twice changes nothing")
		})
	}
}
