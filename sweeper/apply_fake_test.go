package sweeper

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// testRule is a rule written for a test: plan is its Plan; content what it reads in full.
type testRule struct {
	name    string
	plan    func(*rules.View) []rules.Finding
	content []rules.ContentRequest
	whole   []schema.GroupResource
}

func (r testRule) Name() string                                          { return r.name }
func (r testRule) Plan(_ context.Context, v *rules.View) []rules.Finding { return r.plan(v) }
func (r testRule) ReadsContent() []rules.ContentRequest                  { return r.content }
func (r testRule) ReadsWhole() []schema.GroupResource                    { return r.whole }

// gone is the finalizer whose controller is gone in the fast tests; keep is another's.
const (
	gone = "example.com/gone"
	keep = "example.com/keep"
)

// operatorAbsent is the fact a release of gone rests on: no Deployment operator in the object's
// namespace. It can change back, so it is read again before every batch.
func operatorAbsent(obj *rules.Object) []rules.Fact {
	return []rules.Fact{rules.ObjectAbsent{Resource: rules.Deployments, Namespace: obj.Namespace, Name: "operator"}}
}

// releaseRule releases gone from every widget that has it, resting on facts.
func releaseRule(facts func(*rules.Object) []rules.Fact) testRule {
	return testRule{name: "release", plan: func(view *rules.View) []rules.Finding {
		var out []rules.Finding
		for _, obj := range view.List(widgets.GroupResource()) {
			if slices.Contains(obj.Finalizers, gone) {
				out = append(out, rules.Finding{Severity: rules.SeverityWarning, Object: obj.Ref(), Reason: "its finalizer's controller is gone",
					Action: rules.RemoveFinalizers{Finalizers: []string{gone}}, Facts: facts(obj)})
			}
		}
		return out
	}}
}

// deleteRule deletes every widget labelled delete=yes.
func deleteRule() testRule {
	return testRule{name: "delete", plan: func(view *rules.View) []rules.Finding {
		var out []rules.Finding
		for _, obj := range view.List(widgets.GroupResource()) {
			if obj.Labels["delete"] == "yes" {
				out = append(out, rules.Finding{Severity: rules.SeverityWarning, Object: obj.Ref(), Reason: "left behind", Action: rules.Delete{}})
			}
		}
		return out
	}}
}

// onWrite is a reactor that sees each write, numbered from 1, to the fake cluster.
type onWrite func(c *fakeCluster, n int, action clienttesting.Action) (bool, runtime.Object, error)

// TestApplyLoop drives Engine.Run, one finding, through each way a write can end: the requests
// sent (their bodies and preconditions), how often it was re-planned, the facts read again, the
// outcome, and what the object is left as.
func TestApplyLoop(t *testing.T) {
	const ns, name = "shop", "w"
	uid := fakeUID(widgets, ns, name)
	widget := func(mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
		return fakeObject(widgets, ns, name, mutate...)
	}
	addFinalizer := func(f string) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) { u.SetFinalizers(append(u.GetFinalizers(), f)) }
	}
	webhookConfig := fakeObject(rules.ValidatingWebhookConfigurations, "", "acme", func(u *unstructured.Unstructured) {
		u.Object["webhooks"] = []any{map[string]any{"name": "deny.example.com"}}
	})
	// Another controller adds a finalizer while the write is on its way: the patch's test of the
	// finalizers fails, on the server.
	raced := func(c *fakeCluster, n int, _ clienttesting.Action) (bool, runtime.Object, error) {
		return false, nil, c.change(widgets, ns, name, addFinalizer(fmt.Sprintf("example.com/other-%d", n)))
	}
	// Each attempt of the loop that never wins, the first and five re-plans (docs/safety.md: "up
	// to five times"): it tests the finalizers the last re-read saw.
	const attempts = 6
	var everRaced []sent
	for k := range attempts {
		finalizers := []string{gone, keep}
		for i := 1; i <= k; i++ {
			finalizers = append(finalizers, fmt.Sprintf("example.com/other-%d", i))
		}
		everRaced = append(everRaced, sent{verb: "patch", namespace: ns, name: name, patch: patchOf(uid, finalizers, finalizers[1:])})
	}
	lostAnswer := &url.Error{Op: "Patch", URL: "https://127.0.0.1:6443/apis/example.com/v1/namespaces/shop/widgets/w", Err: context.DeadlineExceeded}
	refused := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
		Message: `admission webhook "deny.example.com" denied the request: widgets keep their finalizers`}}
	release := patchOf(uid, []string{gone, keep}, []string{keep})

	tests := []struct {
		name    string
		rule    testRule
		objects []*unstructured.Unstructured
		// react sees each write to the widget (verb: patch unless said), before the server does;
		// not handled, the server answers it.
		react onWrite
		verb  string
		// onRead sees each read of the widget in full (the one right before a write), numbered
		// from 1; not handled, the server answers it.
		onRead onWrite

		wantOutcome report.Outcome
		wantReason  report.Reason
		wantDetail  string
		// wantWrites are the writes sent to widgets; those of the delete rule are deletes, one
		// per attempt, each with the UID and the resourceVersion read as preconditions.
		wantWrites    []sent
		wantReplanned bool
		wantEvidence  string
		// wantFinalizers are the widget's finalizers after the run; wantGone, that it is no more.
		wantFinalizers []string
		wantGone       bool
		// wantFactReads are the live reads of the fact (the Deployment operator absent).
		wantFactReads int
		wantBlockedBy bool
	}{{
		name:        "applied: one patch that tests the UID and the finalizers as observed",
		rule:        releaseRule(operatorAbsent),
		objects:     []*unstructured.Unstructured{widget(withFinalizers(gone, keep))},
		wantOutcome: report.OutcomeApplied, wantWrites: []sent{{verb: "patch", namespace: ns, name: name, patch: release}},
		wantFinalizers: []string{keep}, wantFactReads: 1,
	}, {
		name:    "422, the object changed meanwhile: re-read, re-planned, its facts read again, sent again",
		rule:    releaseRule(operatorAbsent),
		objects: []*unstructured.Unstructured{widget(withFinalizers(gone, keep))},
		react: func(c *fakeCluster, n int, a clienttesting.Action) (bool, runtime.Object, error) {
			if n > 1 {
				return false, nil, nil
			}
			return raced(c, n, a)
		},
		wantOutcome: report.OutcomeApplied, wantReplanned: true,
		wantWrites: []sent{everRaced[0], {verb: "patch", namespace: ns, name: name,
			patch: patchOf(uid, []string{gone, keep, "example.com/other-1"}, []string{keep, "example.com/other-1"})}},
		wantFinalizers: []string{keep, "example.com/other-1"}, wantFactReads: 2,
	}, {
		name:        "422 at every attempt: re-planned five times, then a conflict left to the next run",
		rule:        releaseRule(operatorAbsent),
		objects:     []*unstructured.Unstructured{widget(withFinalizers(gone, keep))},
		react:       raced,
		wantOutcome: report.OutcomeFailed, wantReason: report.ReasonConflict, wantDetail: "the object changed again each time it was re-planned",
		wantReplanned: true, wantWrites: everRaced,
		wantFinalizers: append([]string{gone, keep}, "example.com/other-1", "example.com/other-2", "example.com/other-3",
			"example.com/other-4", "example.com/other-5", "example.com/other-6"),
		wantFactReads: attempts,
	}, {
		name:    "changed after it was observed, found so by the read right before the write: nothing sent for the old, re-planned, sent",
		rule:    releaseRule(operatorAbsent),
		objects: []*unstructured.Unstructured{widget(withFinalizers(gone, keep))},
		onRead: func(c *fakeCluster, n int, a clienttesting.Action) (bool, runtime.Object, error) {
			if n > 1 {
				return false, nil, nil
			}
			return raced(c, n, a)
		},
		wantOutcome: report.OutcomeApplied, wantReplanned: true,
		wantWrites: []sent{{verb: "patch", namespace: ns, name: name,
			patch: patchOf(uid, []string{gone, keep, "example.com/other-1"}, []string{keep, "example.com/other-1"})}},
		wantFinalizers: []string{keep, "example.com/other-1"}, wantFactReads: 2,
	}, {
		name:    "422, a fact no longer holds when re-planned: stale, not sent again",
		rule:    releaseRule(operatorAbsent),
		objects: []*unstructured.Unstructured{widget(withFinalizers(gone, keep))},
		react: func(c *fakeCluster, n int, a clienttesting.Action) (bool, runtime.Object, error) {
			if err := c.create(fakeObject(rules.Deployments, ns, "operator")); err != nil {
				return true, nil, err
			}
			return raced(c, n, a)
		},
		wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonStale, wantReplanned: true,
		wantEvidence: "re-checked live: Deployment shop/operator exists now", wantWrites: everRaced[:1],
		wantFinalizers: []string{gone, keep, "example.com/other-1"}, wantFactReads: 2,
	}, {
		name:    "422, the object deleted and re-created meanwhile: the new one is the next run's",
		rule:    releaseRule(operatorAbsent),
		objects: []*unstructured.Unstructured{widget(withFinalizers(gone, keep))},
		react: func(c *fakeCluster, _ int, _ clienttesting.Action) (bool, runtime.Object, error) {
			return false, nil, c.replace(widgets, ns, name)
		},
		wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonResolved, wantDetail: "deleted and re-created",
		wantReplanned: true, wantWrites: everRaced[:1], wantFinalizers: []string{gone, keep}, wantFactReads: 1,
	}, {
		name:    "404, the object gone: done",
		rule:    releaseRule(operatorAbsent),
		objects: []*unstructured.Unstructured{widget(withFinalizers(gone, keep))},
		react: func(c *fakeCluster, _ int, _ clienttesting.Action) (bool, runtime.Object, error) {
			return false, nil, c.remove(widgets, ns, name)
		},
		wantOutcome: report.OutcomeApplied, wantWrites: everRaced[:1], wantGone: true, wantFactReads: 1,
	}, {
		name:    "409, and the object gone when read again: done",
		rule:    releaseRule(operatorAbsent),
		objects: []*unstructured.Unstructured{widget(withFinalizers(gone, keep))},
		react: func(c *fakeCluster, _ int, _ clienttesting.Action) (bool, runtime.Object, error) {
			if err := c.remove(widgets, ns, name); err != nil {
				return true, nil, err
			}
			return true, nil, apierrors.NewConflict(widgets.GroupResource(), name, errors.New("the object has been modified"))
		},
		wantOutcome: report.OutcomeApplied, wantWrites: everRaced[:1], wantGone: true, wantFactReads: 1,
	}, {
		name:    "time-out, the write done all the same: the re-read shows it, applied",
		rule:    releaseRule(operatorAbsent),
		objects: []*unstructured.Unstructured{widget(withFinalizers(gone, keep))},
		react: func(c *fakeCluster, _ int, a clienttesting.Action) (bool, runtime.Object, error) {
			if _, _, err := c.serveMetadata(a); err != nil {
				return true, nil, err
			}
			return true, nil, lostAnswer
		},
		wantOutcome: report.OutcomeApplied, wantEvidence: "the write's answer was lost", wantWrites: everRaced[:1],
		wantFinalizers: []string{keep}, wantFactReads: 1,
	}, {
		name:    "time-out, the write lost on its way: re-read, not done, sent again",
		rule:    releaseRule(operatorAbsent),
		objects: []*unstructured.Unstructured{widget(withFinalizers(gone, keep))},
		react: func(_ *fakeCluster, n int, _ clienttesting.Action) (bool, runtime.Object, error) {
			if n > 1 {
				return false, nil, nil
			}
			return true, nil, apierrors.NewTimeoutError("request did not complete within 1m0s", 0)
		},
		wantOutcome: report.OutcomeApplied, wantReplanned: true, wantWrites: []sent{everRaced[0], everRaced[0]},
		wantFinalizers: []string{keep}, wantFactReads: 2,
	}, {
		name:    "a webhook denies it: failed at once, blamed on its configuration",
		rule:    withContent(releaseRule(operatorAbsent), rules.ValidatingWebhookConfigurations),
		objects: []*unstructured.Unstructured{widget(withFinalizers(gone, keep)), webhookConfig},
		react: func(*fakeCluster, int, clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, refused
		},
		wantOutcome: report.OutcomeFailed, wantReason: report.ReasonAPIError,
		wantDetail: `refused by webhook deny.example.com of ValidatingWebhookConfiguration acme: admission webhook "deny.example.com" denied the request`,
		wantWrites: everRaced[:1], wantFinalizers: []string{gone, keep}, wantFactReads: 1, wantBlockedBy: true,
	}, {
		name:    "a webhook that cannot be called: failed at once, blamed on its configuration",
		rule:    withContent(releaseRule(operatorAbsent), rules.ValidatingWebhookConfigurations),
		objects: []*unstructured.Unstructured{widget(withFinalizers(gone, keep)), webhookConfig},
		react: func(*fakeCluster, int, clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewInternalError(errors.New(`failed calling webhook "deny.example.com": failed to call webhook: ` +
				`Post "https://acme.acme.svc:443/validate": service "acme" not found`))
		},
		wantOutcome: report.OutcomeFailed, wantReason: report.ReasonAPIError, wantDetail: "refused by webhook deny.example.com of ValidatingWebhookConfiguration acme",
		wantWrites: everRaced[:1], wantFinalizers: []string{gone, keep}, wantFactReads: 1, wantBlockedBy: true,
	}, {
		name:        "delete: with the UID and the resourceVersion observed as preconditions",
		rule:        deleteRule(),
		objects:     []*unstructured.Unstructured{widget(withLabels("delete", "yes"))},
		wantOutcome: report.OutcomeApplied, wantGone: true,
	}, {
		name:    "409 to a delete, the object unchanged: the error stands, not sent again",
		rule:    deleteRule(),
		objects: []*unstructured.Unstructured{widget(withLabels("delete", "yes"))},
		verb:    "delete",
		react: func(*fakeCluster, int, clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewConflict(widgets.GroupResource(), name, errors.New("the object has been modified"))
		},
		wantOutcome: report.OutcomeFailed, wantReason: report.ReasonAPIError, wantDetail: "Operation cannot be fulfilled",
	}, {
		name:    "a delete that loses the race on the server: 409 of its preconditions, re-planned, sent again",
		rule:    deleteRule(),
		objects: []*unstructured.Unstructured{widget(withLabels("delete", "yes"))},
		verb:    "delete",
		react: func(c *fakeCluster, n int, _ clienttesting.Action) (bool, runtime.Object, error) {
			if n > 1 {
				return false, nil, nil
			}
			return false, nil, c.change(widgets, ns, name, func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{"touched": "yes"}) })
		},
		wantOutcome: report.OutcomeApplied, wantReplanned: true, wantGone: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFakeCluster(t, append(tt.objects, fakeObject(rules.Namespaces, "", ns))...)
			observed := c.get(t, widgets, ns, name)
			if tt.react != nil {
				verb := tt.verb
				if verb == "" {
					verb = "patch"
				}
				n := 0 // the metadata fake serves one request at a time
				c.metadata.PrependReactor(verb, widgets.Resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
					n++
					return tt.react(c, n, a)
				})
			}

			if tt.onRead != nil {
				n := 0 // the dynamic fake serves one request at a time
				c.dynamic.PrependReactor("get", widgets.Resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
					n++
					return tt.onRead(c, n, a)
				})
			}

			r := runFor(t, c.engine(t, nil, tt.rule))
			require.Empty(t, r.Errors)
			f := findingOf(t, r, name)
			assertResult(t, f, tt.wantOutcome, tt.wantReason, tt.wantDetail, tt.wantReplanned, tt.wantEvidence)
			assert.Equal(t, tt.wantBlockedBy, slices.ContainsFunc(f.BlockedBy, func(o report.ObjectSummary) bool { return o.Name == "acme" }), "blocked by %v", f.BlockedBy)

			writes := c.writes(t, widgets)
			if tt.rule.name == "delete" {
				require.NotEmpty(t, writes)
				for i, w := range writes {
					assert.Equal(t, "delete", w.verb)
					require.NotNil(t, w.preconditions, "delete %d", i)
					assert.Equal(t, ptr.To(uid), w.preconditions.UID, "delete %d", i)
				}
				assert.Equal(t, ptr.To(observed.GetResourceVersion()), writes[0].preconditions.ResourceVersion, "the resourceVersion observed")
				assert.Len(t, writes, map[bool]int{false: 1, true: 2}[tt.wantReplanned])
			} else {
				assert.Equal(t, tt.wantWrites, writes)
			}
			assert.Equal(t, tt.wantFactReads, c.reads(rules.Deployments, "operator"), "live reads of the fact")

			now := c.get(t, widgets, ns, name)
			if tt.wantGone {
				assert.Nil(t, now, "the object is gone")
				return
			}
			require.NotNil(t, now)
			assert.Equal(t, tt.wantFinalizers, now.GetFinalizers())
		})
	}
}

// withContent is rule reading the content of resources in full as well.
func withContent(rule testRule, resources ...rules.Resource) testRule {
	for _, r := range resources {
		rule.content = append(rule.content, rules.ContentRequest{Resource: r.GroupResource()})
	}
	return rule
}

// TestPreImageKeptBeforeTheWrite: when the write reaches the server, its object's pre-image is
// already kept, signed, where restore reads it; an applied write is recorded as an Event.
func TestPreImageKeptBeforeTheWrite(t *testing.T) {
	c := newFakeCluster(t, fakeObject(widgets, "shop", "w", withFinalizers(gone, keep)))
	e := c.engine(t, nil, releaseRule(operatorAbsent))
	uid := string(fakeUID(widgets, "shop", "w"))
	var keptFirst bool
	c.metadata.PrependReactor("patch", widgets.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
		keptFirst = dirHolds(e.Config.BackupDir, uid)
		return false, nil, nil
	})

	r := runFor(t, e)
	f := findingOf(t, r, "w")
	require.Equal(t, report.OutcomeApplied, f.Outcome, f.Error)
	assert.True(t, keptFirst, "the pre-image is kept before the write is sent")
	require.NotNil(t, f.Before)
	assert.NotEmpty(t, f.Before.Kept)
	assert.Equal(t, []string{gone, keep}, f.Before.Finalizers)
	assert.NotEmpty(t, f.Signature)

	events, err := c.kube.EventsV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, events.Items, 1)
	assert.Equal(t, types.UID(uid), events.Items[0].Regarding.UID)
	assert.Equal(t, "OperatorSweeperRemoveFinalizers", events.Items[0].Reason)
}

// dirHolds says whether a file under dir mentions s.
func dirHolds(dir, s string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		found = found || err == nil && strings.Contains(string(data), s)
		return nil
	})
	return found
}

// TestRunEndsBetweenBatches: the run's time is up (--timeout, SIGTERM) while its first write is on
// its way: that write finishes and is reported applied; no other is sent, each is reported as
// left to the next run, and the run as interrupted.
func TestRunEndsBetweenBatches(t *testing.T) {
	names := []string{"a", "b", "c"}
	var objects []*unstructured.Unstructured
	for _, name := range names {
		objects = append(objects, fakeObject(widgets, "shop", name, withFinalizers(gone)))
	}
	c := newFakeCluster(t, objects...)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	c.metadata.PrependReactor("patch", widgets.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
		cancel(errors.New("--timeout=1m reached"))
		return false, nil, nil
	})

	r := c.engine(t, nil, releaseRule(operatorAbsent)).Run(ctx)
	got := map[string]report.Outcome{}
	for _, f := range r.Findings {
		got[f.Object.Name] = f.Outcome
		if f.Outcome == report.OutcomeSkipped {
			assert.Equal(t, report.ReasonInterrupted, f.SkipReason, f.Object.Name)
			assert.Contains(t, f.Error, "--timeout=1m reached")
		}
	}
	assert.Equal(t, map[string]report.Outcome{"a": report.OutcomeApplied, "b": report.OutcomeSkipped, "c": report.OutcomeSkipped}, got)
	assert.Len(t, c.writes(t, widgets), 1, "no write is sent once the run is over")
	require.Len(t, r.Errors, 1)
	assert.True(t, r.Errors[0].Fatal)
	assert.Contains(t, r.Errors[0].Message, "2 were not taken")
}
