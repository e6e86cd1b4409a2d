package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// deadAPIService is an APIService for v1 of widgets.sweeper-test.io, served by Service
// NAMESPACE/widgets-api, and labelled, if LABELS is not {}, as OLM labels what it registers.
const deadAPIService = `
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.widgets.sweeper-test.io, labels: LABELS}
spec:
  group: widgets.sweeper-test.io
  version: v1
  service: {namespace: NAMESPACE, name: widgets-api, port: 443}
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 1000
  versionPriority: 15
`

const olmLabels = `{olm.owner: widgets.v1.0.0, olm.owner.namespace: NAMESPACE, olm.owner.kind: ClusterServiceVersion}`

// registerAPIService creates the APIService, removed when the test ends (its group's discovery
// fails meanwhile), and waits until the API server's availability check has judged it.
func registerAPIService(t *testing.T, ns, labels string) *unstructured.Unstructured {
	t.Helper()
	api := create(t, ns, strings.Replace(deadAPIService, "LABELS", labels, 1))[0]
	var reason string
	require.Eventually(t, func() bool {
		now := testCluster.Current(t, api)
		conditions, _, _ := unstructured.NestedSlice(now.Object, "status", "conditions")
		for _, c := range conditions {
			if m := c.(map[string]any); m["type"] == "Available" && m["status"] == "False" {
				reason, _ = m["reason"].(string)
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "the API server checks the APIService's availability")
	t.Logf("Available=False, reason %s", reason)
	return api
}

func deadAPIServicesOptIn(opts options.Options) options.Options {
	opts.RuleConfigs = map[string]rules.RuleConfig{rules.DeadAPIServicesName: {Args: rules.DeadAPIServicesArgs{Delete: true}}}
	return opts
}

// TestDeadAPIService: an APIService whose Service is missing is reported with the API server's
// own verdict. Registered by OLM, for a CSV that is gone while OLM is gone too, it is deleted once
// opted in, skipped opt-in otherwise; registered by anyone else, while its Service's namespace is
// there, it is kept.
func TestDeadAPIService(t *testing.T) {
	ns := testCluster.NewNamespace(t)

	t.Run("OLM's, without the opt-in", func(t *testing.T) {
		api := registerAPIService(t, ns, fill(olmLabels, ns, ""))
		rep := sweep(t, sweepOptions(), nil)
		f := findingAbout(t, rep, rules.DeadAPIServicesName, api)
		assert.Equal(t, report.OutcomeSkipped, f.Outcome)
		assert.Equal(t, report.ReasonOptIn, f.SkipReason)
		assert.Contains(t, f.Evidence[0], "condition Available=False since ")
		assert.Contains(t, f.Evidence[0], "reason ServiceNotFound")
		assert.Contains(t, f.Evidence, "Service "+ns+"/widgets-api: no such Service")
		assert.Contains(t, f.Evidence, "widgets.sweeper-test.io/v1 is unavailable: its discovery fails, and so does every namespace deletion")
		assert.Contains(t, f.Evidence, "ClusterServiceVersion "+ns+"/widgets.v1.0.0 no longer exists")
		assert.NotNil(t, testCluster.Current(t, api))
		assert.True(t, slices.ContainsFunc(rep.Errors, func(e report.Error) bool { return e.Resource == "widgets.sweeper-test.io/v1" }),
			"its group cannot be discovered: %v", rep.Errors)
	})

	t.Run("OLM's, opted in: deleted", func(t *testing.T) {
		api := registerAPIService(t, ns, fill(olmLabels, ns, ""))
		rep := sweep(t, deadAPIServicesOptIn(sweepOptions()), nil)
		f := findingAbout(t, rep, rules.DeadAPIServicesName, api)
		assert.Equal(t, report.OutcomeApplied, f.Outcome, why(f))
		assert.Nil(t, testCluster.Current(t, api))
	})

	t.Run("someone else's, its namespace still there: kept", func(t *testing.T) {
		api := registerAPIService(t, ns, "{}")
		rep := sweep(t, deadAPIServicesOptIn(sweepOptions()), nil)
		f := findingAbout(t, rep, rules.DeadAPIServicesName, api)
		assert.Nil(t, f.Action)
		assert.Equal(t, "unavailable: Service "+ns+"/widgets-api is gone, but not whoever registered it", f.Reason)
		assert.NotNil(t, testCluster.Current(t, api))
	})

	t.Run("its Service there without endpoints: kept", func(t *testing.T) {
		create(t, ns, `{apiVersion: v1, kind: Service, metadata: {name: widgets-api, namespace: NAMESPACE}, spec: {ports: [{port: 443}]}}`)
		api := registerAPIService(t, ns, fill(olmLabels, ns, ""))
		rep := sweep(t, deadAPIServicesOptIn(sweepOptions()), nil)
		f := findingAbout(t, rep, rules.DeadAPIServicesName, api)
		assert.Nil(t, f.Action)
		assert.Equal(t, "unavailable: Service "+ns+"/widgets-api has no ready endpoint; its workload may come back", f.Reason)
		assert.Contains(t, f.Evidence[0], "reason EndpointsNotFound")
		assert.NotNil(t, testCluster.Current(t, api))
	})
}

// denyingWebhook serves admission reviews and denies every request with message.
func denyingWebhook(t *testing.T, message string) *httptest.Server {
	t.Helper()
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
			return
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: false,
			Result: &metav1.Status{Code: http.StatusForbidden, Message: message}}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(server.Close)
	return server
}

// TestWebhooksThatBlockWrites: a real admission webhook, registered by URL, denies the updates of
// logging-operator's SyslogNGConfigs in one namespace. The release of the SyslogNGConfig fails
// with an error that names the webhook and its configuration, and links to its finding; the rest
// of the sweep goes on. A webhook whose Service is missing, with failurePolicy Fail, is reported
// as refusing the writes it matches.
func TestWebhooksThatBlockWrites(t *testing.T) {
	ctx := context.Background()
	ns := testCluster.NewNamespace(t)
	// Seeded first, so that the webhooks are gone before it is cleaned up.
	debris := terminate(t, ns, loggingConfigDebris)
	server := denyingWebhook(t, "finalizers are ours")
	caBundle := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw}))
	deny := create(t, ns, fmt.Sprintf(`
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: NAMESPACE-deny}
webhooks:
- name: deny.sweeper-test.io
  clientConfig: {url: %q, caBundle: %q}
  rules: [{operations: [UPDATE], apiGroups: [logging.banzaicloud.io], apiVersions: ["*"], resources: [syslogngconfigs]}]
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: NAMESPACE}}
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: NAMESPACE-dead}
webhooks:
- name: things.sweeper-test.io
  clientConfig: {service: {namespace: NAMESPACE, name: things-webhook}}
  rules: [{operations: [CREATE, DELETE], apiGroups: [sweeper-test.io], apiVersions: ["*"], resources: [things]}]
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
`, server.URL+"/validate", caBundle))
	syslogNG := slices.IndexFunc(debris, func(o *unstructured.Unstructured) bool { return o.GetKind() == "SyslogNGConfig" })
	require.GreaterOrEqual(t, syslogNG, 0)
	// The API server calls a webhook once its informer has seen the configuration, and stops a
	// moment after it is deleted.
	denied := func() bool {
		client, _, err := testCluster.Resource(debris[syslogNG])
		require.NoError(t, err)
		_, err = client.Patch(ctx, debris[syslogNG].GetName(), types.MergePatchType, []byte(`{"metadata":{"labels":{"probe":"x"}}}`),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "finalizers are ours")
	}
	require.Eventually(t, denied, 30*time.Second, 200*time.Millisecond, "the webhook is called")
	t.Cleanup(func() {
		remove(t, deny)
		assert.Eventually(t, func() bool { return !denied() }, 30*time.Second, 200*time.Millisecond, "the webhook is no longer called")
	})

	rep := sweep(t, sweepOptions(), nil)

	released := byKind(ruleFindings(rep, rules.OrphanedFinalizersName, ns))
	refused := released["SyslogNGConfig"]
	assert.Equal(t, report.OutcomeFailed, refused.Outcome)
	assert.Contains(t, refused.Error, "refused by webhook deny.sweeper-test.io of ValidatingWebhookConfiguration "+ns+"-deny: ")
	assert.Contains(t, refused.Error, "finalizers are ours")
	assert.Equal(t, []types.UID{deny[0].GetUID()}, uids(refused.BlockedBy), "linked to the webhook configuration")
	assert.Equal(t, report.OutcomeApplied, released["FluentdConfig"].Outcome, "the rest of the sweep goes on: %s", why(released["FluentdConfig"]))
	assert.NotNil(t, testCluster.Current(t, debris[syslogNG]), "still held")

	byURL := findingAbout(t, rep, rules.DeadWebhooksName, deny[0])
	assert.Equal(t, "webhooks deny.sweeper-test.io are called by URL: not checked", byURL.Reason)
	dead := findingAbout(t, rep, rules.DeadWebhooksName, deny[1])
	assert.Equal(t, rules.SeverityWarning, dead.Severity)
	assert.Contains(t, dead.Evidence, "webhook things.sweeper-test.io (failurePolicy Fail): Service "+ns+"/things-webhook: no such Service")
	assert.Contains(t, dead.Evidence, "webhook things.sweeper-test.io refuses CREATE, DELETE of things.sweeper-test.io")
	assert.Nil(t, dead.Action, "its namespace is there: nothing says who registered it")
}

func uids(objs []report.ObjectSummary) []types.UID {
	var out []types.UID
	for _, o := range objs {
		out = append(out, o.UID)
	}
	return out
}
