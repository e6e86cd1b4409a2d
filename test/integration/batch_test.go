package integration

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/backup"
	"github.com/operator-sweeper/operator-sweeper/report"
)

// TestBatchedPreImages: the pre-images of a batch of many small writes go into a few Secrets, one
// whose body is large into Secrets of its own (the layout of one write's); LoadRun reads every
// record back, each body opens to its object as it was, and pruning deletes both layouts. In a
// namespace of its own, so that pruning touches no other test's pre-images.
func TestBatchedPreImages(t *testing.T) {
	const small = 600
	ctx := context.Background()
	ns := testCluster.NewNamespace(t)
	runID := backup.NewRunID(time.Now())
	store := &backup.Secrets{Client: testCluster.Dynamic, Namespace: ns, RunID: runID}

	configMap := func(name string, data string) *unstructured.Unstructured {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("v1")
		obj.SetKind("ConfigMap")
		obj.SetNamespace(ns)
		obj.SetName(name)
		obj.SetUID(types.UID("uid-" + name))
		obj.SetFinalizers([]string{syslogNGFinalizer})
		obj.Object["data"] = map[string]any{"value": data}
		return obj
	}
	noise := make([]byte, 400<<10)
	_, err := rand.Read(noise)
	require.NoError(t, err)
	var objects []*unstructured.Unstructured
	for i := range small {
		objects = append(objects, configMap(fmt.Sprintf("small-%04d", i), fmt.Sprintf("value %d", i)))
	}
	// Its body, gzipped, is past what a batch takes: base64 of random bytes compresses to ¾.
	large := configMap("large", base64.StdEncoding.EncodeToString(noise))
	objects = append(objects[:small/2], append([]*unstructured.Unstructured{large}, objects[small/2:]...)...)

	entries := make([]backup.Entry, len(objects))
	for i, obj := range objects {
		entries[i] = backup.Entry{Name: obj.GetName(), Object: obj, Pre: &report.PreImage{}, Record: func(pre *report.PreImage) (report.BackupRecord, error) {
			return report.BackupRecord{APIVersion: report.BackupAPIVersion, Kind: report.BackupKind, RunID: runID,
				Finding: report.FindingResult{Object: report.ObjectSummary{Kind: "ConfigMap", Namespace: ns, Name: obj.GetName(), UID: obj.GetUID()}, Before: pre}}, nil
		}}
	}
	require.NoError(t, store.Batch(ctx, entries))

	secrets, err := testCluster.Kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: backup.RunLabel + "=" + runID})
	require.NoError(t, err)
	var names []string
	for _, s := range secrets.Items {
		names = append(names, s.Name)
		assert.True(t, *s.Immutable, "%s: immutable", s.Name)
		assert.Equal(t, "true", s.Labels[backup.PreImageLabel], "%s: labelled as a pre-image", s.Name)
	}
	t.Logf("%d writes kept in %d Secrets: %v", len(entries), len(names), names)
	// 600 small bodies and records fit one batch Secret; the large body takes a part and a record.
	assert.Len(t, names, 3, "a few Secrets, not two per write: %v", names)

	records, err := backup.LoadRun(ctx, backupClient(t), ns, runID)
	require.NoError(t, err)
	require.Len(t, records, len(objects), "a record of every write")
	seen := map[string]bool{}
	for _, rec := range records {
		pre := rec.Finding.Before
		name := rec.Finding.Object.Name
		seen[name] = true
		assert.Equal(t, name == "large", pre.Entry == "", "%s: a large body is kept on its own, a small one in a batch (%+v)", name, pre)
		assert.True(t, strings.HasPrefix(pre.Kept, "secret:"+ns+"/"+backup.SecretPrefix+runID+"-"), "%s: %s", name, pre.Kept)
		body, err := backup.OpenSecrets(ctx, testCluster.Dynamic, pre)
		require.NoError(t, err, name)
		got, err := body.Next()
		require.NoError(t, err, name)
		require.NoError(t, body.Close())
		want := entries[indexOf(objects, name)].Object
		assert.Equal(t, report.Image(want).Object, got.Object, "%s: its body is the object as kept", name)
	}
	assert.Len(t, seen, len(objects), "each write's record once")

	t.Run("a body changed after it was kept is refused", func(t *testing.T) {
		pre := *records[0].Finding.Before
		pre.SHA256 = strings.Repeat("0", 64)
		body, err := backup.OpenSecrets(ctx, testCluster.Dynamic, &pre)
		require.NoError(t, err)
		// The digest is checked once the body is read to its end, as restore reads it.
		for err == nil {
			_, err = body.Next()
		}
		assert.ErrorContains(t, err, "SHA-256")
	})

	removed, err := backup.PruneSecrets(ctx, backupClient(t), ns, time.Now().Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, len(names), removed, "pruning deletes the batch Secret and the large body's")
	left, err := testCluster.Kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: backup.PreImageLabel + "=true"})
	require.NoError(t, err)
	assert.Empty(t, left.Items)
}

func indexOf(objects []*unstructured.Unstructured, name string) int {
	for i, obj := range objects {
		if obj.GetName() == name {
			return i
		}
	}
	return -1
}
