package integration

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	typedeventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

const (
	finalizerA = "test.operator-sweeper.io/a"
	finalizerB = "test.operator-sweeper.io/b"
	finalizerC = "test.operator-sweeper.io/c"
)

var configMaps = rules.ConfigMaps

// planRule is a rule for exercising the apply layer: it plans its action for every object of the
// namespace for which wants is true.
type planRule struct {
	namespace string
	wants     func(*rules.Object) bool
	action    func(*rules.Object) rules.Action
}

func (planRule) Name() string { return "test-plan" }

func (r planRule) Plan(_ context.Context, view *rules.View) []rules.Finding {
	var findings []rules.Finding
	for obj := range view.Objects() {
		if obj.Namespace == r.namespace && r.wants(obj) {
			findings = append(findings, rules.Finding{Rule: r.Name(), Object: obj.Ref(), Reason: "test", Action: r.action(obj)})
		}
	}
	return findings
}

// releaseA removes finalizer a wherever it is.
func releaseA(namespace string) planRule {
	return planRule{
		namespace: namespace,
		wants:     func(o *rules.Object) bool { return slices.Contains(o.Finalizers, finalizerA) },
		action:    func(*rules.Object) rules.Action { return rules.RemoveFinalizers{Finalizers: []string{finalizerA}} },
	}
}

type applyFixture struct {
	namespace string
	rec       *recorder
	applier   func(report.DryRunMode) *sweeper.Applier
	// events writes the Events an applier logged (recordEvents).
	events typedeventsv1.EventsV1Interface
	logger *slog.Logger
}

// recordEvents records the Events of what a applied, as the engine does once its writes are done.
func (f applyFixture) recordEvents(a *sweeper.Applier) {
	a.Events.Record(context.Background(), f.events, f.logger, 10*time.Second)
}

func newApplyFixture(t *testing.T) applyFixture {
	ns := testCluster.NewNamespace(t)
	rec := &recorder{}
	cfg := rest.CopyConfig(testCluster.Config)
	cfg.WrapTransport = rec.wrap
	client, err := metadata.NewForConfig(cfg)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	events, err := typedeventsv1.NewForConfig(cfg)
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	return applyFixture{
		namespace: ns,
		rec:       rec,
		applier: func(mode report.DryRunMode) *sweeper.Applier {
			return &sweeper.Applier{Writer: sweeper.Writer{Metadata: client, Dynamic: dyn, Mode: mode}, Logger: logger, Events: &sweeper.EventLog{}}
		},
		events: events,
		logger: logger,
	}
}

// configMap creates a ConfigMap with finalizers and returns it as observed.
func (f applyFixture) configMap(t *testing.T, name string, finalizers ...string) *rules.Object {
	t.Helper()
	cm, err := testCluster.Kube.CoreV1().ConfigMaps(f.namespace).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return &rules.Object{Resource: &configMaps, Meta: rules.MetaOf(&cm.ObjectMeta)}
}

// update changes a ConfigMap as a concurrent controller would.
func (f applyFixture) update(t *testing.T, name string, change func(*corev1.ConfigMap)) {
	t.Helper()
	cm, err := testCluster.Kube.CoreV1().ConfigMaps(f.namespace).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	change(cm)
	_, err = testCluster.Kube.CoreV1().ConfigMaps(f.namespace).Update(context.Background(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func (f applyFixture) finalizers(t *testing.T, name string) []string {
	t.Helper()
	cm, err := testCluster.Kube.CoreV1().ConfigMaps(f.namespace).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return cm.Finalizers
}

// plan returns the single finding rule plans from a view of objs.
func plan(t *testing.T, rule rules.Rule, objs ...*rules.Object) (*rules.View, rules.Finding) {
	t.Helper()
	view := rules.NewView(time.Now(), []rules.Resource{configMaps}, rules.Coverage{}, objs)
	findings := rule.Plan(context.Background(), view)
	require.Len(t, findings, 1)
	return view, findings[0]
}

func (f applyFixture) patches(name string) []request {
	return f.rec.matching("PATCH", "^/api/v1/namespaces/"+f.namespace+"/configmaps/"+name+"$")
}

func TestApplyRemovesOneFinalizerOfTwo(t *testing.T) {
	f := newApplyFixture(t)
	obj := f.configMap(t, "cm", finalizerA, finalizerB)
	view, finding := plan(t, releaseA(f.namespace), obj)

	applier := f.applier(report.DryRunNone)
	res := applier.Apply(context.Background(), releaseA(f.namespace), view, finding)
	f.recordEvents(applier)

	assert.Equal(t, report.OutcomeApplied, res.Outcome, res.Detail)
	require.NotNil(t, res.Before, "the pre-image, read right before the write")
	assert.Equal(t, "configmaps", res.Before.Resource)
	assert.Equal(t, []string{finalizerA, finalizerB}, res.Before.Finalizers)
	assert.Equal(t, []string{finalizerB}, f.finalizers(t, "cm"))
	patches := f.patches("cm")
	require.Len(t, patches, 1)
	assert.Empty(t, patches[0].Query["dryRun"])
	events, err := testCluster.Kube.CoreV1().Events(f.namespace).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(obj.UID)})
	require.NoError(t, err)
	require.Len(t, events.Items, 1, "the applied action is recorded on the object")
	assert.Equal(t, "OperatorSweeperRemoveFinalizers", events.Items[0].Reason)
	assert.Equal(t, "remove finalizers "+finalizerA+": test", events.Items[0].Message)
}

func TestApplyServerDryRunSendsButDoesNotPersist(t *testing.T) {
	f := newApplyFixture(t)
	obj := f.configMap(t, "cm", finalizerA, finalizerB)
	view, finding := plan(t, releaseA(f.namespace), obj)

	res := f.applier(report.DryRunServer).Apply(context.Background(), releaseA(f.namespace), view, finding)

	assert.Equal(t, report.OutcomeDryRun, res.Outcome, res.Detail)
	assert.NotNil(t, res.Before)
	assert.Equal(t, []string{finalizerA, finalizerB}, f.finalizers(t, "cm"), "nothing persisted")
	patches := f.patches("cm")
	require.Len(t, patches, 1, "the request was sent")
	assert.Equal(t, []string{"All"}, patches[0].Query["dryRun"])
}

func TestApplyClientDryRunSendsNothing(t *testing.T) {
	f := newApplyFixture(t)
	obj := f.configMap(t, "cm", finalizerA, finalizerB)
	view, finding := plan(t, releaseA(f.namespace), obj)

	res := f.applier(report.DryRunClient).Apply(context.Background(), releaseA(f.namespace), view, finding)

	assert.Equal(t, sweeper.Result{Outcome: report.OutcomePlanned}, res)
	assert.Equal(t, []string{finalizerA, finalizerB}, f.finalizers(t, "cm"))
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	assert.Empty(t, f.rec.requests, "not a single request")
}

// TestApplyLosesToAConcurrentUpdate: a controller adds a finalizer between the sweeper's read of
// the object (its pre-image) and its patch. The patch's test fails, the object is re-read and
// re-planned, and no finalizer is lost.
func TestApplyLosesToAConcurrentUpdate(t *testing.T) {
	f := newApplyFixture(t)
	obj := f.configMap(t, "cm", finalizerA, finalizerB)
	view, finding := plan(t, releaseA(f.namespace), obj)
	f.rec.raceBefore("PATCH", "/configmaps/cm$", func() {
		f.update(t, "cm", func(cm *corev1.ConfigMap) { cm.Finalizers = append(cm.Finalizers, finalizerC) })
	})

	res := f.applier(report.DryRunNone).Apply(context.Background(), releaseA(f.namespace), view, finding)

	assert.Equal(t, report.OutcomeApplied, res.Outcome, res.Detail)
	assert.Equal(t, []string{finalizerB, finalizerC}, f.finalizers(t, "cm"), "c, added concurrently, is kept")
	patches := f.patches("cm")
	require.Len(t, patches, 2, "the first patch lost, the re-planned one won")
	assert.Equal(t, http.StatusUnprocessableEntity, patches[0].Status, "refused by the server: its test operation failed")
	assert.Equal(t, []string{finalizerA, finalizerB, finalizerC}, res.Before.Finalizers, "the pre-image is of the object the winning patch changed")
}

// TestApplyDoesNotWriteOnAStaleView: a controller adds a finalizer between the view and the
// sweeper's read of the object. The read shows the change: no patch is sent on the stale view;
// the action is re-planned from the read, and one patch is sent.
func TestApplyDoesNotWriteOnAStaleView(t *testing.T) {
	f := newApplyFixture(t)
	obj := f.configMap(t, "cm", finalizerA, finalizerB)
	view, finding := plan(t, releaseA(f.namespace), obj)
	f.update(t, "cm", func(cm *corev1.ConfigMap) { cm.Finalizers = append(cm.Finalizers, finalizerC) })

	res := f.applier(report.DryRunNone).Apply(context.Background(), releaseA(f.namespace), view, finding)

	assert.Equal(t, report.OutcomeApplied, res.Outcome, res.Detail)
	assert.True(t, res.Replanned)
	assert.Equal(t, []string{finalizerB, finalizerC}, f.finalizers(t, "cm"))
	assert.Len(t, f.patches("cm"), 1, "no patch on what the view said")
}

// TestApplyRacingReleaseIsResolved: someone else released the finalizer first; the re-plan finds
// nothing left to do.
func TestApplyRacingReleaseIsResolved(t *testing.T) {
	f := newApplyFixture(t)
	obj := f.configMap(t, "cm", finalizerA, finalizerB)
	view, finding := plan(t, releaseA(f.namespace), obj)

	f.update(t, "cm", func(cm *corev1.ConfigMap) { cm.Finalizers = []string{finalizerB, finalizerC} })

	res := f.applier(report.DryRunNone).Apply(context.Background(), releaseA(f.namespace), view, finding)

	assert.Equal(t, report.OutcomeSkipped, res.Outcome)
	assert.Equal(t, report.ReasonResolved, res.Reason, res.Detail)
	assert.Equal(t, []string{finalizerB, finalizerC}, f.finalizers(t, "cm"))
}

func TestApplyToAnObjectThatIsGoneIsDone(t *testing.T) {
	f := newApplyFixture(t)
	obj := f.configMap(t, "cm", finalizerA)
	view, finding := plan(t, releaseA(f.namespace), obj)

	f.update(t, "cm", func(cm *corev1.ConfigMap) { cm.Finalizers = nil })
	require.NoError(t, testCluster.Kube.CoreV1().ConfigMaps(f.namespace).Delete(context.Background(), "cm", metav1.DeleteOptions{}))

	res := f.applier(report.DryRunNone).Apply(context.Background(), releaseA(f.namespace), view, finding)

	assert.Equal(t, sweeper.Result{Outcome: report.OutcomeApplied}, res)
}

// TestDeleteNeverHitsARecreatedObject: the object is deleted and re-created under the same name,
// just like it, right before the sweeper's delete reaches the server. The UID precondition stops
// the delete, and the new object is left to the next run: nothing in the view was observed of it.
func TestDeleteNeverHitsARecreatedObject(t *testing.T) {
	f := newApplyFixture(t)
	doomed := planRule{
		namespace: f.namespace,
		wants:     func(o *rules.Object) bool { return o.Labels["doomed"] == "true" },
		action:    func(*rules.Object) rules.Action { return rules.Delete{} },
	}
	cm, err := testCluster.Kube.CoreV1().ConfigMaps(f.namespace).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Labels: map[string]string{"doomed": "true"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	view, finding := plan(t, doomed, &rules.Object{Resource: &configMaps, Meta: rules.MetaOf(&cm.ObjectMeta)})
	var recreated *corev1.ConfigMap
	f.rec.raceBefore("DELETE", "/configmaps/cm$", func() {
		require.NoError(t, testCluster.Kube.CoreV1().ConfigMaps(f.namespace).Delete(context.Background(), "cm", metav1.DeleteOptions{}))
		recreated, err = testCluster.Kube.CoreV1().ConfigMaps(f.namespace).Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "cm", Labels: map[string]string{"doomed": "true"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	})

	res := f.applier(report.DryRunNone).Apply(context.Background(), doomed, view, finding)

	assert.Equal(t, report.OutcomeSkipped, res.Outcome)
	assert.Equal(t, report.ReasonResolved, res.Reason)
	assert.Equal(t, "the object was deleted and re-created after it was observed; the next run looks at the new one", res.Detail)
	got, err := testCluster.Kube.CoreV1().ConfigMaps(f.namespace).Get(context.Background(), "cm", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, recreated.UID, got.UID, "the re-created object survives, although the rule would delete it too")
	deletes := f.rec.matching("DELETE", "^/api/v1/namespaces/"+f.namespace+"/configmaps/cm$")
	require.Len(t, deletes, 1, "the delete was sent once")
	assert.Equal(t, http.StatusConflict, deletes[0].Status, "and refused: its UID precondition failed")
}

// TestApplyReportsARefusedWriteThatIsNoRace: the server refuses a patch although the object did
// not change (here, an invalid ownerReference); the error is reported, not retried as a race.
func TestApplyReportsARefusedWriteThatIsNoRace(t *testing.T) {
	f := newApplyFixture(t)
	obj := f.configMap(t, "cm")
	invalid := planRule{
		namespace: f.namespace,
		wants:     func(*rules.Object) bool { return true },
		action: func(*rules.Object) rules.Action {
			return rules.SetOwnerReferences{Add: []metav1.OwnerReference{{APIVersion: "v1", Name: "x", UID: "u"}}}
		},
	}
	view, finding := plan(t, invalid, obj)

	res := f.applier(report.DryRunNone).Apply(context.Background(), invalid, view, finding)

	assert.Equal(t, report.OutcomeFailed, res.Outcome)
	assert.Contains(t, res.Detail, "kind")
	assert.Len(t, f.patches("cm"), 1, "no retry: nothing had changed")
}

func TestSetOwnerReferencesChecksTheResourceVersion(t *testing.T) {
	f := newApplyFixture(t)
	obj := f.configMap(t, "cm")
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner-uid"}
	adopt := planRule{
		namespace: f.namespace,
		wants:     func(o *rules.Object) bool { return len(o.OwnerReferences) == 0 },
		action:    func(*rules.Object) rules.Action { return rules.SetOwnerReferences{Add: []metav1.OwnerReference{owner}} },
	}
	view, finding := plan(t, adopt, obj)

	// A concurrent writer adopts it first, with another owner.
	other := []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "other-uid"}}
	f.update(t, "cm", func(cm *corev1.ConfigMap) { cm.OwnerReferences = other })

	res := f.applier(report.DryRunNone).Apply(context.Background(), adopt, view, finding)

	assert.Equal(t, report.OutcomeSkipped, res.Outcome, "re-planned: it has an owner now")
	got, err := testCluster.Kube.CoreV1().ConfigMaps(f.namespace).Get(context.Background(), "cm", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, other, got.OwnerReferences, "the concurrent writer's owner stays")

	// Without a race the owner is set.
	obj2 := f.configMap(t, "cm2")
	view, finding = plan(t, adopt, obj2)
	res = f.applier(report.DryRunNone).Apply(context.Background(), adopt, view, finding)
	require.Equal(t, report.OutcomeApplied, res.Outcome, res.Detail)
	got, err = testCluster.Kube.CoreV1().ConfigMaps(f.namespace).Get(context.Background(), "cm2", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []metav1.OwnerReference{owner}, got.OwnerReferences)
}

// TestApplyWithNothingLeftToRemove: a finalizer already gone is no write, and no Event.
func TestApplyWithNothingLeftToRemove(t *testing.T) {
	f := newApplyFixture(t)
	obj := f.configMap(t, "cm", finalizerB)
	view := rules.NewView(time.Now(), []rules.Resource{configMaps}, rules.Coverage{}, []*rules.Object{obj})
	finding := rules.Finding{Rule: "test", Object: obj.Ref(), Action: rules.RemoveFinalizers{Finalizers: []string{finalizerA}}}

	applier := f.applier(report.DryRunNone)
	res := applier.Apply(context.Background(), releaseA(f.namespace), view, finding)
	f.recordEvents(applier)

	assert.Equal(t, report.OutcomeSkipped, res.Outcome)
	assert.Equal(t, report.ReasonResolved, res.Reason)
	assert.Equal(t, "none of the finalizers to remove is on the object any more", res.Detail)
	assert.Empty(t, f.patches("cm"))
	assert.Empty(t, f.rec.matching("POST", "/events$"))
}

// TestApplyKeepsReplanningWhileItLosesRaces: a controller that writes the object right before
// each of the sweeper's first four patches does not make the action fail; the fourth re-planned
// patch wins.
func TestApplyKeepsReplanningWhileItLosesRaces(t *testing.T) {
	f := newApplyFixture(t)
	obj := f.configMap(t, "cm", finalizerA, finalizerB)
	view, finding := plan(t, releaseA(f.namespace), obj)
	f.rec.raceBefore("PATCH", "/configmaps/cm$", func() {
		f.update(t, "cm", func(cm *corev1.ConfigMap) { cm.Finalizers = append(cm.Finalizers, finalizerC) })
	})
	for i := 1; i <= 3; i++ {
		f.rec.raceBefore("PATCH", "/configmaps/cm$", func() {
			f.update(t, "cm", func(cm *corev1.ConfigMap) {
				cm.Finalizers = append(cm.Finalizers, "test.operator-sweeper.io/race-"+strconv.Itoa(i))
			})
		})
	}

	res := f.applier(report.DryRunNone).Apply(context.Background(), releaseA(f.namespace), view, finding)

	assert.Equal(t, report.OutcomeApplied, res.Outcome, res.Detail)
	assert.Equal(t, []string{finalizerB, finalizerC, "test.operator-sweeper.io/race-1", "test.operator-sweeper.io/race-2",
		"test.operator-sweeper.io/race-3"}, f.finalizers(t, "cm"), "every finalizer added concurrently is kept")
	assert.Len(t, f.patches("cm"), 5, "the first write and three re-planned ones lost, the last won")
}

// panicOnReplan plans like its inner rule once, and panics when asked again: a rule's bug that
// only shows after a lost race.
type panicOnReplan struct {
	planRule
	plans int
}

func (r *panicOnReplan) Plan(ctx context.Context, view *rules.View) []rules.Finding {
	if r.plans++; r.plans > 1 {
		panic("boom")
	}
	return r.planRule.Plan(ctx, view)
}

func TestApplyReportsARuleThatPanicsWhenReplanning(t *testing.T) {
	f := newApplyFixture(t)
	obj := f.configMap(t, "cm", finalizerA)
	rule := &panicOnReplan{planRule: releaseA(f.namespace)}
	view, finding := plan(t, rule, obj)
	f.update(t, "cm", func(cm *corev1.ConfigMap) { cm.Finalizers = append(cm.Finalizers, finalizerC) })

	res := f.applier(report.DryRunNone).Apply(context.Background(), rule, view, finding)

	assert.Equal(t, report.OutcomeFailed, res.Outcome)
	assert.Equal(t, report.ReasonRuleFailed, res.Reason)
	assert.Contains(t, res.Detail, "rule panicked: boom")
	assert.Equal(t, []string{finalizerA, finalizerC}, f.finalizers(t, "cm"), "nothing written on the panicking re-plan")
}

// TestApplyJudgesAWriteWhoseAnswerWasLost: the patch reaches the server, but the connection drops
// before the answer. The sweeper neither resends blindly nor reports a failure: it re-reads the
// object, sees the finalizer gone, and reports the action applied.
func TestApplyJudgesAWriteWhoseAnswerWasLost(t *testing.T) {
	f := newApplyFixture(t)
	obj := f.configMap(t, "cm", finalizerA, finalizerB)
	view, finding := plan(t, releaseA(f.namespace), obj)
	applier := f.applier(report.DryRunNone)
	applier.Writer.Metadata = lossyMetadata(t, f.rec)

	res := applier.Apply(context.Background(), releaseA(f.namespace), view, finding)

	assert.Equal(t, report.OutcomeApplied, res.Outcome, res.Detail)
	assert.Contains(t, strings.Join(res.Evidence, "\n"), "read again, the object shows it was done")
	assert.Equal(t, []string{finalizerB}, f.finalizers(t, "cm"))
	assert.Len(t, f.patches("cm"), 1, "the patch was not sent again")
}

// lossyMetadata is a metadata client whose first PATCH reaches the server, and whose answer is
// then lost, as on a connection reset.
func lossyMetadata(t *testing.T, rec *recorder) metadata.Interface {
	t.Helper()
	cfg := rest.CopyConfig(testCluster.Config)
	var lost atomic.Bool
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return rec.wrap(roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && req.Method == http.MethodPatch && !lost.Swap(true) {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				return nil, syscall.ECONNRESET
			}
			return resp, err
		}))
	}
	client, err := metadata.NewForConfig(cfg)
	require.NoError(t, err)
	return client
}
