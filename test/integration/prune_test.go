package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-sweeper/operator-sweeper/backup"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// TestPruningManyLargePreImagesStaysSmall: a thousand pre-image Secrets of 900 KiB each (the
// largest body part the sweeper writes), all past --backup-retention, pruned by a run that
// writes: every one is deleted, and the sweeper's memory peaks under 64 MiB — their metadata is
// listed page by page, their data never read. On an API server of its own: nearly a gigabyte of
// Secrets is no other test's business.
func TestPruningManyLargePreImagesStaysSmall(t *testing.T) {
	const secrets, size = 1000, 900 << 10
	ctx := context.Background()
	c, err := cluster.Start()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Stop()) })

	data := make([]byte, size)
	_, err = rand.Read(data) // what gzip makes of a body: incompressible
	require.NoError(t, err)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range secrets {
		g.Go(func() error {
			_, err := c.Kube.CoreV1().Secrets(cluster.SweeperNamespace).Create(gctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{
					Name:   fmt.Sprintf("%sold-%06d-0", backup.SecretPrefix, i),
					Labels: map[string]string{backup.PreImageLabel: "true", backup.RunLabel: "old"},
				},
				Type: backup.SecretType,
				Data: map[string][]byte{"body": data},
			}, metav1.CreateOptions{})
			return err
		})
	}
	require.NoError(t, g.Wait())
	time.Sleep(2 * time.Second) // past --backup-retention=1s

	empty := "prune-test"
	require.NoError(t, c.CreateNamespace(ctx, empty))
	maxrss, err := cluster.BuildMaxRSS(t.TempDir())
	require.NoError(t, err)
	_, stderr, code, peak := sweeperBinary.RunMeasured(t, maxrss, "--kubeconfig", c.Kubeconfig, "--dry-run=none", "--backup-retention=1s",
		"--rules=stuck-terminating", "--include-namespaces", empty, "--log-level=warn", "-o", "json")
	require.Equal(t, 0, code, stderr)
	left, err := c.Kube.CoreV1().Secrets(cluster.SweeperNamespace).List(ctx, metav1.ListOptions{LabelSelector: backup.PreImageLabel + "=true", Limit: 1})
	require.NoError(t, err)
	assert.Empty(t, left.Items, "every old pre-image is pruned")
	t.Logf("peak RSS pruning %d Secrets of %d KiB: %.1f MiB", secrets, size>>10, float64(peak)/(1<<20))
	assert.Less(t, peak, int64(64<<20), "the sweeper's memory stays under 64 MiB")
}
