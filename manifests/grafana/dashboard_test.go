// Package grafana holds the Grafana dashboard of the pushed metrics; its test checks every query
// against what the sweeper pushes.
package grafana

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/operator-sweeper/operator-sweeper/push"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/report/reporttest"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// dashboardFile is the Grafana dashboard shipped for the metrics package push pushes.
const dashboardFile = "operator-sweeper.json"

// gatewayLabels are the labels the Pushgateway puts on every pushed series: job and instance, and
// the grouping labels the sweeper pushes with (cluster, and shard when the sweep is split).
var gatewayLabels = []string{"job", "instance", "cluster", "shard"}

// grafanaDashboard is what the test reads of a dashboard's JSON model.
type grafanaDashboard struct {
	SchemaVersion int            `json:"schemaVersion"`
	UID           string         `json:"uid"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []grafanaVariable `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	ID         int                `json:"id"`
	Type       string             `json:"type"`
	Title      string             `json:"title"`
	Datasource *grafanaDatasource `json:"datasource"`
	Targets    []struct {
		RefID      string             `json:"refId"`
		Expr       string             `json:"expr"`
		Datasource *grafanaDatasource `json:"datasource"`
	} `json:"targets"`
	// Panels are a collapsed row's panels.
	Panels []grafanaPanel `json:"panels"`
}

type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaVariable struct {
	Name       string             `json:"name"`
	Type       string             `json:"type"`
	Datasource *grafanaDatasource `json:"datasource"`
	Definition string             `json:"definition"`
	// Query is a string, or, as Grafana 10 saves a Prometheus query variable, {"query": "..."}.
	Query      json.RawMessage `json:"query"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
}

// query is the variable's query, whichever form it is saved in.
func (v grafanaVariable) query(t *testing.T) string {
	t.Helper()
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var q struct {
		Query string `json:"query"`
	}
	require.NoError(t, json.Unmarshal(v.Query, &q), "variable %s: query", v.Name)
	return q.Query
}

// allPanels flattens the dashboard's panels: a collapsed row holds its panels in its own list.
func allPanels(panels []grafanaPanel) []grafanaPanel {
	var out []grafanaPanel
	for _, p := range panels {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// pushedLabels is, per metric family the sweeper pushes, the labels its series have, from the
// registry the sweeper itself builds: a report with findings and actions, and every rule of the
// registry enabled, so that each vector family has series.
func pushedLabels(t *testing.T) map[string][]string {
	t.Helper()
	var enabled []push.Rule
	for _, r := range rules.Registry() {
		enabled = append(enabled, push.Rule{Name: r.Name, Actions: []string{"Delete"}})
	}
	families, err := push.Registry(reporttest.Sample(), enabled, append(report.SweepStages(), report.StageNotify), true).Gather()
	require.NoError(t, err)
	pushed := map[string][]string{}
	for _, mf := range families {
		names := slices.Clone(gatewayLabels)
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				names = append(names, l.GetName())
			}
		}
		slices.Sort(names)
		pushed[mf.GetName()] = slices.Compact(names)
	}
	require.NotEmpty(t, pushed)
	return pushed
}

// knownValues are the values a matcher on these labels may name, from the code that sets them.
func knownValues() map[string][]string {
	values := map[string][]string{
		"severity": {string(rules.SeverityInfo), string(rules.SeverityWarning)},
		"outcome":  {string(report.OutcomePlanned), string(report.OutcomeDryRun), string(report.OutcomeApplied), string(report.OutcomeFailed), string(report.OutcomeSkipped)},
		"stage":    {report.StageInventory, report.StageObserve, report.StagePlan, report.StageApply, report.StagePush, report.StageNotify},
	}
	for _, r := range rules.Registry() {
		values["rule"] = append(values["rule"], r.Name)
	}
	return values
}

// grafanaVariableRef is $name, ${name}, ${name:format} or [[name]].
var grafanaVariableRef = regexp.MustCompile(`\$\{(\w+)(?::[^}]*)?\}|\$(\w+)|\[\[(\w+)(?::[^\]]*)?\]\]`)

// withStandIns replaces the Grafana variables of a query with values that parse where they
// stand: a duration for the interval and range variables, a number for their _ms and _s forms,
// a plain string for the dashboard's own variables (they only stand in label values). A variable
// that is neither Grafana's nor the dashboard's is an error: Grafana would leave it as is.
func withStandIns(query string, defined []string) (string, error) {
	var unknown []string
	out := grafanaVariableRef.ReplaceAllStringFunc(query, func(ref string) string {
		m := grafanaVariableRef.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[3]
		switch {
		case slices.Contains([]string{"__interval", "__rate_interval", "__range"}, name):
			return "5m"
		case slices.Contains([]string{"__interval_ms", "__range_ms", "__range_s"}, name):
			return "300"
		case slices.Contains(defined, name):
			return "stand-in"
		}
		unknown = append(unknown, ref)
		return ref
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("undefined variables %v", unknown)
	}
	return out, nil
}

// selected is what an expression reads: its vector selectors and aggregations.
type selected struct {
	metrics   []string
	matchers  map[string][]*labels.Matcher // by metric
	groupings [][]string                   // each aggregation's by/without labels
	groupedOn [][]string                   // the metrics under each aggregation
}

func inspect(expr parser.Expr) selected {
	s := selected{matchers: map[string][]*labels.Matcher{}}
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			name := n.Name
			for _, m := range n.LabelMatchers {
				if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			s.metrics = append(s.metrics, name)
			s.matchers[name] = append(s.matchers[name], n.LabelMatchers...)
		case *parser.AggregateExpr:
			if len(n.Grouping) > 0 {
				s.groupings = append(s.groupings, n.Grouping)
				s.groupedOn = append(s.groupedOn, inspect(n.Expr).metrics)
			}
		}
		return nil
	})
	return s
}

// labelValuesQuery is the label_values(selector, label) query of a Prometheus variable.
var labelValuesQuery = regexp.MustCompile(`^\s*label_values\((.*),\s*(\w+)\s*\)\s*$`)

// TestDashboard reads the Grafana dashboard and checks that every query parses with Prometheus'
// own parser and reads only metrics the sweeper pushes, by labels their series have; that the
// variables are the importable kind; and that each topic has its panel.
func TestDashboard(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var dash grafanaDashboard
	require.NoError(t, json.Unmarshal(raw, &dash))
	assert.GreaterOrEqual(t, dash.SchemaVersion, 36, "a schema Grafana 9 and later import as is")
	assert.NotEmpty(t, dash.UID, "a fixed uid, so that a re-import replaces the dashboard")

	pushed := pushedLabels(t)
	values := knownValues()
	promql := parser.NewParser(parser.Options{})
	variables := map[string]grafanaVariable{}
	var defined []string
	for _, v := range dash.Templating.List {
		variables[v.Name] = v
		defined = append(defined, v.Name)
	}

	// A data source variable, so that the dashboard imports on any Prometheus.
	require.Contains(t, variables, "datasource")
	assert.Equal(t, "datasource", variables["datasource"].Type)
	assert.Equal(t, "prometheus", variables["datasource"].query(t))
	dsVar := &grafanaDatasource{Type: "prometheus", UID: "${datasource}"}

	used := map[string]bool{}
	// check parses a query and checks what it reads; it returns what it reads.
	check := func(where, query string) selected {
		t.Helper()
		standIn, err := withStandIns(query, defined)
		if !assert.NoError(t, err, "%s: %s", where, query) {
			return selected{}
		}
		expr, err := promql.ParseExpr(standIn)
		if !assert.NoError(t, err, "%s: %s", where, query) {
			return selected{}
		}
		s := inspect(expr)
		assert.NotEmpty(t, s.metrics, "%s: %s reads no metric", where, query)
		for _, metric := range s.metrics {
			labelNames, ok := pushed[metric]
			if !assert.True(t, ok, "%s: %s is not a metric the sweeper pushes (%v)", where, metric, slices.Sorted(maps.Keys(pushed))) {
				continue
			}
			used[metric] = true
			for _, m := range s.matchers[metric] {
				if m.Name == model.MetricNameLabel {
					continue
				}
				assert.Contains(t, labelNames, m.Name, "%s: %s has no label %s", where, metric, m.Name)
				checkValue(t, where, m, values[m.Name])
			}
		}
		for i, grouping := range s.groupings {
			for _, name := range grouping {
				assert.True(t, slices.ContainsFunc(s.groupedOn[i], func(metric string) bool { return slices.Contains(pushed[metric], name) }),
					"%s: aggregation by %s, a label none of %v has", where, name, s.groupedOn[i])
			}
		}
		return s
	}

	// The cluster variable: every cluster that ran, several at once or all.
	require.Contains(t, variables, "cluster")
	cluster := variables["cluster"]
	assert.Equal(t, "query", cluster.Type)
	assert.Equal(t, dsVar, cluster.Datasource)
	assert.True(t, cluster.Multi, "several clusters at once")
	assert.True(t, cluster.IncludeAll, "all clusters")
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		where := "variable " + v.Name
		m := labelValuesQuery.FindStringSubmatch(v.query(t))
		if !assert.NotNil(t, m, "%s: label_values(selector, label): %s", where, v.query(t)) {
			continue
		}
		s := check(where, m[1])
		for _, metric := range s.metrics {
			assert.Contains(t, pushed[metric], m[2], "%s: %s has no label %s", where, metric, m[2])
		}
		if v.Name == "cluster" {
			assert.Equal(t, []string{"operator_sweeper_last_run_timestamp_seconds"}, s.metrics, "every cluster that ran, failed or not")
			assert.Equal(t, "cluster", m[2])
		}
	}

	// The panels.
	panels := allPanels(dash.Panels)
	ids := map[int]string{}
	reads := map[string]selected{} // by title
	for _, p := range panels {
		assert.NotZero(t, p.ID, "panel %q has an id", p.Title)
		assert.NotContains(t, ids, p.ID, "panel ids are unique: %q and %q", ids[p.ID], p.Title)
		ids[p.ID] = p.Title
		if p.Type == "row" {
			assert.Empty(t, p.Targets, "row %q", p.Title)
			continue
		}
		assert.NotEmpty(t, p.Title, "panel %d has a title", p.ID)
		assert.NotContains(t, reads, p.Title, "panel titles are unique")
		assert.Equal(t, dsVar, p.Datasource, "panel %q uses the data source variable", p.Title)
		if !assert.NotEmpty(t, p.Targets, "panel %q has queries", p.Title) {
			continue
		}
		var all selected
		all.matchers = map[string][]*labels.Matcher{}
		for _, target := range p.Targets {
			assert.Equal(t, dsVar, target.Datasource, "panel %q query %s uses the data source variable", p.Title, target.RefID)
			where := fmt.Sprintf("panel %q query %s", p.Title, target.RefID)
			s := check(where, target.Expr)
			assert.Contains(t, target.Expr, `cluster=~"$cluster"`, "%s follows the cluster variable", where)
			all.metrics = append(all.metrics, s.metrics...)
			for metric, m := range s.matchers {
				all.matchers[metric] = append(all.matchers[metric], m...)
			}
		}
		reads[p.Title] = all
	}

	// A panel per topic: its title says it, and it reads the metric that measures it.
	topics := []struct {
		title, metric string
		matcher       *labels.Matcher // that one of the panel's selectors has, if not nil
	}{
		{title: "runs", metric: "operator_sweeper_last_run_timestamp_seconds"},
		{title: "since last success", metric: "operator_sweeper_last_success_timestamp_seconds"},
		{title: "findings by rule and severity", metric: "operator_sweeper_findings"},
		{title: "actions by outcome", metric: "operator_sweeper_actions"},
		{title: "reason", metric: "operator_sweeper_actions"},
		{title: "stuck", metric: "operator_sweeper_findings", matcher: labels.MustNewMatcher(labels.MatchEqual, "rule", rules.StuckTerminatingName)},
		{title: "errors by stage", metric: "operator_sweeper_errors"},
		{title: "incomplete", metric: "operator_sweeper_incomplete"},
		{title: "duration", metric: "operator_sweeper_run_duration_seconds"},
		{title: "objects scanned", metric: "operator_sweeper_objects_scanned"},
	}
	for _, topic := range topics {
		assert.True(t, slices.ContainsFunc(slices.Collect(maps.Keys(reads)), func(title string) bool {
			s := reads[title]
			if !strings.Contains(strings.ToLower(title), topic.title) || !slices.Contains(s.metrics, topic.metric) {
				return false
			}
			return topic.matcher == nil || slices.ContainsFunc(s.matchers[topic.metric], func(m *labels.Matcher) bool {
				return m.String() == topic.matcher.String()
			})
		}), "no panel titled …%s… reads %s %v", topic.title, topic.metric, topic.matcher)
	}

	// Every metric the sweeper pushes has its place on the dashboard: a new metric needs a panel.
	for metric := range pushed {
		assert.True(t, used[metric], "%s is pushed but on no panel of %s", metric, dashboardFile)
	}
}

// checkValue checks that a matcher on a label whose values the code fixes names one of them: an
// equality matcher its value, a regexp of alternatives each of them.
func checkValue(t *testing.T, where string, m *labels.Matcher, known []string) {
	t.Helper()
	if len(known) == 0 {
		return
	}
	switch m.Type {
	case labels.MatchEqual, labels.MatchNotEqual:
		assert.Contains(t, known, m.Value, "%s: %s", where, m)
	case labels.MatchRegexp, labels.MatchNotRegexp:
		for _, alternative := range strings.Split(m.Value, "|") {
			if regexp.QuoteMeta(alternative) == alternative {
				assert.Contains(t, known, alternative, "%s: %s", where, m)
			}
		}
	}
}

// TestDashboardVariableStandIns: the stand-ins parse where each kind of variable stands.
func TestDashboardVariableStandIns(t *testing.T) {
	got, err := withStandIns(`rate(x{cluster=~"$cluster", shard=~"${shard:regex}"}[$__rate_interval]) * $__range_s + [[cluster]]`, []string{"cluster", "shard"})
	require.NoError(t, err)
	assert.Equal(t, `rate(x{cluster=~"stand-in", shard=~"stand-in"}[5m]) * 300 + stand-in`, got)
	_, err = withStandIns(`x{cluster=~"$nope"}`, []string{"cluster"})
	assert.ErrorContains(t, err, "$nope")
}
