package cluster

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// RunTests is a test package's TestMain: in a temporary directory, setup builds what the tests
// run (the binary); then the cluster starts, is stored in *c, and the tests run against it. It
// returns the exit code.
func RunTests(m *testing.M, c **Cluster, setup func(dir string) error) int {
	return RunTestsWith(m, c, Components{}, setup)
}

// RunTestsWith is RunTests on a cluster that runs components. When a test fails, the components'
// logs are kept, and where is printed.
func RunTestsWith(m *testing.M, c **Cluster, components Components, setup func(dir string) error) int {
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

// Current returns obj as the server has it now, or nil if it is gone; any other error fails t.
func (c *Cluster) Current(t testing.TB, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got, err := c.Get(context.Background(), obj)
	require.NoError(t, err)
	return got
}
