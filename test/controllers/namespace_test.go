package controllers

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// TestStuckNamespace: `helm uninstall` of logging-operator, then the deletion of its namespace
// (F4). The real namespace controller deletes what it can and says, in the namespace's
// conditions, which finalizers hold the rest; the report quotes it. The sweeper releases the
// finalizers of the uninstalled operator, and the namespace controller finishes.
func TestStuckNamespace(t *testing.T) {
	setUpOnce(t)
	ctx := context.Background()
	ns := newNamespace(t, "stuck")
	seeded, err := testCluster.SeedF4(ctx, ns)
	require.NoError(t, err)
	eventually(t, time.Minute, "the namespace controller reports the finalizers it waits for", func() bool {
		namespace, err := testCluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		require.NoError(t, err)
		return slices.ContainsFunc(namespace.Status.Conditions, func(c corev1.NamespaceCondition) bool {
			return c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue
		})
	})

	report := sweep(t)

	var stuck *sweeper.FindingResult
	for i, f := range report.Findings {
		if f.Rule == "stuck-terminating" && f.Object.Kind == "Namespace" && f.Object.Name == ns {
			stuck = &report.Findings[i]
		}
	}
	require.NotNil(t, stuck, "the namespace is reported")
	assert.True(t, slices.ContainsFunc(stuck.Evidence, func(e string) bool {
		return strings.HasPrefix(e, "namespace condition NamespaceFinalizersRemaining: ") &&
			strings.Contains(e, "syslogngconfig.logging.banzaicloud.io/finalizer")
	}), "the namespace controller's word: %v", stuck.Evidence)
	for _, obj := range seeded.Objects {
		f := findingAbout(report, "orphaned-finalizers", obj)
		if assert.NotNil(t, f, "%s %s is reported", obj.GetKind(), obj.GetName()) {
			assert.Equal(t, sweeper.OutcomeApplied, f.Outcome, "%s %s: %s %s", obj.GetKind(), obj.GetName(), f.Reason, f.Error)
		}
	}
	eventually(t, time.Minute, "the namespace controller finishes", func() bool {
		_, err := testCluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	for _, obj := range seeded.Objects {
		assert.Nil(t, current(t, obj), "%s %s deleted", obj.GetKind(), obj.GetName())
	}
	assert.Empty(t, actedOn(sweep(t), ns), "nothing left to do")
}
