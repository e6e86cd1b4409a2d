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
	if *c, err = Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := (*c).Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the test cluster:", err)
		}
	}()
	return m.Run()
}

// Current returns obj as the server has it now, or nil if it is gone; any other error fails t.
func (c *Cluster) Current(t testing.TB, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got, err := c.Get(context.Background(), obj)
	require.NoError(t, err)
	return got
}
