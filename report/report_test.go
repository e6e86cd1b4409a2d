package report_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/report/reporttest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestReportSummary(t *testing.T) {
	r := reporttest.Sample()
	assert.Equal(t, report.Summary{Resources: 3, Scanned: 42, Findings: 5, Planned: 1, Applied: 1, Failed: 1, Skipped: 1, HeldBack: 1, RunsToFinish: 1}, r.Summary)
	assert.True(t, r.Failed(), "a failed action fails the run")

	r = reporttest.New(time.Now())
	r.Errors = append(r.Errors, report.Error{Stage: report.StageObserve, Resource: "pods", Message: "forbidden"})
	assert.False(t, r.Failed(), "a resource that could not be listed is a warning")
	r.Errors = append(r.Errors, report.Error{Stage: report.StagePush, Message: "refused"})
	assert.False(t, r.Failed(), "a failed push is a warning, unless required")
	r.Errors = append(r.Errors, report.Error{Stage: report.StageInventory, Message: "unreachable", Fatal: true})
	assert.True(t, r.Failed(), "a failed stage fails the run")
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
	require.NoError(t, reporttest.Sample().Print(&out, report.JSON))
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	assert.Equal(t, []string{"apiVersion", "errors", "findings", "kind", "metadata", "summary"}, keys(t, out.Bytes()))
	assert.JSONEq(t, `"sweeper.operator-sweeper.io/v1alpha1"`, string(doc["apiVersion"]))
	assert.JSONEq(t, `"SweepReport"`, string(doc["kind"]))
	assert.Equal(t, []string{"cluster", "endTime", "mode", "startTime", "version"}, keys(t, doc["metadata"]))
	assert.Equal(t, []string{"applied", "failed", "findings", "heldBack", "incomplete", "planned", "resources", "runsToFinish", "scanned", "skipped"}, keys(t, doc["summary"]))

	var findings []json.RawMessage
	require.NoError(t, json.Unmarshal(doc["findings"], &findings))
	require.Len(t, findings, 5)
	assert.Equal(t, []string{"evidence", "object", "reason", "rule", "severity", "symptom"}, keys(t, findings[0]), "a report-only finding has no action; this one says its object is stuck")
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
	require.NoError(t, reporttest.New(time.Now()).Print(&empty, report.JSON))
	assert.Contains(t, empty.String(), `"findings": []`, "empty lists are lists, not null")
	assert.Contains(t, empty.String(), `"errors": []`)
}

func TestReportYAMLIsTheSameData(t *testing.T) {
	var asJSON, asYAML bytes.Buffer
	require.NoError(t, reporttest.Sample().Print(&asJSON, report.JSON))
	require.NoError(t, reporttest.Sample().Print(&asYAML, report.YAML))
	converted, err := yaml.YAMLToJSON(asYAML.Bytes())
	require.NoError(t, err)
	assert.JSONEq(t, asJSON.String(), string(converted))

	var back report.Report
	require.NoError(t, yaml.UnmarshalStrict(asYAML.Bytes(), &back))
	assert.Equal(t, reporttest.Sample().Summary, back.Summary)
}

func TestReportTable(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, reporttest.Sample().Print(&out, report.Table))
	assert.Equal(t, `RULE                KIND        NAMESPACE/NAME   ACTION               OUTCOME              REASON
stuck-terminating   ConfigMap   shop/a|b         -                    -                    terminating for 1h
orphans             Logging     all              RemoveFinalizers     applied              operator gone
orphans             ConfigMap   shop/a|b         Delete               skipped (limit)      pod lost
orphans             ConfigMap   shop/a|b         SetOwnerReferences   failed (api-error)   owner
orphans             ConfigMap   shop/a|b         RemoveFinalizers     dry-run              dry

STAGE          RULE     RESOURCE   ERROR
observe        -        pods       forbidden
plan (fatal)   broken   -          rule panicked: boom

5 findings (1 planned, 1 applied, 1 failed, 1 skipped) in 42 objects of 3 resource types; 2 errors; 1 held back by --max-actions, 1 more run at this cap; cluster prod, mode client, 1.5s.
`, out.String())

	out.Reset()
	require.NoError(t, reporttest.New(time.Now()).Print(&out, report.Table))
	assert.Contains(t, out.String(), "No findings.")
}

func TestReportMarkdown(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, reporttest.Sample().Print(&out, report.Markdown))
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
	require.NoError(t, reporttest.Sample().WriteFile(file))
	var back report.Report
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, reporttest.Sample().Summary, back.Summary)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left behind")
}
