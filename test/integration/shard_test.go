package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// plannedFinding is a finding as its rule planned it: without what the engine adds when it acts
// (the live re-checks, which a shard makes only of the actions it takes) and without the outcome,
// which for an action that depends on another shard's waits for the next run.
func plannedFinding(f report.FindingResult) string {
	var evidence []string
	for _, e := range f.Evidence {
		if !strings.HasPrefix(e, "re-checked live") && !strings.HasPrefix(e, "could not re-check") {
			evidence = append(evidence, e)
		}
	}
	f.Evidence, f.Outcome, f.SkipReason, f.FailReason, f.Error = evidence, "", "", "", ""
	data, err := json.Marshal(f)
	if err != nil {
		panic(err) // a FindingResult always encodes
	}
	return string(data)
}

// TestShardsSplitTheSweepExactly: for n = 1, 3 and 4, the shards' findings together are exactly a
// single run's, each finding (and so each action) in exactly one shard, and the stuck namespaces
// they count add up to the single run's.
func TestShardsSplitTheSweepExactly(t *testing.T) {
	for i := range 4 {
		interleavingDebris(t, testCluster.NewNamespace(t, fmt.Sprint(i)))
	}
	stuck := testCluster.NewNamespace(t, "stuck")
	terminate(t, stuck, stuckPair)
	require.NoError(t, testCluster.Kube.CoreV1().Namespaces().Delete(context.Background(), stuck, metav1.DeleteOptions{}))
	ruleSet, err := options.Default().RuleSet()
	require.NoError(t, err)
	// One instant for every run, so that ages, and the reasons that say them, are the same.
	clk := clocktesting.NewFakePassiveClock(time.Now().Add(time.Hour))
	sweep := func(shard string) *report.Report {
		opts := testOptions("")
		opts.MaxActions, opts.MinTerminatingAge.Duration, opts.Shard = 0, 0, shard
		return newEngine(t, opts, nil, clk, ruleSet...).Run(context.Background())
	}

	whole := sweep("")
	require.Empty(t, whole.Errors)
	want := map[string]int{}
	actions := 0
	for _, f := range whole.Findings {
		want[plannedFinding(f)]++
		if f.Action != nil {
			actions++
		}
	}
	require.Greater(t, actions, 5, "the debris calls for actions of every kind")
	require.NotEmpty(t, whole.Summary.StuckNamespaces)

	for _, n := range []int{1, 3, 4} {
		t.Run(fmt.Sprintf("%d shards", n), func(t *testing.T) {
			got := map[string]int{}
			stuckNamespaces := map[string]int{}
			for i := range n {
				part := sweep(fmt.Sprintf("%d/%d", i, n))
				require.Empty(t, part.Errors)
				assert.Less(t, len(part.Findings), len(whole.Findings)+1)
				for _, f := range part.Findings {
					got[plannedFinding(f)]++
				}
				for cause, count := range part.Summary.StuckNamespaces {
					stuckNamespaces[cause] += count
				}
			}
			assert.Equal(t, want, got, "the union of the shards' findings is the single run's, each once")
			assert.Equal(t, whole.Summary.StuckNamespaces, stuckNamespaces)
		})
	}
}

// TestIndexedJobSelectsTheShard: in an Indexed Job, the environment names the shard.
func TestIndexedJobSelectsTheShard(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	terminate(t, ns, stuckPair)
	args := []string{"--include-namespaces", ns, "--min-terminating-age=0s", "-o", "json", "--rules=stuck-terminating"}

	byFlag := map[string][]string{}
	for i := range 3 {
		stdout, stderr, code := runBinary(t, append(args, fmt.Sprintf("--shard=%d/3", i))...)
		require.Equal(t, 0, code, stderr)
		byFlag[fmt.Sprint(i)] = findingNames(t, stdout, fmt.Sprintf("%d/3", i))
	}
	owner := ""
	for i, names := range byFlag {
		if len(names) > 0 {
			require.Empty(t, owner, "one shard owns the namespace")
			owner = i
		}
	}
	require.NotEmpty(t, owner)

	for i := range 3 {
		stdout, stderr, code := runInJob(t, []string{"JOB_COMPLETION_INDEX=" + fmt.Sprint(i), "JOB_COMPLETIONS=3"}, args...)
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, byFlag[fmt.Sprint(i)], findingNames(t, stdout, fmt.Sprintf("%d/3", i)))
	}

	_, stderr, code := runInJob(t, []string{"JOB_COMPLETION_INDEX=1"}, args...)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "JOB_COMPLETIONS is not")
}

// runInJob runs the binary with env added to the test's environment, as a Job's pod would.
func runInJob(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return sweeperBinary.RunIn(t, append(os.Environ(), env...), nil, asAdmin(args...)...)
}

// findingNames decodes a shard's report and returns its findings' objects.
func findingNames(t *testing.T, stdout, shard string) []string {
	t.Helper()
	var rep report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	assert.Equal(t, shard, rep.Metadata.Shard)
	names := []string{}
	for _, f := range rep.Findings {
		names = append(names, f.Object.Kind+"/"+f.Object.Name)
	}
	slices.Sort(names)
	return names
}
