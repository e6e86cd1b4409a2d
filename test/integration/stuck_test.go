package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

const syslogNG = `
apiVersion: logging.banzaicloud.io/v1beta1
kind: SyslogNGConfig
metadata:
  name: NAME
  namespace: NAMESPACE
  finalizers:
  - syslogngconfig.logging.banzaicloud.io/finalizer
  - example.com/second
`

// TestStuckTerminatingThreshold deletes one CR, waits for the deletion timestamp's second to
// pass, deletes another, and sweeps at a time when only the first has been terminating for
// --min-terminating-age.
func TestStuckTerminatingThreshold(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	terminate(t, ns, fill(syslogNG, ns, "old"))
	time.Sleep(1100 * time.Millisecond) // deletion timestamps have a resolution of one second
	terminate(t, ns, fill(syslogNG, ns, "young"))

	old := deletionTimestamp(t, ns, "old")
	young := deletionTimestamp(t, ns, "young")
	require.GreaterOrEqual(t, young.Sub(old), time.Second)
	const minAge = 15 * time.Minute
	now := old.Add(minAge)

	rep := newEngine(t, testOptions(ns), nil, clocktesting.NewFakePassiveClock(now), stuckTerminating(t, minAge)).Run(context.Background())

	require.Empty(t, rep.Errors)
	findings := findingsIn(rep, ns)
	require.Len(t, findings, 1, "only the object terminating for at least 15m")
	f := findings[0]
	assert.Equal(t, "stuck-terminating", f.Rule)
	assert.Equal(t, "SyslogNGConfig", f.Object.Kind)
	assert.Equal(t, "logging.banzaicloud.io/v1beta1", f.Object.APIVersion)
	assert.Equal(t, "old", f.Object.Name)
	assert.NotEmpty(t, f.Object.UID)
	assert.Equal(t, "terminating for 15m, waiting on syslogngconfig.logging.banzaicloud.io/finalizer, example.com/second", f.Reason)
	assert.Contains(t, f.Evidence, "finalizers: syslogngconfig.logging.banzaicloud.io/finalizer, example.com/second")
	assert.Nil(t, f.Action, "stuck-terminating only reports")
}

func deletionTimestamp(t *testing.T, namespace, name string) time.Time {
	t.Helper()
	objs, err := cluster.Decode(fill(syslogNG, namespace, name))
	require.NoError(t, err)
	obj, err := testCluster.Get(context.Background(), objs[0])
	require.NoError(t, err)
	require.NotNil(t, obj.GetDeletionTimestamp(), "%s is not terminating", name)
	return obj.GetDeletionTimestamp().Time
}
