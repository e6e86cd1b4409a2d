package integration

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// denyWebhook is the name of the webhook that refuses every update in namespace A.
	denyWebhook = "deny.sweeper-test.example.com"
	// denyMessage is what it says.
	denyMessage = "finalizer removal refused by test"
	// denyLabel marks namespace A for the webhook's namespaceSelector.
	denyLabel = "webhookdeny.sweeper-test.example.com/target"
)

// admissionServer serves the admission/v1 AdmissionReview protocol over HTTPS on 127.0.0.1 with
// a self-signed certificate, as a webhook registered by URL must, and denies every request with
// message. It returns the server, the caBundle that trusts it, and how many reviews it answered.
func admissionServer(t *testing.T, message string) (*httptest.Server, []byte, *atomic.Int64) {
	t.Helper()
	cert, caPEM := selfSignedTLS(t)
	var reviews atomic.Int64
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
			return
		}
		reviews.Add(1)
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: false,
			Result: &metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: message}}
		review.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))
	server.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	server.StartTLS()
	return server, caPEM, &reviews
}

// TestWebhookDeniesFinalizerPatches: a real validating webhook, called by the API server over
// HTTPS, refuses every update of SyslogNGConfigs in namespace A. The releases there fail, with
// an error that names the webhook, and the run fails (exit 1); the releases in namespace B, which
// the webhook does not match, are applied all the same.
func TestWebhookDeniesFinalizerPatches(t *testing.T) {
	const perNamespace = 5
	ctx := context.Background()
	nsA, nsB := testCluster.NewNamespace(t, "a"), testCluster.NewNamespace(t, "b")
	// Seeded first: their cleanup (an update) runs after the webhook is gone.
	seedOrphans(t, nsA, perNamespace, func(int) []string { return []string{syslogNGFinalizer} })
	seedOrphans(t, nsB, perNamespace, func(int) []string { return []string{syslogNGFinalizer} })
	server, caPEM, reviews := admissionServer(t, denyMessage)
	t.Cleanup(server.Close) // after the configuration is gone: with failurePolicy Fail, a dead server refuses too

	// Only namespace A, by name and by a label of its own: never another test's namespace.
	namespaces := testCluster.Kube.CoreV1().Namespaces()
	_, err := namespaces.Patch(ctx, nsA, types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true"}}}`, denyLabel), metav1.PatchOptions{})
	require.NoError(t, err)
	// The API server calls a webhook once its informer has the configuration, and stops a moment
	// after the configuration is deleted: probe with a server-side dry run.
	denied := func(ns string) bool {
		_, err := syslogNGClient(ns).Patch(ctx, orphanName(0), types.MergePatchType, []byte(`{"metadata":{"labels":{"probe":"x"}}}`),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), denyMessage)
	}
	config, err := testCluster.Create(ctx, fill(fmt.Sprintf(`
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: NAMESPACE-deny}
webhooks:
- name: %s
  clientConfig: {url: %q, caBundle: %q}
  rules: [{operations: [UPDATE], apiGroups: [logging.banzaicloud.io], apiVersions: ["*"], resources: [syslogngconfigs], scope: Namespaced}]
  namespaceSelector:
    matchLabels: {kubernetes.io/metadata.name: NAMESPACE, %s: "true"}
  failurePolicy: Fail
  sideEffects: None
  timeoutSeconds: 5
  admissionReviewVersions: [v1]
`, denyWebhook, server.URL+"/validate", base64.StdEncoding.EncodeToString(caPEM), denyLabel), nsA, ""))
	require.NoError(t, err)
	// Registered before anything can fail: left behind, the webhook would refuse the cleanup.
	t.Cleanup(func() {
		remove(t, config)
		assert.Eventually(t, func() bool { return !denied(nsA) }, 30*time.Second, 100*time.Millisecond, "the webhook is no longer called")
	})

	require.Eventually(t, func() bool { return denied(nsA) }, 30*time.Second, 100*time.Millisecond, "the webhook is called")
	assert.False(t, denied(nsB), "the webhook matches namespace A only")

	before := reviews.Load()
	stdout, stderr, code := runBinary(t, "--config", orphansConfig(t, nsA), "--dry-run=none", "--include-namespaces="+nsA+","+nsB, "--min-terminating-age=0s", "--min-age=0s",
		"-o", "json", "--log-level=warn")

	assert.Equal(t, 1, code, "a failed action fails the run; stderr:\n%s", stderr)
	var rep report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), "stdout: %s\nstderr: %s", stdout, stderr)
	assert.GreaterOrEqual(t, reviews.Load()-before, int64(perNamespace), "the API server asked the webhook about every release in A")

	inA, inB := orphanFindings(t, &rep, nsA), orphanFindings(t, &rep, nsB)
	require.Len(t, inA, perNamespace)
	require.Len(t, inB, perNamespace)
	for name, f := range inA {
		assert.Equal(t, report.OutcomeFailed, f.Outcome, "%s in A: %s", name, why(f))
		assert.Contains(t, f.Error, denyWebhook, "%s in A: the error names the webhook", name)
		assert.Contains(t, f.Error, denyMessage, "%s in A: and says what it said", name)
	}
	for name, f := range inB {
		assert.Equal(t, report.OutcomeApplied, f.Outcome, "%s in B: %s", name, why(f))
	}
	assert.Equal(t, perNamespace, rep.Summary.Failed)
	assert.Contains(t, stderr, fmt.Sprintf("%d actions failed", perNamespace))

	onServerA := finalizersOnServer(t, nsA)
	require.Len(t, onServerA, perNamespace, "refused: still there")
	for name, finalizers := range onServerA {
		assert.Equal(t, []string{syslogNGFinalizer}, finalizers, "%s in A keeps its finalizer", name)
	}
	assert.Zero(t, countOnServer(t, nsB), "released in B")
}
