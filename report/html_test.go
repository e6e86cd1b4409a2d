package report_test

import (
	"bytes"
	"cmp"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/report/reporttest"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// htmlReport is chainedReport with what else a page shows: actions skipped, failed and applied, a
// shard, an incomplete sweep, errors, and hostile strings where the cluster has a say.
func htmlReport() *report.Report {
	r := reporttest.Chained()
	r.Metadata.Cluster, r.Metadata.Version, r.Metadata.Shard = "prod-eu", "v1.2.3", "1/3"
	r.Metadata.EndTime = metav1.NewTime(r.Metadata.StartTime.Add(1500 * time.Millisecond))
	crb := rules.ObjectRef{Resource: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
		Kind: "ClusterRoleBinding", Name: "olm-binding", UID: "crb"}
	csv := rules.ObjectRef{Resource: schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "clusterserviceversions"},
		Kind: "ClusterServiceVersion", Namespace: "olm", Name: "etcd.v0.9.4", UID: "csv"}
	hostile := rules.ObjectRef{Resource: rules.ConfigMaps.GroupVersionResource, Kind: "ConfigMap", Namespace: `x"><marquee>`, Name: "c", UID: "hostile"}
	reporttest.Add(r, rules.Finding{Rule: "olm-rbac", Severity: rules.SeverityInfo, Object: crb, Reason: "OLM is gone",
		Action: rules.Delete{}, Evidence: []string{"no olm-operator"}},
		reporttest.Result{Outcome: report.OutcomeSkipped, Reason: "opt-in", Detail: "set rules.olm-rbac.delete to act"})
	reporttest.Add(r, rules.Finding{Rule: "orphaned-finalizers", Severity: rules.SeverityWarning, Object: csv, Reason: "operator gone",
		Action: rules.RemoveFinalizers{Finalizers: []string{"operatorframework.io/csv-cleanup"}}},
		reporttest.Result{Outcome: report.OutcomeFailed, Reason: "api-error", Detail: `admission webhook "deny.example" denied the request`})
	reporttest.Add(r, rules.Finding{Rule: "operator-leftovers", Severity: rules.SeverityInfo, Object: hostile, Action: rules.Delete{},
		Reason:   `<script>alert("reason")</script>`,
		Evidence: []string{`"><img src=https://evil.example/x.png onerror=alert(1)>`, "see https://example.com/docs and http://example.com/"}},
		reporttest.Result{Outcome: report.OutcomeApplied, Before: &report.PreImage{Resource: "configmaps"}})
	r.Summary.Incomplete = true
	r.Errors = append(r.Errors,
		report.Error{Stage: report.StageObserve, Resource: "widgets.example.com/v1", Message: "list widgets: the server is currently unable to handle the request"},
		report.Error{Stage: report.StageApply, Rule: "olm-rbac", Message: `rule failed: <a href="https://evil.example/">click</a>`, Fatal: true})
	return r
}

// renderHTML prints r with -o html and parses the page.
// htmlChains are the rows of the page's chains, as rule | kind | name.
func htmlChains(t *testing.T, doc *html.Node) []string {
	t.Helper()
	var chains []string
	for _, tr := range htmlFind(htmlByID(t, doc, "chains"), htmlHasClass("chain-row")) {
		chains = append(chains, strings.Join(htmlCells(tr)[:3], " | "))
	}
	return chains
}

func renderHTML(t *testing.T, r *report.Report) (string, *html.Node) {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, r.Print(&out, report.HTML))
	page := out.String()
	requireWellFormed(t, page)
	doc, err := html.Parse(strings.NewReader(page))
	require.NoError(t, err)
	return page, doc
}

// requireWellFormed fails unless the page tokenizes to its end, starts with a doctype and closes
// every element it opens (but the void ones), in order.
func requireWellFormed(t *testing.T, page string) {
	t.Helper()
	require.True(t, strings.HasPrefix(page, "<!DOCTYPE html>\n"), "a doctype first")
	z := html.NewTokenizer(strings.NewReader(page))
	var open []string
	for {
		switch z.Next() {
		case html.ErrorToken:
			require.ErrorIs(t, z.Err(), io.EOF)
			require.Empty(t, open, "elements left open")
			return
		case html.StartTagToken:
			name, _ := z.TagName()
			if !htmlVoidElements[string(name)] {
				open = append(open, string(name))
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			require.NotEmpty(t, open, "</%s> closes nothing", name)
			require.Equal(t, open[len(open)-1], string(name), "</%s> closes <%s>", name, open[len(open)-1])
			open = open[:len(open)-1]
		}
	}
}

var htmlVoidElements = map[string]bool{"meta": true, "link": true, "br": true, "input": true, "img": true, "hr": true}

func TestHTMLReport(t *testing.T) {
	r := htmlReport()
	_, doc := renderHTML(t, r)

	title := htmlFind(doc, func(n *html.Node) bool { return n.DataAtom == atom.Title })
	require.Len(t, title, 1)
	assert.Equal(t, "Sweep report · prod-eu", htmlText(title[0]))
	for id, want := range map[string]string{
		"meta-cluster": "prod-eu", "meta-mode": "--dry-run=client", "meta-version": "v1.2.3", "meta-shard": "1/3",
		"meta-start": "2026-11-23T12:00:00Z", "meta-end": "2026-11-23T12:00:01Z (1.5s)",
	} {
		assert.Equal(t, want, htmlText(htmlByID(t, doc, id)), id)
	}

	counts := map[string]string{}
	for _, li := range htmlFind(doc, func(n *html.Node) bool { return htmlAttr(n, "data-count") != "" }) {
		counts[htmlAttr(li, "data-count")] = htmlText(li)
	}
	assert.Equal(t, map[string]string{
		"findings": "11 findings", "planned": "1 planned", "applied": "1 applied", "failed": "1 failed", "skipped": "1 skipped",
		"scanned": "0 objects scanned", "resources": "0 resource types", "errors": "2 errors",
	}, counts)
	assert.Contains(t, htmlText(htmlByID(t, doc, "incomplete")), "Incomplete")
	var stuck []string
	for _, tr := range htmlFind(htmlByID(t, doc, "stuck-namespaces"), func(n *html.Node) bool { return htmlAttr(n, "data-cause") != "" }) {
		stuck = append(stuck, strings.Join(htmlCells(tr), " "))
	}
	assert.Equal(t, []string{"dead-apiservices 1", "orphaned-finalizers 1", "unexplained 2"}, stuck)

	// The chains as the table prints them: the findings in no chain are not among them.
	assert.Equal(t, []string{
		"stuck-terminating | Namespace | logging",
		"dead-apiservices | └ APIService | v1.packages.operators.coreos.com",
		"orphaned-finalizers | └ SyslogNGConfig | logging/s1",
		"stuck-terminating | └ SyslogNGConfig | logging/s1",
		"stuck-terminating | Namespace | waiting",
		"orphaned-finalizers | └ SyslogNGConfig | waiting/s1",
	}, htmlChains(t, doc))

	// One element per finding, under its rule, with the attributes the filters match.
	findings := htmlFind(doc, htmlHasClass("finding"))
	require.Len(t, findings, len(r.Findings))
	seen := map[int]bool{}
	for _, el := range findings {
		i, err := strconv.Atoi(strings.TrimPrefix(htmlAttr(el, "id"), "finding-"))
		require.NoError(t, err, htmlAttr(el, "id"))
		seen[i] = true
		f := r.Findings[i]
		assert.Equal(t, f.Rule, htmlAttr(el, "data-rule"))
		assert.Equal(t, f.Rule, htmlAttr(el.Parent, "data-rule"), "grouped by rule")
		assert.Equal(t, cmp.Or(string(f.Outcome), "none"), htmlAttr(el, "data-outcome"))
		assert.Equal(t, string(f.Severity), htmlAttr(el, "data-severity"))
		assert.Contains(t, htmlText(el), f.Object.String())
		assert.Contains(t, htmlText(el), f.Reason)
		evidence := htmlFind(el, func(n *html.Node) bool { return n.DataAtom == atom.Li })
		assert.Equal(t, f.Evidence, append([]string{}, htmlTexts(evidence)...), "the evidence as a list")
	}
	assert.Len(t, seen, len(r.Findings), "each finding once")
	ns := map[string]string{}
	for _, el := range findings {
		ns[htmlText(htmlFind(el, htmlHasClass("object"))[0])] = htmlAttr(el, "data-namespace")
	}
	assert.Equal(t, "logging", ns["Namespace logging"], "a namespace is filtered as in itself")
	assert.Equal(t, "", ns["APIService v1.packages.operators.coreos.com"])
	assert.Equal(t, "olm", ns["ClusterServiceVersion olm/etcd.v0.9.4"])

	groups := htmlFind(doc, htmlHasClass("rule-group"))
	assert.Equal(t, []string{"stuck-terminating", "dead-apiservices", "orphaned-finalizers", "olm-rbac", "operator-leftovers"}, htmlAttrs(groups, "data-rule"),
		"rules in the order of the table")

	failed := htmlFind(htmlByID(t, doc, "findings"), func(n *html.Node) bool { return htmlAttr(n, "data-outcome") == "failed" })
	require.Len(t, failed, 1)
	assert.Contains(t, htmlText(failed[0]), "failed (api-error)")
	assert.Contains(t, htmlText(failed[0]), `admission webhook "deny.example" denied the request`)
	assert.Contains(t, htmlText(failed[0]), "finalizers: operatorframework.io/csv-cleanup")
	skipped := htmlFind(htmlByID(t, doc, "findings"), func(n *html.Node) bool { return htmlAttr(n, "data-outcome") == "skipped" })
	require.Len(t, skipped, 1)
	assert.Equal(t, "skipped (opt-in) set rules.olm-rbac.delete to act", htmlText(htmlFind(skipped[0], htmlHasClass("outcome"))[0]))
	blocked := htmlFind(htmlByID(t, doc, "finding-5"), htmlHasClass("blocked-by"))
	require.Len(t, blocked, 1)
	assert.Equal(t, "APIService v1.packages.operators.coreos.com, SyslogNGConfig logging/s1", htmlText(blocked[0]))
	assert.Equal(t, []string{"#finding-1", "#finding-0"}, htmlAttrs(htmlFind(blocked[0], func(n *html.Node) bool { return n.DataAtom == atom.A }), "href"),
		"each blocker links to its first finding")

	// The filters offer what there is, "*" for all.
	options := func(id string) []string {
		return htmlAttrs(htmlFind(htmlByID(t, doc, id), func(n *html.Node) bool { return n.DataAtom == atom.Option }), "value")
	}
	assert.Equal(t, []string{"*", "stuck-terminating", "dead-apiservices", "orphaned-finalizers", "olm-rbac", "operator-leftovers"}, options("filter-rule"))
	assert.Equal(t, []string{"*", "", "empty", "logging", "olm", "shop", "waiting", `x"><marquee>`}, options("filter-namespace"))
	assert.Equal(t, []string{"*", "planned", "applied", "failed", "skipped", "none"}, options("filter-outcome"))
	assert.Equal(t, "11", htmlText(htmlByID(t, doc, "shown-count")))

	errs := htmlFind(htmlByID(t, doc, "errors"), htmlHasClass("report-error"))
	require.Len(t, errs, 2)
	assert.Equal(t, []string{"observe", "-", "widgets.example.com/v1", "list widgets: the server is currently unable to handle the request"}, htmlCells(errs[0]))
	assert.Equal(t, []string{"apply (fatal)", "olm-rbac", "-", `rule failed: <a href="https://evil.example/">click</a>`}, htmlCells(errs[1]))
}

func TestHTMLEscapesWhatTheClusterSays(t *testing.T) {
	r := htmlReport()
	page, doc := renderHTML(t, r)

	for _, raw := range []string{`<script>alert`, `<img`, `<marquee`, `<a href="https://evil`} {
		assert.NotContains(t, page, raw)
	}
	assert.Contains(t, page, `&lt;script&gt;alert(&#34;reason&#34;)&lt;/script&gt;`)
	scripts := htmlFind(doc, func(n *html.Node) bool { return n.DataAtom == atom.Script })
	require.Len(t, scripts, 1, "the page's own script alone")
	assert.Equal(t, string(report.HTMLScript), htmlText(scripts[0]))
	assert.Empty(t, htmlFind(doc, func(n *html.Node) bool { return n.DataAtom == atom.Img || n.DataAtom == atom.Marquee }))
	for _, n := range htmlFind(doc, func(*html.Node) bool { return true }) {
		for _, a := range n.Attr {
			assert.False(t, strings.HasPrefix(a.Key, "on"), "<%s %s>: no event handler attributes", n.Data, a.Key)
		}
	}

	hostile := htmlFind(doc, func(n *html.Node) bool {
		return htmlHasClass("finding")(n) && htmlAttr(n, "data-rule") == "operator-leftovers"
	})
	require.Len(t, hostile, 1)
	assert.Equal(t, `x"><marquee>`, htmlAttr(hostile[0], "data-namespace"), "the attribute holds the namespace as it is")
	assert.Equal(t, `<script>alert("reason")</script>`, htmlText(htmlFind(hostile[0], htmlHasClass("reason"))[0]))
	assert.Contains(t, htmlText(hostile[0]), `"><img src=https://evil.example/x.png onerror=alert(1)>`)
}

// TestHTMLLoadsNothing: the page has no address to load anything from, and its policy lets it
// run its own script and style alone, even with addresses in the findings' text.
func TestHTMLLoadsNothing(t *testing.T) {
	for name, r := range map[string]*report.Report{"findings": htmlReport(), "empty": reporttest.New(time.Now())} {
		t.Run(name, func(t *testing.T) {
			page, doc := renderHTML(t, r)
			if name == "findings" {
				assert.Contains(t, page, "https://example.com/docs", "addresses in the text stay text")
			}
			for _, n := range htmlFind(doc, func(*html.Node) bool { return true }) {
				for _, a := range n.Attr {
					v := strings.ToLower(strings.TrimSpace(a.Val))
					if a.Key == "src" || a.Key == "href" || a.Key == "srcset" || a.Key == "action" || a.Key == "poster" {
						assert.NotContains(t, v, "http://", "<%s %s=%q>", n.Data, a.Key, a.Val)
						assert.NotContains(t, v, "https://", "<%s %s=%q>", n.Data, a.Key, a.Val)
						assert.True(t, v == "data:," || strings.HasPrefix(v, "#"), "<%s %s=%q>: a link within the page, or the empty icon", n.Data, a.Key, a.Val)
					}
				}
				switch n.DataAtom {
				case atom.Script:
					assert.Empty(t, htmlAttr(n, "src"))
				case atom.Link:
					assert.Equal(t, "icon", htmlAttr(n, "rel"), "no stylesheet or preload links")
				case atom.Iframe, atom.Object, atom.Embed, atom.Img, atom.Video, atom.Audio, atom.Form:
					t.Errorf("<%s> in the page", n.Data)
				}
			}
			assert.NotContains(t, page, "@import")
			assert.NotRegexp(t, `url\(`, string(report.HTMLStyle))

			metas := htmlFind(doc, func(n *html.Node) bool { return htmlAttr(n, "http-equiv") == "Content-Security-Policy" })
			require.Len(t, metas, 1)
			policy := htmlAttr(metas[0], "content")
			assert.Contains(t, policy, "default-src 'none'")
			script := htmlFind(doc, func(n *html.Node) bool { return n.DataAtom == atom.Script })
			style := htmlFind(doc, func(n *html.Node) bool { return n.DataAtom == atom.Style })
			require.Len(t, script, 1)
			require.Len(t, style, 1)
			assert.Contains(t, policy, "script-src '"+report.CSPHash(htmlText(script[0]))+"'", "the policy allows the page's script")
			assert.Contains(t, policy, "style-src '"+report.CSPHash(htmlText(style[0]))+"'", "and its style")
			if name == "empty" {
				assert.Equal(t, "No findings.", htmlText(htmlByID(t, doc, "no-findings")))
				assert.Equal(t, "No errors.", htmlText(htmlByID(t, doc, "no-errors")))
				assert.Empty(t, htmlFind(doc, htmlHasClass("finding")))
			}
		})
	}
}

// TestHTMLAssetsHaveNoActions: the style and script are printed as they are, so that their hash is
// the one in the policy.
func TestHTMLAssetsHaveNoActions(t *testing.T) {
	for _, name := range []string{"style", "script"} {
		def := regexp.MustCompile(`(?s)\{\{define "` + name + `"\}\}(.*?)\{\{end`).FindStringSubmatch(report.ReportHTML)
		require.NotNil(t, def, name)
		assert.NotContains(t, def[1], "{{", name)
		assert.Equal(t, def[1], report.HTMLAsset(name))
	}
}

// find returns the elements below n (n included) for which match holds, in document order.
func htmlFind(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	if n.Type == html.ElementNode && match(n) {
		out = append(out, n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		out = append(out, htmlFind(c, match)...)
	}
	return out
}

func htmlByID(t *testing.T, doc *html.Node, id string) *html.Node {
	t.Helper()
	found := htmlFind(doc, func(n *html.Node) bool { return htmlAttr(n, "id") == id })
	require.Len(t, found, 1, "#%s", id)
	return found[0]
}

func htmlHasClass(class string) func(*html.Node) bool {
	return func(n *html.Node) bool { return slices.Contains(strings.Fields(htmlAttr(n, "class")), class) }
}

func htmlAttr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func htmlAttrs(nodes []*html.Node, key string) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, htmlAttr(n, key))
	}
	return out
}

// text is the text below n, with runs of white space as one space, trimmed.
func htmlText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		switch {
		case n.Type == html.TextNode:
			b.WriteString(n.Data)
		case n.DataAtom == atom.Br:
			b.WriteString(" ")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	if n.DataAtom == atom.Script || n.DataAtom == atom.Style {
		return b.String()
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// cells are the texts of a table row's cells.
func htmlCells(tr *html.Node) []string {
	return htmlTexts(htmlFind(tr, func(n *html.Node) bool { return n.DataAtom == atom.Td }))
}

func htmlTexts(nodes []*html.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, htmlText(n))
	}
	return out
}

// TestHTMLPreflightHint: under the evidence of a finding that blames an operator gone, and of
// every finding whose chain is rooted in one, the page says which preflight would have prevented
// it, as explain does; nowhere else.
func TestHTMLPreflightHint(t *testing.T) {
	const (
		csvHint        = "prevent it next time: operator-sweeper preflight csv/widgets.v1.0.0 -n widgets (before uninstalling the operator)"
		deploymentHint = "prevent it next time: operator-sweeper preflight deployment/widget-operator -n widgets --drain (before uninstalling the operator)"
	)
	r := explainReport(deadAPIService, orphanedWidget, stuckWidget, stuckNamespace, explainFinding(explainConfigMap))
	_, doc := renderHTML(t, r)
	hints := map[string][]string{}
	for _, el := range htmlFind(doc, htmlHasClass("finding")) {
		key := htmlAttr(el, "data-rule") + " " + htmlText(htmlFind(el, htmlHasClass("object"))[0])
		hints[key] = htmlTexts(htmlFind(el, htmlHasClass("preflight")))
		if len(hints[key]) > 0 {
			last := el.LastChild
			for last != nil && last.Type != html.ElementNode {
				last = last.PrevSibling
			}
			assert.True(t, htmlHasClass("preflight")(last), "%s: the hint comes last, under the evidence", key)
		}
	}
	assert.Equal(t, map[string][]string{
		"dead-apiservices APIService v1.widgets.example.com": {csvHint},
		"orphaned-finalizers Widget shop/w":                  {deploymentHint},
		"stuck-terminating Widget shop/w":                    {deploymentHint},
		"stuck-terminating Namespace shop":                   {csvHint, deploymentHint},
		"orphaned-finalizers ConfigMap dev/c":                nil,
	}, hints)
}
