package report_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/report/reporttest"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// crowded is what an operator uninstalled with its custom resources leaves: in namespace shop,
// 600 Widgets stuck on its finalizer for 5 minutes to 3 hours, each reported by stuck-terminating
// and by orphaned-finalizers, whose releases are planned for 100 and past --max-actions for the
// rest, one of which failed; and namespace gone, stuck, which 300 more Widgets keep.
func crowded() *report.Report {
	r := reporttest.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widget := func(ns string, i int) rules.ObjectRef {
		return rules.ObjectRef{Resource: widgets, Kind: "Widget", Namespace: ns, Name: fmt.Sprintf("w-%04d", i), UID: k8stypes.UID(fmt.Sprintf("%s-%d", ns, i))}
	}
	ages := []string{"5m", "3h", "47m", "2h10m"}
	var held []rules.ObjectRef
	for i := range 900 {
		ns := "shop"
		if i >= 600 {
			ns = "gone"
		}
		w := widget(ns, i)
		if ns == "gone" {
			held = append(held, w)
		}
		result := reporttest.Result{Outcome: report.OutcomePlanned}
		switch {
		case i == 7:
			result = reporttest.Failed(report.ReasonAPIError, "the server refused")
		case i >= 100:
			result = reporttest.Skipped(report.ReasonLimit, "--max-actions=100 reached")
		}
		reporttest.Add(r, rules.Finding{Rule: rules.OrphanedFinalizersName, Severity: rules.SeverityWarning, Object: w,
			Reason: "operator gone; releasing example.com/finalizer", Action: rules.RemoveFinalizers{Finalizers: []string{"example.com/finalizer"}},
			Evidence: []string{"deletionTimestamp …", "example.com/finalizer: controller mapping"}}, result)
		reporttest.Add(r, rules.Finding{Rule: rules.StuckTerminatingName, Symptom: true, Severity: rules.SeverityInfo, Object: w,
			Reason: "terminating for " + ages[i%len(ages)] + ", waiting on example.com/finalizer", Evidence: []string{"finalizers: example.com/finalizer"}}, reporttest.Result{})
	}
	gone := rules.ObjectRef{Resource: rules.Namespaces.GroupVersionResource, Kind: "Namespace", Name: "gone", UID: "ns-gone"}
	reporttest.Add(r, rules.Finding{Rule: rules.StuckTerminatingName, Symptom: true, Severity: rules.SeverityInfo, Object: gone,
		Reason: "terminating for 3h, waiting on its 300 remaining objects (300 terminating)", BlockedBy: held}, reporttest.Result{})
	r.CountStuckNamespaces(report.EveryNamespace)
	return r
}

// TestSimilarFindingsAreOneRow: the table shows the 1,801 findings in a few rows, one per rule,
// kind, place in a chain, action, outcome and verdict, each with its first names, how many more,
// and the range of ages; the failed release stands apart; the stuck namespace's chain counts what
// keeps it by kind. --no-group (PrintEach) shows every finding; JSON keeps every finding.
func TestSimilarFindingsAreOneRow(t *testing.T) {
	r := crowded()
	require.Len(t, r.Findings, 1801)

	var out bytes.Buffer
	require.NoError(t, r.Print(&out, report.Table))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	assert.Equal(t, []string{
		"stuck-terminating | Namespace | gone | - | - | terminating for 3h, waiting on its 300 remaining objects (300 terminating)",
		"orphaned-finalizers | └ Widget | gone/w-0600, w-0601, w-0602 and 297 more | RemoveFinalizers | skipped (limit) | operator gone; releasing example.com/finalizer",
		"stuck-terminating | └ Widget | gone/w-0600, w-0601, w-0602 and 297 more | - | - | terminating for 5m to 3h, waiting on example.com/finalizer",
		"orphaned-finalizers | Widget | shop/w-0000, w-0001, w-0002 and 96 more | RemoveFinalizers | planned | operator gone; releasing example.com/finalizer",
		"stuck-terminating | Widget | shop/w-0000, w-0001, w-0002 and 597 more | - | - | terminating for 5m to 3h, waiting on example.com/finalizer",
		"orphaned-finalizers | Widget | shop/w-0007 | RemoveFinalizers | failed (api-error) | operator gone; releasing example.com/finalizer",
		"orphaned-finalizers | Widget | shop/w-0100, w-0101, w-0102 and 497 more | RemoveFinalizers | skipped (limit) | operator gone; releasing example.com/finalizer",
	}, trimmed(lines[1:8], 6), "the chain first; then each group where its first finding is")
	assert.Equal(t, "", lines[8])
	assert.Contains(t, lines[9], "1801 findings (99 planned")
	assert.Equal(t, "1801 findings in 7 rows of similar findings (--no-group shows each).", lines[10])

	out.Reset()
	require.NoError(t, r.PrintEach(&out, report.Table))
	assert.Equal(t, 1+1801+2, strings.Count(out.String(), "\n"), "a header, a row per finding, a blank line and the summary")
	assert.NotContains(t, out.String(), "similar findings")

	out.Reset()
	require.NoError(t, r.Print(&out, report.Markdown))
	assert.Equal(t, 7, strings.Count(out.String(), "| Widget ")+strings.Count(out.String(), "| └ Widget ")+strings.Count(out.String(), "| Namespace "), "a Markdown row per group")
	assert.Contains(t, out.String(), "| stuck-terminating | info | Widget shop/w-0000, w-0001, w-0002 and 597 more | - | - | terminating for 5m to 3h, waiting on example.com/finalizer | of w-0000: finalizers: example.com/finalizer |")

	out.Reset()
	require.NoError(t, r.Print(&out, report.JSON))
	assert.Equal(t, 1801, strings.Count(out.String(), `{"rule":`), "JSON lists every finding")
}

// TestGroupsOnTheHTMLPage: the page shows a group as one element that counts its findings, and
// the counts the filters show are of findings.
func TestGroupsOnTheHTMLPage(t *testing.T) {
	r := crowded()
	_, doc := renderHTML(t, r)
	elements := htmlFind(doc, htmlHasClass("finding"))
	require.Len(t, elements, 7)
	total := 0
	for _, el := range elements {
		n, err := strconv.Atoi(htmlAttr(el, "data-findings"))
		require.NoError(t, err)
		total += n
		if n > 1 {
			assert.Contains(t, htmlText(el), fmt.Sprintf("%d similar findings", n))
		}
	}
	assert.Equal(t, 1801, total)
	assert.Equal(t, "1801", htmlText(htmlByID(t, doc, "shown-count")))
	groups := htmlFind(doc, htmlHasClass("rule-group"))
	assert.Equal(t, []string{"901", "900"}, htmlAttrs(groups, "data-total"))
	assert.Equal(t, []string{
		"stuck-terminating | Namespace | gone",
		"orphaned-finalizers | └ Widget | gone/w-0600, w-0601, w-0602 and 297 more",
		"stuck-terminating | └ Widget | gone/w-0600, w-0601, w-0602 and 297 more",
	}, htmlChains(t, doc))
}

// TestGroupsSpanNamespaces: similar findings in several namespaces are one row, which says how
// many namespaces it spans.
func TestGroupsSpanNamespaces(t *testing.T) {
	r := reporttest.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	for i, ns := range []string{"a", "a", "b", "c", "c"} {
		w := rules.ObjectRef{Resource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget",
			Namespace: ns, Name: fmt.Sprintf("w-%d", i), UID: k8stypes.UID(fmt.Sprint(i))}
		reporttest.Add(r, rules.Finding{Rule: rules.StuckTerminatingName, Symptom: true, Severity: rules.SeverityInfo, Object: w, Reason: "terminating for 1h, waiting on f"}, reporttest.Result{})
	}
	var out bytes.Buffer
	require.NoError(t, r.Print(&out, report.Table))
	lines := strings.Split(out.String(), "\n")
	assert.Equal(t, []string{"stuck-terminating | Widget | a/w-0, w-1, b/w-2 and 2 more in 3 namespaces | - | - | terminating for 1h, waiting on f"}, trimmed(lines[1:2], 6))

	r.Findings = r.Findings[:4]
	out.Reset()
	require.NoError(t, r.Print(&out, report.Table))
	lines = strings.Split(out.String(), "\n")
	assert.Equal(t, []string{"stuck-terminating | Widget | a/w-0, w-1, b/w-2, c/w-3 | - | - | terminating for 1h, waiting on f"}, trimmed(lines[1:2], 6),
		"four are named, rather than three and 1 more")
}

// TestAgesOfReasons: the ages the grouping finds and masks in reasons are those the regular
// expression it was written from matches, in the reasons rules write and in any text.
func TestAgesOfReasons(t *testing.T) {
	pattern := regexp.MustCompile(`\b\d+[ydhms](\d+[dhms])?\b`)
	tests := []string{
		"",
		"terminating for 5m, waiting on x",
		"terminating for 4m52s, waiting on its 3 remaining objects (1 terminating)",
		"terminating for 2d3h; 3y45d; 45s",
		"condition Available=False since 2026-11-23T11:00:00Z (60m ago, --min-age 10m0s)",
		"v1beta1 x12s 12sx 12s_ _12s 12s3 12s3x 12s3m 12s3y 3y3y 1m1m1m",
		"…5m… 5m…5m 5m",
		"finalizers: syslogngconfig.logging.banzaicloud.io/finalizer",
		"7",
		"7d",
		"7d5",
		"é5mé",
	}
	random := rand.New(rand.NewPCG(35, 35))
	const alphabet = "0123456789ydhmsx _-…"
	letters := []rune(alphabet)
	for range 20000 {
		var b strings.Builder
		for range random.IntN(16) {
			b.WriteRune(letters[random.IntN(len(letters))])
		}
		tests = append(tests, b.String())
	}
	for _, text := range tests {
		require.Equal(t, pattern.FindStringIndex(text), report.AgeAt(text, 0), "first age of %q", text)
		require.Equal(t, pattern.ReplaceAllString(text, "…"), report.MaskAges(text), "masked %q", text)
	}
}
