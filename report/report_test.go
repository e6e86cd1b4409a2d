package sweeper

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

func testReport() *Report {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	opts := DefaultOptions()
	opts.Version, opts.Cluster = "v1.2.3", "prod"
	r := newReport(start, opts)
	r.Summary.Resources, r.Summary.Scanned = 3, 42
	cm := rules.ObjectRef{Resource: rules.ConfigMaps.GroupVersionResource, Kind: "ConfigMap", Namespace: "shop", Name: "a|b", UID: "u1"}
	logging := rules.ObjectRef{Resource: schema.GroupVersionResource{Group: "logging.banzaicloud.io", Version: "v1beta1", Resource: "loggings"}, Kind: "Logging", Name: "all", UID: "u2"}
	grace := int64(0)
	r.addFinding(rules.Finding{Rule: "stuck-terminating", Severity: rules.SeverityInfo, Object: cm, Reason: "terminating for 1h", Evidence: []string{"finalizers: x"}}, Result{})
	r.addFinding(rules.Finding{Rule: "orphans", Severity: rules.SeverityWarning, Object: logging, Reason: "operator gone",
		Action: rules.RemoveFinalizers{Finalizers: []string{"x"}}}, Result{Outcome: OutcomeApplied})
	r.addFinding(rules.Finding{Rule: "orphans", Severity: rules.SeverityWarning, Object: cm, Reason: "pod lost",
		Action: rules.Delete{GracePeriodSeconds: &grace}}, skipped(ReasonLimit, "--max-actions=1 reached"))
	r.addFinding(rules.Finding{Rule: "orphans", Severity: rules.SeverityWarning, Object: cm, Reason: "owner",
		Action: rules.SetOwnerReferences{Remove: []types.UID{"old"}}}, failed(ReasonAPIError, "forbidden"))
	r.addFinding(rules.Finding{Rule: "orphans", Severity: rules.SeverityWarning, Object: cm, Reason: "dry",
		Action: rules.RemoveFinalizers{Finalizers: []string{"y"}}}, Result{Outcome: OutcomeDryRun})
	r.Errors = append(r.Errors, ReportError{Stage: StageObserve, Resource: "pods", Message: "forbidden"},
		ReportError{Stage: StagePlan, Rule: "broken", Message: "rule panicked: boom", Fatal: true})
	r.Metadata.EndTime.Time = start.Add(1500 * time.Millisecond)
	return r
}

func TestReportSummary(t *testing.T) {
	r := testReport()
	assert.Equal(t, Summary{Resources: 3, Scanned: 42, Findings: 5, Planned: 1, Applied: 1, Failed: 1, Skipped: 1}, r.Summary)
	assert.True(t, r.Failed(), "a failed action fails the run")

	r = newReport(time.Now(), DefaultOptions())
	r.Errors = append(r.Errors, ReportError{Stage: StageObserve, Resource: "pods", Message: "forbidden"})
	assert.False(t, r.Failed(), "a resource that could not be listed is a warning")
	r.Errors = append(r.Errors, ReportError{Stage: StagePush, Message: "refused"})
	assert.False(t, r.Failed(), "a failed push is a warning, unless required")
	r.Errors = append(r.Errors, ReportError{Stage: StageInventory, Message: "unreachable", Fatal: true})
	assert.True(t, r.Failed(), "a failed stage fails the run")
	assert.Equal(t, "inventory: unreachable", r.failure())
	r.Errors = append(r.Errors, ReportError{Stage: StagePush, Message: "refused", Fatal: true})
	assert.Equal(t, "inventory: unreachable; refused (--require-push)", r.failure())
}

func keys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	return slices.Sorted(maps.Keys(m))
}

// TestReportJSONShape pins the report's contract: exactly these keys.
func TestReportJSONShape(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, testReport().Print(&out, OutputJSON))
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	assert.Equal(t, []string{"apiVersion", "errors", "findings", "kind", "metadata", "summary"}, keys(t, out.Bytes()))
	assert.JSONEq(t, `"sweeper.operator-sweeper.io/v1alpha1"`, string(doc["apiVersion"]))
	assert.JSONEq(t, `"SweepReport"`, string(doc["kind"]))
	assert.Equal(t, []string{"cluster", "endTime", "mode", "startTime", "version"}, keys(t, doc["metadata"]))
	assert.Equal(t, []string{"applied", "failed", "findings", "incomplete", "planned", "resources", "scanned", "skipped"}, keys(t, doc["summary"]))

	var findings []json.RawMessage
	require.NoError(t, json.Unmarshal(doc["findings"], &findings))
	require.Len(t, findings, 5)
	assert.Equal(t, []string{"evidence", "object", "reason", "rule", "severity"}, keys(t, findings[0]), "a report-only finding has no action")
	assert.Equal(t, []string{"action", "error", "evidence", "object", "outcome", "reason", "rule", "severity", "skipReason"}, keys(t, findings[2]))
	assert.Equal(t, []string{"action", "error", "evidence", "failReason", "object", "outcome", "reason", "rule", "severity"}, keys(t, findings[3]))
	assert.Equal(t, []string{"action", "evidence", "object", "outcome", "reason", "rule", "severity"}, keys(t, findings[1]), "an applied action has no reason")
	var f struct {
		Object     json.RawMessage `json:"object"`
		Action     json.RawMessage `json:"action"`
		SkipReason json.RawMessage `json:"skipReason"`
		Error      json.RawMessage `json:"error"`
	}
	require.NoError(t, json.Unmarshal(findings[2], &f))
	assert.JSONEq(t, `"limit"`, string(f.SkipReason))
	assert.JSONEq(t, `"--max-actions=1 reached"`, string(f.Error))
	assert.Equal(t, []string{"apiVersion", "kind", "name", "namespace", "uid"}, keys(t, f.Object))
	assert.JSONEq(t, `{"type":"Delete","gracePeriodSeconds":0}`, string(f.Action))
	require.NoError(t, json.Unmarshal(findings[1], &f))
	assert.JSONEq(t, `{"type":"RemoveFinalizers","finalizers":["x"]}`, string(f.Action))

	var errs []json.RawMessage
	require.NoError(t, json.Unmarshal(doc["errors"], &errs))
	assert.Equal(t, []string{"message", "resource", "stage"}, keys(t, errs[0]))
	assert.Equal(t, []string{"fatal", "message", "rule", "stage"}, keys(t, errs[1]))

	var empty bytes.Buffer
	require.NoError(t, newReport(time.Now(), DefaultOptions()).Print(&empty, OutputJSON))
	assert.Contains(t, empty.String(), `"findings": []`, "empty lists are lists, not null")
	assert.Contains(t, empty.String(), `"errors": []`)
}

func TestReportYAMLIsTheSameData(t *testing.T) {
	var asJSON, asYAML bytes.Buffer
	require.NoError(t, testReport().Print(&asJSON, OutputJSON))
	require.NoError(t, testReport().Print(&asYAML, OutputYAML))
	converted, err := yaml.YAMLToJSON(asYAML.Bytes())
	require.NoError(t, err)
	assert.JSONEq(t, asJSON.String(), string(converted))

	var back Report
	require.NoError(t, yaml.UnmarshalStrict(asYAML.Bytes(), &back))
	assert.Equal(t, testReport().Summary, back.Summary)
}

func TestReportTable(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, testReport().Print(&out, OutputTable))
	assert.Equal(t, `RULE                KIND        NAMESPACE/NAME   ACTION               OUTCOME              REASON
stuck-terminating   ConfigMap   shop/a|b         -                    -                    terminating for 1h
orphans             Logging     all              RemoveFinalizers     applied              operator gone
orphans             ConfigMap   shop/a|b         Delete               skipped (limit)      pod lost
orphans             ConfigMap   shop/a|b         SetOwnerReferences   failed (api-error)   owner
orphans             ConfigMap   shop/a|b         RemoveFinalizers     dry-run              dry

STAGE          RULE     RESOURCE   ERROR
observe        -        pods       forbidden
plan (fatal)   broken   -          rule panicked: boom

5 findings (1 planned, 1 applied, 1 failed, 1 skipped) in 42 objects of 3 resource types; 2 errors; cluster prod, mode client, 1.5s.
`, out.String())

	out.Reset()
	require.NoError(t, newReport(time.Now(), DefaultOptions()).Print(&out, OutputTable))
	assert.Contains(t, out.String(), "No findings.")
}

func TestReportMarkdown(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, testReport().Print(&out, OutputMarkdown))
	md := out.String()
	assert.Contains(t, md, "# Sweep report\n")
	assert.Contains(t, md, "| stuck-terminating | info | ConfigMap shop/a\\|b | - | - | terminating for 1h | finalizers: x |", "cells are escaped")
	assert.Contains(t, md, "| orphans | warning | ConfigMap shop/a\\|b | Delete | skipped (limit) | pod lost |  |")
	assert.Contains(t, md, "## Errors\n\n| stage | rule | resource | error |\n|---|---|---|---|\n| observe | - | pods | forbidden |\n| plan (fatal) | broken | - | rule panicked: boom |")
	assert.Contains(t, md, "| 2026-11-23T12:00:00Z | 2026-11-23T12:00:01Z | v1.2.3 |")
}

func TestReportWriteFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "report.json")
	require.NoError(t, os.WriteFile(file, []byte("old"), 0o600))
	require.NoError(t, testReport().writeFile(file))
	var back Report
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, testReport().Summary, back.Summary)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left behind")
}
