package integration

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chromium is the browser the HTML report is opened in: Debian's package chromium, which
// hack/debian-tools.sh (make test) installs.
const chromium = "/usr/bin/chromium"

// TestBinaryHTMLReport: -o html of a sweep of F1 and F4, each in its namespace, opened from a file
// in a real headless Chromium: the page runs without a console error and loads nothing but itself,
// shows every finding of the sweep (the JSON report of the same run says which), and the filters
// hide the findings of other rules, or other namespaces, and count what they show.
func TestBinaryHTMLReport(t *testing.T) {
	requireChromium(t)
	ctx := context.Background()
	nsF1, nsF4 := testCluster.NewNamespace(t, "f1"), testCluster.NewNamespace(t, "f4")
	seeded(t)(testCluster.SeedF1(ctx, nsF1))
	terminate(t, nsF4, loggingConfigDebris)
	dir := t.TempDir()
	page, reportFile := filepath.Join(dir, "report.html"), filepath.Join(dir, "report.json")

	// --report-file is the JSON report of the very run that prints the page.
	stdout, stderr, code := runBinary(t, "--config", orphansConfig(t, nsF4), "--include-namespaces="+nsF1+","+nsF4,
		"--min-terminating-age=0s", "--log-level=warn", "-o", "html", "--report-file", reportFile)
	require.Equal(t, 0, code, stderr)
	require.NoError(t, os.WriteFile(page, []byte(stdout), 0o600))
	data, err := os.ReadFile(reportFile)
	require.NoError(t, err)
	var rep report.Report
	require.NoError(t, json.Unmarshal(data, &rep))
	wantIn := map[string]int{nsF1: len(findingsIn(&rep, nsF1)), nsF4: len(findingsIn(&rep, nsF4))}
	require.Positive(t, wantIn[nsF1], "F1 has findings")
	require.Positive(t, wantIn[nsF4], "F4 has findings")
	byRule := map[string]int{}
	for _, f := range rep.Findings {
		byRule[f.Rule]++
	}
	require.Contains(t, byRule, "orphaned-finalizers")
	require.Greater(t, len(byRule), 1, "findings of other rules to hide")

	b := openInChromium(t, page)

	var cluster, mode string
	b.run(t, chromedp.Text("#meta-cluster", &cluster, chromedp.ByQuery), chromedp.Text("#meta-mode", &mode, chromedp.ByQuery))
	assert.Equal(t, rep.Metadata.Cluster, cluster)
	assert.Equal(t, "--dry-run=client", mode)

	all := b.findings(t)
	require.Len(t, all, len(rep.Findings), "one element per finding")
	assert.Equal(t, len(rep.Findings), countVisible(all, nil), "all shown")
	for ns, want := range wantIn {
		assert.Equal(t, want, countVisible(all, func(f pageFinding) bool { return f.Namespace == ns }), "findings in %s", ns)
	}
	assert.Equal(t, fmt.Sprint(len(rep.Findings)), b.text(t, "#shown-count"))

	b.choose(t, "#filter-rule", "orphaned-finalizers")
	shown := b.findings(t)
	assert.Equal(t, byRule["orphaned-finalizers"], countVisible(shown, nil))
	for _, f := range shown {
		if f.Rule == "orphaned-finalizers" {
			assert.True(t, f.Visible, "%s (%s) is shown", f.ID, f.Rule)
		} else {
			assert.False(t, f.Visible, "%s (%s) is hidden", f.ID, f.Rule)
			assert.True(t, f.Hidden, "%s (%s) is hidden", f.ID, f.Rule)
			assert.Equal(t, "none", f.Display, "%s (%s)", f.ID, f.Rule)
		}
	}
	assert.Equal(t, fmt.Sprint(byRule["orphaned-finalizers"]), b.text(t, "#shown-count"))

	b.choose(t, "#filter-rule", "*")
	b.choose(t, "#filter-namespace", nsF1)
	shown = b.findings(t)
	assert.Equal(t, wantIn[nsF1], countVisible(shown, nil))
	assert.Equal(t, wantIn[nsF1], countVisible(shown, func(f pageFinding) bool { return f.Namespace == nsF1 }), "only %s", nsF1)
	assert.Equal(t, fmt.Sprint(wantIn[nsF1]), b.text(t, "#shown-count"))

	b.run(t, chromedp.Click("#filter-reset", chromedp.ByQuery))
	assert.Equal(t, len(rep.Findings), countVisible(b.findings(t), nil), "show all")

	b.checkQuiet(t)
}

// requireChromium makes sure Chromium is installed, with hack/debian-tools.sh if it is not (as
// make test does), or skips the test saying how to install it.
func requireChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromium); err == nil {
		return
	}
	script, err := filepath.Abs("../../hack/debian-tools.sh")
	require.NoError(t, err)
	out, err := exec.CommandContext(t.Context(), script).CombinedOutput()
	if _, statErr := os.Stat(chromium); statErr != nil {
		why := cmp.Or(strings.TrimSpace(string(out)), chromium+" is still missing")
		if err != nil {
			why = err.Error() + ": " + why
		}
		t.Skipf("Chromium could not be installed (hack/debian-tools.sh: %s): install it with hack/debian-tools.sh as root (make test does), "+
			"or sudo apt-get install -y --no-install-recommends chromium", why)
	}
}

// chromiumPage is a page open in headless Chromium, and what went wrong in it.
type chromiumPage struct {
	ctx      context.Context
	mu       sync.Mutex
	problems []string // console errors, uncaught exceptions, error log entries
	requests []string // the URL of every request the page made
}

// openInChromium opens file in a new headless Chromium, which is stopped when the test ends.
func openInChromium(t *testing.T, file string) *chromiumPage {
	t.Helper()
	// A browser that exits before it listens ("chrome failed to start", seen once on a loaded
	// machine, with nothing but the usual D-Bus noise on its stderr) is started again, twice at most.
	var b *chromiumPage
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		// Not t.TempDir(): the browser's helper processes may still write to the profile for a
		// moment after it is closed, which would fail the test's own cleanup.
		profile, mkErr := os.MkdirTemp("", "operator-sweeper-chromium-*")
		require.NoError(t, mkErr)
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
			chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(profile))
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		tab, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
		ctx, cancelTimeout := context.WithTimeout(tab, 90*time.Second)
		t.Cleanup(func() {
			cancelTimeout()
			cancelTab()
			cancelAlloc() // kills the browser and waits for it
			removeEventually(t, profile)
		})
		b = &chromiumPage{ctx: ctx}
		// Starts the browser and its tab, with the runtime, log and network domains on.
		if err = chromedp.Run(ctx); err == nil || !strings.Contains(err.Error(), "chrome failed to start") {
			break
		}
		t.Logf("attempt %d: %v", attempt+1, err)
	}
	require.NoError(t, err)
	chromedp.ListenTarget(b.ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeAssert {
				var args []string
				for _, arg := range ev.Args {
					args = append(args, string(arg.Value)+arg.Description)
				}
				b.problems = append(b.problems, "console."+string(ev.Type)+": "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			b.problems = append(b.problems, "uncaught exception: "+ev.ExceptionDetails.Error())
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.LevelError {
				b.problems = append(b.problems, fmt.Sprintf("log (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, ev.Request.URL)
		}
	})
	pageURL := (&url.URL{Scheme: "file", Path: file}).String()
	b.run(t, chromedp.Navigate(pageURL), chromedp.WaitReady("#findings", chromedp.ByQuery))
	return b
}

// removeEventually removes dir, trying again for a few seconds while something still writes to it.
func removeEventually(t *testing.T, dir string) {
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err = os.RemoveAll(dir); err == nil {
			return
		}
	}
	t.Logf("%s left behind: %v", dir, err)
}

func (b *chromiumPage) run(t *testing.T, actions ...chromedp.Action) {
	t.Helper()
	require.NoError(t, chromedp.Run(b.ctx, actions...))
}

// choose picks value in the select as a user does: the value, then a change event.
func (b *chromiumPage) choose(t *testing.T, selector, value string) {
	t.Helper()
	b.run(t, chromedp.SetValue(selector, value, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector(`+jsString(t, selector)+`).dispatchEvent(new Event("change", {bubbles: true}))`, nil))
	var got string
	b.run(t, chromedp.Value(selector, &got, chromedp.ByQuery))
	require.Equal(t, value, got, "%s offers %q", selector, value)
}

func (b *chromiumPage) text(t *testing.T, selector string) string {
	t.Helper()
	var s string
	b.run(t, chromedp.Text(selector, &s, chromedp.ByQuery))
	return s
}

// pageFinding is a finding's element as the browser renders it.
type pageFinding struct {
	ID        string `json:"id"`
	Rule      string `json:"rule"`
	Namespace string `json:"namespace"`
	Outcome   string `json:"outcome"`
	Hidden    bool   `json:"hidden"`
	Display   string `json:"display"`
	// Visible is whether it is rendered: neither it nor a container is display: none.
	Visible bool `json:"visible"`
}

func (b *chromiumPage) findings(t *testing.T) []pageFinding {
	t.Helper()
	var out []pageFinding
	b.run(t, chromedp.Evaluate(`[...document.querySelectorAll(".finding")].map((el) => ({
		id: el.id, rule: el.dataset.rule, namespace: el.dataset.namespace, outcome: el.dataset.outcome,
		hidden: el.hidden, display: getComputedStyle(el).display, visible: el.checkVisibility(),
	}))`, &out))
	return out
}

// checkQuiet asserts that nothing went wrong in the page, and that it loaded nothing but itself.
func (b *chromiumPage) checkQuiet(t *testing.T) {
	t.Helper()
	b.run(t, chromedp.Sleep(100*time.Millisecond)) // the last events arrive
	b.mu.Lock()
	defer b.mu.Unlock()
	assert.Empty(t, b.problems, "console errors and exceptions")
	require.NotEmpty(t, b.requests, "the page itself is requested")
	for _, u := range b.requests {
		assert.True(t, strings.HasPrefix(u, "file://") || strings.HasPrefix(u, "data:"), "the page loads %s", u)
	}
}

func countVisible(findings []pageFinding, match func(pageFinding) bool) int {
	return len(slices.DeleteFunc(slices.Clone(findings), func(f pageFinding) bool {
		return !f.Visible || (match != nil && !match(f))
	}))
}

func jsString(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}
