package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

const threeWithFinalizerA = `
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: NAMESPACE, finalizers: [test.operator-sweeper.io/a]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b, namespace: NAMESPACE, finalizers: [test.operator-sweeper.io/a, test.operator-sweeper.io/b]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: NAMESPACE, finalizers: [test.operator-sweeper.io/a]}
`

func outcomes(findings []report.FindingResult) map[string]report.Outcome {
	out := map[string]report.Outcome{}
	for _, f := range findings {
		out[f.Object.Name] = f.Outcome
	}
	return out
}

func TestMaxActionsSkipsTheRest(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	create(t, ns, threeWithFinalizerA)
	opts := testOptions(ns)
	opts.MaxActions = 1
	opts.DryRun = report.DryRunNone

	rep := newEngine(t, opts, nil, nil, releaseA(ns)).Run(context.Background())

	require.Empty(t, rep.Errors)
	findings := findingsIn(rep, ns)
	require.Len(t, findings, 3)
	assert.Equal(t, []string{"a", "b", "c"}, []string{findings[0].Object.Name, findings[1].Object.Name, findings[2].Object.Name}, "deterministic order")
	assert.Equal(t, map[string]report.Outcome{"a": report.OutcomeApplied, "b": report.OutcomeSkipped, "c": report.OutcomeSkipped}, outcomes(findings))
	for _, f := range findings[1:] {
		assert.Equal(t, "limit: --max-actions=1 reached", why(f))
	}
	// The two held back take two more runs at one action a run.
	assert.Equal(t, report.Summary{Resources: rep.Summary.Resources, Scanned: rep.Summary.Scanned, Findings: 3, Applied: 1, Skipped: 2,
		HeldBack: 2, RunsToFinish: 2}, rep.Summary)

	cm, err := testCluster.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, cm.Finalizers)
	for _, name := range []string{"b", "c"} {
		cm, err := testCluster.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Contains(t, cm.Finalizers, finalizerA, "%s was skipped", name)
	}
}

// TestSecondRunAppliesNothing: actions are idempotent; what the first run fixed, the second
// finds fixed.
func TestSecondRunAppliesNothing(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	create(t, ns, threeWithFinalizerA)
	opts := testOptions(ns)
	opts.DryRun = report.DryRunNone

	first := newEngine(t, opts, nil, nil, releaseA(ns)).Run(context.Background())
	require.Equal(t, 3, first.Summary.Applied)

	rec := &recorder{}
	second := newEngine(t, opts, rec, nil, releaseA(ns)).Run(context.Background())
	assert.Empty(t, findingsIn(second, ns))
	assert.Zero(t, second.Summary.Applied)
	assert.Empty(t, rec.matching("PATCH", "."), "no write at all")

	cm, err := testCluster.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "b", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{finalizerB}, cm.Finalizers)
}

func TestProtectedNamespacesAreNeverActedOn(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	create(t, ns, threeWithFinalizerA)
	opts := testOptions(ns)
	opts.DryRun = report.DryRunNone
	opts.ProtectedNamespaces = []string{"testprotected*"}

	rec := &recorder{}
	rep := newEngine(t, opts, rec, nil, releaseA(ns)).Run(context.Background())

	findings := findingsIn(rep, ns)
	require.Len(t, findings, 3)
	for _, f := range findings {
		assert.Equal(t, report.OutcomeSkipped, f.Outcome)
		assert.Equal(t, "protected-namespace: "+ns+" is in --protected-namespaces", why(f))
	}
	assert.Empty(t, rec.matching("PATCH", "."))
}

// panickingRule stands for a buggy rule.
type panickingRule struct{}

func (panickingRule) Name() string { return "panicking" }

func (panickingRule) Plan(context.Context, *rules.View) []rules.Finding { panic("boom") }

func TestAPanickingRuleIsReportedAndTheOthersRun(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	terminate(t, ns, stuckPair)

	rep := newEngine(t, testOptions(ns), nil, nil, panickingRule{}, stuckTerminating(t, 0)).Run(context.Background())

	require.Len(t, rep.Errors, 1)
	assert.Equal(t, report.Error{Stage: "plan", Rule: "panicking", Message: "rule panicked: boom", Fatal: true}, rep.Errors[0])
	assert.True(t, rep.Failed(), "a rule's bug fails the run")
	assert.Len(t, findingsIn(rep, ns), 2)
}

func TestRequestsCarryTheUserAgent(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	rec := &recorder{}
	opts := testOptions(ns)
	opts.Version = "v9.8.7"
	newEngine(t, opts, rec, nil).Run(context.Background())

	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.NotEmpty(t, rec.requests)
	for _, req := range rec.requests {
		assert.Equal(t, "operator-sweeper/v9.8.7", req.UserAgent, "%s %s", req.Method, req.Path)
	}
}

// contentProbe is a view probe that reads the replicas of Deployments, and all of the ConfigMaps
// labelled full=yes.
type contentProbe struct{ viewProbe }

func (*contentProbe) ReadsContent() []rules.ContentRequest {
	return []rules.ContentRequest{
		{Resource: rules.Deployments.GroupResource(), Fields: []string{"spec.replicas"}},
		{Resource: rules.ConfigMaps.GroupResource(), Selector: "full=yes"},
	}
}

func TestRulesGetTheContentTheyRead(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	create(t, ns, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: logging-operator, namespace: NAMESPACE, labels: {app.kubernetes.io/name: logging-operator}}
spec:
  replicas: 0
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec: {containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: NAMESPACE}
data: {key: value}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: selected, namespace: NAMESPACE, labels: {full: "yes"}}
data: {key: value}
`)
	probe := &contentProbe{}
	rec := &recorder{}
	rep := newEngine(t, testOptions(ns), rec, nil, probe).Run(context.Background())
	require.Empty(t, rep.Errors)
	require.NotNil(t, probe.view)

	deployment, ok := probe.view.Get(rules.Deployments.GroupResource(), ns, "logging-operator")
	require.True(t, ok)
	assert.Equal(t, map[string]any{"spec": map[string]any{"replicas": int64(0)}}, deployment.Content, "only the fields the rule reads")
	assert.Equal(t, "logging-operator", deployment.Labels["app.kubernetes.io/name"])
	assert.NotEmpty(t, deployment.UID)

	plain, ok := probe.view.Get(rules.ConfigMaps.GroupResource(), ns, "settings")
	require.True(t, ok)
	assert.Nil(t, plain.Content, "not selected: metadata only")
	selected, ok := probe.view.Get(rules.ConfigMaps.GroupResource(), ns, "selected")
	require.True(t, ok)
	assert.Equal(t, map[string]any{"key": "value"}, selected.Content["data"], "selected: in full")
	var configMapsHere int
	for _, cm := range probe.view.List(rules.ConfigMaps.GroupResource()) {
		if cm.Namespace == ns {
			configMapsHere++
		}
	}
	assert.Equal(t, 2, configMapsHere, "a selected object is in the view once")

	lists := rec.matching("GET", "^/api/v1/namespaces/"+ns+"/configmaps$")
	require.Len(t, lists, 2, "a metadata list, and a full list of the selected ones")
	assert.ElementsMatch(t, []string{"", "full=yes"}, []string{lists[0].Query.Get("labelSelector"), lists[1].Query.Get("labelSelector")})
}

// deleteWithOptIn deletes ConfigMaps labelled doomed, if the test opted in.
type deleteWithOptIn struct {
	namespace string
	optedIn   bool
}

func (deleteWithOptIn) Name() string { return "test-delete" }

func (r deleteWithOptIn) Plan(_ context.Context, view *rules.View) []rules.Finding {
	var findings []rules.Finding
	for _, obj := range view.InNamespace(rules.ConfigMaps.GroupResource(), r.namespace) {
		if obj.Labels["doomed"] == "true" {
			f := rules.Finding{Object: obj.Ref(), Reason: "doomed", Action: rules.Delete{}}
			if !r.optedIn {
				f.OptIn = "rules.test-delete.delete"
			}
			findings = append(findings, f)
		}
	}
	return findings
}

// releaseAfterDelete releases finalizer a of ConfigMaps, after the doomed ones are deleted.
type releaseAfterDelete struct{ namespace string }

func (releaseAfterDelete) Name() string { return "test-release-after" }

func (r releaseAfterDelete) Plan(ctx context.Context, view *rules.View) []rules.Finding {
	var doomed []rules.ObjectRef
	for _, obj := range view.InNamespace(rules.ConfigMaps.GroupResource(), r.namespace) {
		if obj.Labels["doomed"] == "true" {
			doomed = append(doomed, obj.Ref())
		}
	}
	findings := releaseA(r.namespace).Plan(ctx, view)
	for i := range findings {
		findings[i].DependsOn = doomed
	}
	return findings
}

const doomedAndHeld = `
apiVersion: v1
kind: ConfigMap
metadata: {name: doomed-1, namespace: NAMESPACE, labels: {doomed: "true"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: doomed-2, namespace: NAMESPACE, labels: {doomed: "true"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: NAMESPACE, finalizers: [test.operator-sweeper.io/a]}
`

func TestOptInAndDependencies(t *testing.T) {
	type want struct {
		outcome report.Outcome
		err     string
	}
	applied := want{outcome: report.OutcomeApplied}
	tests := []struct {
		name       string
		optedIn    bool
		maxActions int
		want       map[string]want
	}{
		{
			name: "without opt-in, neither the deletes nor what depends on them",
			want: map[string]want{
				"doomed-1": {report.OutcomeSkipped, "opt-in: set rules.test-delete.delete to act"},
				"doomed-2": {report.OutcomeSkipped, "opt-in: set rules.test-delete.delete to act"},
				"held":     {report.OutcomeSkipped, "dependency: ConfigMap NAMESPACE/doomed-1 was not acted on first"},
			},
		},
		{
			name:    "with opt-in, the deletes, then what depends on them",
			optedIn: true,
			want:    map[string]want{"doomed-1": applied, "doomed-2": applied, "held": applied},
		},
		{
			name:       "a dependency stopped by the limit stops the dependent",
			optedIn:    true,
			maxActions: 1,
			want: map[string]want{
				"doomed-1": applied,
				"doomed-2": {report.OutcomeSkipped, "limit: --max-actions=1 reached"},
				"held":     {report.OutcomeSkipped, "dependency: ConfigMap NAMESPACE/doomed-2 was not acted on first"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := testCluster.NewNamespace(t)
			create(t, ns, doomedAndHeld)
			opts := testOptions(ns)
			opts.DryRun = report.DryRunNone
			opts.MaxActions = tt.maxActions
			opts.MinAge.Duration = 0 // the ConfigMaps were created a moment ago: a minute, by this clock
			rep := newEngine(t, opts, nil, clocktesting.NewFakePassiveClock(time.Now().Add(time.Minute)),
				deleteWithOptIn{namespace: ns, optedIn: tt.optedIn}, releaseAfterDelete{namespace: ns}).Run(context.Background())

			got := map[string]want{}
			for _, f := range findingsIn(rep, ns) {
				w := want{outcome: f.Outcome}
				if f.Outcome != report.OutcomeApplied {
					w.err = why(f)
				}
				got[f.Object.Name] = w
			}
			for name, w := range tt.want {
				tt.want[name] = want{w.outcome, fill(w.err, ns, "")}
			}
			assert.Equal(t, tt.want, got)
			for _, name := range []string{"doomed-1", "doomed-2"} {
				_, err := testCluster.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
				assert.Equal(t, got[name] == applied, apierrors.IsNotFound(err), "%s deleted iff applied", name)
			}
		})
	}
}
