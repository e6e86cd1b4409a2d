package cluster

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-sweeper/operator-sweeper/report"
)

// Main is the TestMain of a test package that runs on a cluster, and does not return. In a
// temporary directory, setup builds what the tests run (the binary: Build); then the cluster
// starts with components, is stored in *c, and the tests run against it, once for the package.
// When a test fails, the components' logs are kept, and where is printed.
func Main(m *testing.M, c **Cluster, components Components, setup func(dir string) error) {
	os.Exit(runMain(m, c, components, setup))
}

// runMain is Main up to the exit code, so that its deferred clean-up runs.
func runMain(m *testing.M, c **Cluster, components Components, setup func(dir string) error) int {
	dir, err := os.MkdirTemp("", "operator-sweeper-tests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := setup(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if *c, err = StartWith(components); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code != 0 && len((*c).processes) > 0 {
		kept, err := os.MkdirTemp("", "operator-sweeper-logs-")
		if err == nil {
			err = os.CopyFS(kept, os.DirFS((*c).LogDir))
		}
		fmt.Fprintf(os.Stderr, "the control plane's logs are in %s (%v)\n", kept, err)
	}
	if err := (*c).Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop the test cluster:", err)
	}
	return code
}

var nonNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

// NewNamespace creates a namespace of the test's own and returns its name: the test's name and
// the suffixes, lowercased, joined by "-", the rest of what a name may not hold dropped, and the
// end kept if that is too long, where subtests and suffixes differ. Namespaces are not deleted
// when the test ends: without the namespace controller (Components), one would hang Terminating,
// debris in every later sweep.
func (c *Cluster) NewNamespace(t testing.TB, suffix ...string) string {
	t.Helper()
	name := strings.Trim(nonNameChars.ReplaceAllString(strings.ToLower(strings.Join(append([]string{t.Name()}, suffix...), "-")), "-"), "-")
	if len(name) > 63 {
		name = strings.Trim(name[len(name)-63:], "-")
	}
	require.NoError(t, c.CreateNamespace(context.Background(), name))
	return name
}

// Current returns obj as the server has it now, or nil if it is gone; any other error fails t.
func (c *Cluster) Current(t testing.TB, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got, err := c.Get(context.Background(), obj)
	require.NoError(t, err)
	return got
}

// Eventually polls condition every half second until it holds, or fails t after timeout with the
// end of the control plane's logs.
func (c *Cluster) Eventually(t testing.TB, timeout time.Duration, what string, condition func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !condition(); time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s\n%s", what, timeout, c.Logs(20))
		}
	}
}

// FindingAbout returns the report's finding of rule about obj, by kind and name; nil if none.
func FindingAbout(rep *report.Report, rule string, obj *unstructured.Unstructured) *report.FindingResult {
	if obj == nil {
		return nil
	}
	for i, f := range rep.Findings {
		if f.Rule == rule && f.Object.Kind == obj.GetKind() && f.Object.Namespace == obj.GetNamespace() && f.Object.Name == obj.GetName() {
			return &rep.Findings[i]
		}
	}
	return nil
}

// ActedOn returns the report's findings with an action applied about objects of namespace, as
// "rule Kind name".
func ActedOn(rep *report.Report, namespace string) []string {
	var out []string
	for _, f := range rep.Findings {
		if f.Outcome == report.OutcomeApplied && f.Object.Namespace == namespace {
			out = append(out, f.Rule+" "+f.Object.Kind+" "+f.Object.Name)
		}
	}
	return out
}
