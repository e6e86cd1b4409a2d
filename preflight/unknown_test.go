package preflight

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

func TestUnknown(t *testing.T) {
	apiService := func(rule, name string) report.FindingResult {
		return report.FindingResult{Rule: rule, Object: report.ObjectSummary{APIVersion: "apiregistration.k8s.io/v1", Kind: rules.APIServices.Kind, Name: name}}
	}
	widgetsDown := report.Error{Stage: report.StageInventory, Resource: "widgets.example.com/v1", Message: "the server is currently unable to handle the request"}
	widgetsV2Down := report.Error{Stage: report.StageInventory, Resource: "widgets.example.com/v2", Message: "the server is currently unable to handle the request"}
	metricsDown := report.Error{Stage: report.StageInventory, Resource: "metrics.k8s.io/v1beta1", Message: "the server is currently unable to handle the request"}
	discoveryDown := report.Error{Stage: report.StageInventory, Message: "connection refused", Fatal: true}
	listFailed := report.Error{Stage: report.StageObserve, Resource: "widgets.v1.widgets.example.com", Message: "forbidden"}
	listFailedGV := report.Error{Stage: report.StageObserve, Resource: "widgets.example.com/v1", Message: "forbidden"}
	applyFailed := report.Error{Stage: report.StageApply, Message: "conflict"}
	pushFailed := report.Error{Stage: report.StagePush, Message: "refused"}

	tests := []struct {
		name      string
		uninstall rules.Uninstall
		findings  []report.FindingResult
		errors    []report.Error
		want      []report.Error
	}{
		{
			name:   "nothing failed",
			errors: []report.Error{},
		},
		{
			name:     "the discovery of the API a preflight finding's APIService serves: dropped",
			findings: []report.FindingResult{apiService(rules.PreflightName, "v1.widgets.example.com")},
			errors:   []report.Error{widgetsDown},
		},
		{
			name:      "the discovery of the API an APIService of the uninstall serves: dropped",
			uninstall: rules.Uninstall{APIServices: []string{"v1.widgets.example.com"}},
			errors:    []report.Error{widgetsDown},
		},
		{
			name:      "the operator's APIService serves another version: kept",
			uninstall: rules.Uninstall{APIServices: []string{"v1.widgets.example.com"}},
			errors:    []report.Error{widgetsDown, widgetsV2Down},
			want:      []report.Error{widgetsV2Down},
		},
		{
			name:     "no APIService of the operator: kept",
			findings: []report.FindingResult{apiService(rules.PreflightName, "v1beta1.metrics.k8s.io")},
			errors:   []report.Error{widgetsDown},
			want:     []report.Error{widgetsDown},
		},
		{
			name:     "an APIService found by another rule: kept",
			findings: []report.FindingResult{apiService("dead-apiservices", "v1.widgets.example.com")},
			errors:   []report.Error{widgetsDown},
			want:     []report.Error{widgetsDown},
		},
		{
			name: "a preflight finding of another kind with the APIService's name: kept",
			findings: []report.FindingResult{{Rule: rules.PreflightName,
				Object: report.ObjectSummary{APIVersion: "example.com/v1", Kind: "Gizmo", Namespace: "shop", Name: "v1.widgets.example.com"}}},
			errors: []report.Error{widgetsDown},
			want:   []report.Error{widgetsDown},
		},
		{
			name:      "observe errors always kept, even of the operator's API",
			uninstall: rules.Uninstall{APIServices: []string{"v1.widgets.example.com"}},
			findings:  []report.FindingResult{apiService(rules.PreflightName, "v1.widgets.example.com")},
			errors:    []report.Error{listFailed, listFailedGV},
			want:      []report.Error{listFailed, listFailedGV},
		},
		{
			name:      "every other inventory error kept, in order; other stages are not about what is known",
			uninstall: rules.Uninstall{APIServices: []string{"v1.widgets.example.com"}},
			errors:    []report.Error{metricsDown, applyFailed, widgetsDown, discoveryDown, pushFailed, listFailed},
			want:      []report.Error{metricsDown, discoveryDown, listFailed},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := report.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), report.Metadata{Mode: report.DryRunClient})
			for _, f := range tt.findings {
				r.Add(f)
			}
			r.Errors = append(r.Errors, tt.errors...)
			before := append([]string(nil), tt.uninstall.APIServices...)
			assert.Equal(t, tt.want, Unknown(r, tt.uninstall))
			assert.Equal(t, before, tt.uninstall.APIServices, "the uninstall is not changed")
		})
	}
}

func TestStayedBecause(t *testing.T) {
	tests := []struct {
		name       string
		waited     string
		finalizers []string
		want       string
	}{
		{
			name:       "finalizers left: the operator did not remove them",
			waited:     "still there after 5m0s",
			finalizers: []string{"widgets.acme.io/finalizer", "acme.io/backup"},
			want:       "still there after 5m0s with finalizers widgets.acme.io/finalizer, acme.io/backup: the operator did not remove them; see its logs and the object's status",
		},
		{
			name:   "no finalizer left: the API server has yet to remove it",
			waited: "still there when the wait was interrupted",
			want:   "still there when the wait was interrupted, its finalizers gone: the garbage collector or the API server has yet to remove it",
		},
		{
			name:       "an empty list is none",
			waited:     "still there after 1m0s",
			finalizers: []string{},
			want:       "still there after 1m0s, its finalizers gone: the garbage collector or the API server has yet to remove it",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, stayedBecause(tt.waited, tt.finalizers))
		})
	}
}
