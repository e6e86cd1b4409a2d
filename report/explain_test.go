package report_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/report/reporttest"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// The objects of the explanations: a namespace, the custom resource left in it, the APIService
// whose discovery its deletion waits for, and a ConfigMap elsewhere.
var (
	explainNamespace = rules.ObjectRef{Resource: rules.Namespaces.GroupVersionResource, Kind: "Namespace", Name: "shop", UID: "ns"}
	explainWidget    = rules.ObjectRef{Resource: schema.GroupVersionResource{Group: "widgets.example.com", Version: "v1", Resource: "widgets"},
		Kind: "Widget", Namespace: "shop", Name: "w", UID: "cr"}
	explainAPIService = rules.ObjectRef{Resource: rules.APIServices.GroupVersionResource, Kind: "APIService", Name: "v1.widgets.example.com", UID: "api"}
	explainConfigMap  = rules.ObjectRef{Resource: rules.ConfigMaps.GroupVersionResource, Kind: "ConfigMap", Namespace: "dev", Name: "c", UID: "cm"}
)

const explainFinalizer = "widgets.example.com/finalizer"

// The findings rules make of them, with their evidence as the rules word it and the operator gone
// they blame as the rules name it.
var (
	stuckNamespace = rules.Finding{Rule: rules.StuckTerminatingName, Symptom: true, Severity: rules.SeverityInfo, Object: explainNamespace,
		Reason:    "terminating for 1h, waiting on its 1 remaining objects (1 terminating)",
		Evidence:  []string{"namespace condition NamespaceDeletionDiscoveryFailure: Discovery failed for some groups, 1 failing: …"},
		BlockedBy: []rules.ObjectRef{explainAPIService, explainWidget}}
	orphanedWidget = rules.Finding{Rule: rules.OrphanedFinalizersName, Severity: rules.SeverityWarning, Object: explainWidget,
		Reason: "operator gone; releasing " + explainFinalizer, Action: rules.RemoveFinalizers{Finalizers: []string{explainFinalizer}},
		Evidence:     []string{explainFinalizer + `: controller mapping "*.example.com/finalizer"`, "no Deployment matches name widget-operator in namespace widgets"},
		OperatorGone: &rules.OperatorGone{Installer: &rules.Installer{Kind: "Deployment", Namespace: "widgets", Name: "widget-operator"}, Drain: true}}
	stuckWidget = rules.Finding{Rule: rules.StuckTerminatingName, Symptom: true, Severity: rules.SeverityInfo, Object: explainWidget,
		Reason: "terminating for 1h, waiting on " + explainFinalizer, Evidence: []string{"finalizers: " + explainFinalizer}}
	deadAPIService = rules.Finding{Rule: rules.DeadAPIServicesName, Severity: rules.SeverityWarning, Object: explainAPIService,
		Reason: "unavailable: Service widgets/widgets-api is gone, and so is whoever registered it", Action: rules.Delete{},
		Evidence:     []string{"Service widgets/widgets-api: no such Service", "registered by OLM for ClusterServiceVersion widgets/widgets.v1.0.0 (label olm.owner)"},
		OperatorGone: &rules.OperatorGone{Installer: &rules.Installer{Kind: "ClusterServiceVersion", Namespace: "widgets", Name: "widgets.v1.0.0"}}}
)

// explainReport is a sweep's report of findings, each action planned.
func explainReport(findings ...rules.Finding) *report.Report {
	r := reporttest.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	r.Summary.Resources, r.Summary.Scanned = 5, 50
	for _, f := range findings {
		reporttest.Add(r, f, reporttest.Result{Outcome: report.OutcomePlanned})
	}
	return r
}

// early is what a rule with its thresholds set aside finds, as the engine hands it over.
func early(f rules.Finding, below string) report.Early {
	r := reporttest.New(time.Now())
	reporttest.Add(r, f, reporttest.Result{})
	return report.Early{Finding: r.Findings[0], Below: below}
}

func explained(r *report.Report, uid k8stypes.UID, what string, early ...report.Early) (*report.Explanation, string) {
	x := r.Explain(uid, what, early)
	var out bytes.Buffer
	x.Print(&out)
	return x, out.String()
}

func TestExplanationPrint(t *testing.T) {
	youngNamespace := stuckNamespace
	youngNamespace.Reason, youngNamespace.BlockedBy = "terminating for 5s, waiting on its 1 remaining objects (0 terminating)", []rules.ObjectRef{explainAPIService}
	const (
		youngBelow = "not yet counted as stuck: terminating for 5s of the 15m0s --min-terminating-age"
		apiBelow   = "not yet reported by a sweep: what it rests on changed less than the 10m0s --min-age ago"
	)
	tests := []struct {
		name  string
		sweep *report.Report
		early []report.Early
		uid   k8stypes.UID
		want  string
	}{
		{
			name:  "a stuck namespace, down to the finalizer of an operator gone, and the preflight that would have prevented it",
			sweep: explainReport(deadAPIService, orphanedWidget, stuckWidget, stuckNamespace, explainFinding(explainConfigMap)),
			uid:   explainNamespace.UID,
			want: `Namespace shop
  stuck-terminating (info): terminating for 1h, waiting on its 1 remaining objects (1 terminating)
    - namespace condition NamespaceDeletionDiscoveryFailure: Discovery failed for some groups, 1 failing: …
  blocked by:
    APIService v1.widgets.example.com
      dead-apiservices (warning): unavailable: Service widgets/widgets-api is gone, and so is whoever registered it
        with --dry-run=none: Delete, would be applied
        - Service widgets/widgets-api: no such Service
        - registered by OLM for ClusterServiceVersion widgets/widgets.v1.0.0 (label olm.owner)
    Widget shop/w
      orphaned-finalizers (warning): operator gone; releasing widgets.example.com/finalizer
        with --dry-run=none: RemoveFinalizers, would be applied
        - widgets.example.com/finalizer: controller mapping "*.example.com/finalizer"
        - no Deployment matches name widget-operator in namespace widgets
      stuck-terminating (info): terminating for 1h, waiting on widgets.example.com/finalizer
        - finalizers: widgets.example.com/finalizer
prevent it next time: operator-sweeper preflight csv/widgets.v1.0.0 -n widgets (before uninstalling the operator)
prevent it next time: operator-sweeper preflight deployment/widget-operator -n widgets --drain (before uninstalling the operator)
`,
		},
		{
			name:  "what an object keeps stuck, up to the top, but not what else keeps that",
			sweep: explainReport(deadAPIService, orphanedWidget, stuckWidget, stuckNamespace),
			uid:   explainAPIService.UID,
			want: `Namespace shop
  stuck-terminating (info): terminating for 1h, waiting on its 1 remaining objects (1 terminating)
    - namespace condition NamespaceDeletionDiscoveryFailure: Discovery failed for some groups, 1 failing: …
  blocked by:
    APIService v1.widgets.example.com
      dead-apiservices (warning): unavailable: Service widgets/widgets-api is gone, and so is whoever registered it
        with --dry-run=none: Delete, would be applied
        - Service widgets/widgets-api: no such Service
        - registered by OLM for ClusterServiceVersion widgets/widgets.v1.0.0 (label olm.owner)
prevent it next time: operator-sweeper preflight csv/widgets.v1.0.0 -n widgets (before uninstalling the operator)
`,
		},
		{
			name: "a young namespace, and the APIService it waits for, younger than --min-age: what the rules say without thresholds, and below which",
			sweep: func() *report.Report {
				r := explainReport()
				r.Errors = append(r.Errors, report.Error{Stage: report.StageInventory, Resource: "widgets.example.com/v1", Message: "stale GroupVersion discovery: widgets.example.com/v1"})
				return r
			}(),
			early: []report.Early{early(deadAPIService, apiBelow), early(youngNamespace, youngBelow)},
			uid:   explainNamespace.UID,
			want: `Namespace shop
  not yet counted as stuck: terminating for 5s of the 15m0s --min-terminating-age; without thresholds, the rules say:
  stuck-terminating (info): terminating for 5s, waiting on its 1 remaining objects (0 terminating)
    - namespace condition NamespaceDeletionDiscoveryFailure: Discovery failed for some groups, 1 failing: …
  blocked by:
    APIService v1.widgets.example.com
      not yet reported by a sweep: what it rests on changed less than the 10m0s --min-age ago; without thresholds, the rules say:
      dead-apiservices (warning): unavailable: Service widgets/widgets-api is gone, and so is whoever registered it
        - Service widgets/widgets-api: no such Service
        - registered by OLM for ClusterServiceVersion widgets/widgets.v1.0.0 (label olm.owner)
prevent it next time: operator-sweeper preflight csv/widgets.v1.0.0 -n widgets (before uninstalling the operator)
error (inventory): stale GroupVersion discovery: widgets.example.com/v1
`,
		},
		{
			name:  "an early finding of a rule the sweep has a finding of about the same object is left out",
			sweep: explainReport(stuckNamespace),
			early: []report.Early{early(youngNamespace, youngBelow), early(deadAPIService, apiBelow)},
			uid:   explainNamespace.UID,
			want: `Namespace shop
  stuck-terminating (info): terminating for 1h, waiting on its 1 remaining objects (1 terminating)
    - namespace condition NamespaceDeletionDiscoveryFailure: Discovery failed for some groups, 1 failing: …
  blocked by:
    Widget shop/w
      no rule has a finding about it
    APIService v1.widgets.example.com
      not yet reported by a sweep: what it rests on changed less than the 10m0s --min-age ago; without thresholds, the rules say:
      dead-apiservices (warning): unavailable: Service widgets/widgets-api is gone, and so is whoever registered it
        - Service widgets/widgets-api: no such Service
        - registered by OLM for ClusterServiceVersion widgets/widgets.v1.0.0 (label olm.owner)
prevent it next time: operator-sweeper preflight csv/widgets.v1.0.0 -n widgets (before uninstalling the operator)
`,
		},
		{
			name:  "an object blockedBy names that no finding is about: named as such, with what it keeps stuck",
			sweep: explainReport(orphanedWidget, stuckNamespace),
			uid:   explainAPIService.UID,
			want: `Namespace shop
  stuck-terminating (info): terminating for 1h, waiting on its 1 remaining objects (1 terminating)
    - namespace condition NamespaceDeletionDiscoveryFailure: Discovery failed for some groups, 1 failing: …
  blocked by:
    APIService v1.widgets.example.com
      no rule has a finding about it
`,
		},
		{
			name:  "an object no rule has anything to say about",
			sweep: explainReport(stuckNamespace),
			uid:   explainConfigMap.UID,
			want:  "ConfigMap dev/c: no rule has anything to say about it (unless --include-*/--exclude-* kept it from being walked).\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			what := "Namespace shop"
			if tt.uid == explainConfigMap.UID {
				what = "ConfigMap dev/c"
			}
			_, out := explained(tt.sweep, tt.uid, what, tt.early...)
			assert.Equal(t, tt.want, out)
		})
	}
}

// explainFinding is a finding in no chain.
func explainFinding(obj rules.ObjectRef) rules.Finding {
	return rules.Finding{Rule: rules.OrphanedFinalizersName, Severity: rules.SeverityInfo, Object: obj, Reason: "owner of x unknown; not touched"}
}

// TestExplanationReport: what -o json prints of an explanation is the sweep's findings of the
// chain, counted again, as the sweep reported them; the early ones are not the sweep's.
func TestExplanationReport(t *testing.T) {
	sweep := explainReport(orphanedWidget, stuckWidget, explainFinding(explainConfigMap))
	sweep.Summary.Incomplete = true
	young := stuckNamespace
	young.BlockedBy = []rules.ObjectRef{explainWidget}
	x, _ := explained(sweep, explainNamespace.UID, "Namespace shop", early(young, "not yet counted as stuck: terminating for 5s of the 15m0s --min-terminating-age"))

	var got []string
	for _, f := range x.Report.Findings {
		got = append(got, f.Rule+" "+f.Object.Name)
	}
	assert.Equal(t, []string{"orphaned-finalizers w", "stuck-terminating w"}, got, "the sweep's findings the chain reaches through the early one")
	assert.Equal(t, report.Summary{Resources: 5, Scanned: 50, Findings: 2, Planned: 1, Incomplete: true}, x.Report.Summary,
		"counted again; the sweep was incomplete, and so is what it says of the chain")
	assert.Len(t, sweep.Findings, 3, "the sweep's report is left as it is")

	var out bytes.Buffer
	require.NoError(t, x.Report.Print(&out, report.JSON))
	assert.Contains(t, out.String(), `"kind":"Widget"`)
	assert.NotContains(t, out.String(), `"kind":"Namespace"`, "no early finding")
}

// TestPreflightHint: a finding that blames an operator gone names the preflight that would have
// prevented it, as exactly as its rule names the operator; other findings name none.
func TestPreflightHint(t *testing.T) {
	const generic = "prevent it next time: operator-sweeper preflight TYPE/NAME -n NAMESPACE --drain (before uninstalling the operator; " +
		"TYPE: deployment, statefulset, daemonset, helm, subscription or csv; see docs/preflight.md)"
	// orphaned is orphanedWidget, its operator named by installer and its evidence.
	orphaned := func(installer *rules.Installer, evidence ...string) rules.Finding {
		f := orphanedWidget
		f.Evidence, f.OperatorGone = evidence, &rules.OperatorGone{Installer: installer, Drain: true}
		return f
	}
	// saying, f has no action and says reason instead, blaming gone.
	saying := func(f rules.Finding, reason string, gone *rules.OperatorGone) rules.Finding {
		f.Action, f.Reason, f.OperatorGone = nil, reason, gone
		return f
	}
	tests := []struct {
		name    string
		finding rules.Finding
		want    string // "" for none
	}{
		{"a controller mapping names the workload and its namespace", orphanedWidget,
			"prevent it next time: operator-sweeper preflight deployment/widget-operator -n widgets --drain (before uninstalling the operator)"},
		{"by name, in any namespace", orphaned(&rules.Installer{Kind: "StatefulSet", Name: "widget-operator"}, "no StatefulSet matches name widget-operator in any namespace"),
			"prevent it next time: operator-sweeper preflight statefulset/widget-operator -n NAMESPACE --drain (before uninstalling the operator; NAMESPACE: the StatefulSet's)"},
		{"by selector", orphaned(&rules.Installer{Kind: "Deployment", Selector: "app.kubernetes.io/name=logging-operator"},
			"x: controller mapping \"x\"", "no Deployment matches app.kubernetes.io/name=logging-operator in any namespace", "no Deployment matches image *logging-operator in any namespace"),
			"prevent it next time: operator-sweeper preflight deployment/NAME -n NAMESPACE --drain (before uninstalling the operator; " +
				"NAME: the Deployment that matches app.kubernetes.io/name=logging-operator, NAMESPACE: the Deployment's)"},
		{"by image, in one namespace", orphaned(&rules.Installer{Kind: "DaemonSet", Namespace: "agents", Image: "*/agent"}, "no DaemonSet matches image */agent in namespace agents"),
			"prevent it next time: operator-sweeper preflight daemonset/NAME -n agents --drain (before uninstalling the operator; NAME: the DaemonSet that matches image */agent)"},
		{"the Helm release of its CRD", orphaned(&rules.Installer{Kind: rules.HelmReleaseKind, Namespace: "acme", Name: "widgets"},
			"x: no controller mapping matches", "CRD widgets.example.com belongs to Helm release acme/widgets (meta.helm.sh annotations)"),
			"prevent it next time: operator-sweeper preflight helm/widgets -n acme --drain (before uninstalling the operator)"},
		{"guarded, not released: the operator is gone all the same",
			saying(orphanedWidget, "operator gone, but x guards data outside the cluster: not released; clean up what it guards, then remove it by hand", orphanedWidget.OperatorGone),
			"prevent it next time: operator-sweeper preflight deployment/widget-operator -n widgets --drain (before uninstalling the operator)"},
		{"nothing names the operator", orphaned(nil, "x: no controller mapping matches", "CRD widgets.example.com was installed by OLM (label olm.owner) and has no Helm ownership metadata"), generic},
		{"the APIService's CSV", deadAPIService,
			"prevent it next time: operator-sweeper preflight csv/widgets.v1.0.0 -n widgets (before uninstalling the operator)"},
		{"a webhook configuration whose Services and registrar are gone", rules.Finding{Rule: rules.DeadWebhooksName, Object: explainConfigMap, Action: rules.Delete{},
			Evidence: []string{"namespace widgets no longer exists: what was installed there is gone"}, OperatorGone: &rules.OperatorGone{}},
			"prevent it next time: operator-sweeper preflight TYPE/NAME -n NAMESPACE (before uninstalling the operator; " +
				"TYPE: deployment, statefulset, daemonset, helm, subscription or csv; see docs/preflight.md)"},
		{"an APIService whose registrar may be there", saying(deadAPIService, "unavailable: Service widgets/widgets-api is gone, but not whoever registered it", nil), ""},
		{"a live controller", saying(orphanedWidget, "owner still present, it will release x: Deployment widgets/widget-operator", nil), ""},
		{"a controller scaled to 0", saying(orphanedWidget, "controller scaled to 0; scale it up instead of removing x: Deployment widgets/widget-operator", nil), ""},
		{"a stuck object, by itself", stuckWidget, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, out := explained(explainReport(tt.finding), tt.finding.Object.UID, "it")
			var hints []string
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "prevent it next time:") {
					hints = append(hints, line)
				}
			}
			if tt.want == "" {
				assert.Empty(t, hints, out)
				return
			}
			assert.Equal(t, []string{tt.want}, hints, out)
		})
	}
}

// TestPreflightHintOfRules: the hint reads the evidence as the rules word it.
func TestPreflightHintOfRules(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	deleted := metav1.NewTime(now.Add(-time.Hour))
	loggings := rules.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "logging.banzaicloud.io", Version: "v1beta1", Resource: "loggings"},
		Kind: "Logging"}
	stuck := &rules.Object{Resource: &loggings, Meta: rules.Meta{Name: "s", UID: "s", ResourceVersion: "1",
		DeletionTimestamp: &deleted, Finalizers: []string{"syslogngconfig.logging.banzaicloud.io/finalizer"}}}
	view := rules.NewView(now, []rules.Resource{loggings, rules.Deployments, rules.StatefulSets, rules.DaemonSets, rules.Leases,
		rules.ClusterServiceVersions, rules.CustomResourceDefinitions}, rules.Coverage{}, []*rules.Object{stuck})
	mappings, err := rules.NewFinalizerMappings(nil)
	require.NoError(t, err)
	rule, err := rules.NewOrphanedFinalizers(rules.OrphanedFinalizersArgs{}, rules.Settings{MinTerminatingAge: 15 * time.Minute, Finalizers: mappings})
	require.NoError(t, err)
	findings := rule.Plan(context.Background(), view)
	require.Len(t, findings, 1)
	findings[0].Rule = rule.Name()

	_, out := explained(explainReport(findings[0]), "s", "Logging s")
	assert.Contains(t, out, "\nprevent it next time: operator-sweeper preflight deployment/NAME -n NAMESPACE --drain (before uninstalling the operator; "+
		"NAME: the Deployment that matches app.kubernetes.io/name=logging-operator, NAMESPACE: the Deployment's)\n")
}

// TestPreflightHintReworded: the hint reads what the rules say as data, not how they word it:
// with every reason and line of evidence of the rules' findings reworded, it names the same
// preflight.
func TestPreflightHintReworded(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	deleted := metav1.NewTime(now.Add(-time.Hour))
	loggings := rules.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "logging.banzaicloud.io", Version: "v1beta1", Resource: "loggings"},
		Kind: "Logging"}
	widgets := rules.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "acme.io", Version: "v1", Resource: "widgets"}, Kind: "Widget", Namespaced: true}
	resources := []rules.Resource{loggings, widgets, rules.Deployments, rules.StatefulSets, rules.DaemonSets, rules.Leases, rules.ClusterServiceVersions,
		rules.CustomResourceDefinitions, rules.Secrets, rules.ConfigMaps, rules.Namespaces, rules.Services, rules.EndpointSlices, rules.APIServices}
	stuck := func(r *rules.Resource, namespace, name, finalizer string) *rules.Object {
		return &rules.Object{Resource: r, Meta: rules.Meta{Namespace: namespace, Name: name, UID: k8stypes.UID(name), ResourceVersion: "1",
			DeletionTimestamp: &deleted, Finalizers: []string{finalizer}}}
	}
	helmCRD := &rules.Object{Resource: &rules.CustomResourceDefinitions, Meta: rules.Meta{Name: "widgets.acme.io", UID: "crd",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}, Annotations: map[string]string{"meta.helm.sh/release-name": "acme", "meta.helm.sh/release-namespace": "acme-system"}}}
	packageServer := &rules.Object{Resource: &rules.APIServices, Meta: rules.Meta{Name: "v1.packages.operators.coreos.com", UID: "api",
		Labels: map[string]string{"olm.owner": "packageserver", "olm.owner.namespace": "olm", "olm.owner.kind": "ClusterServiceVersion"}},
		Content: map[string]any{
			"spec": map[string]any{"group": "packages.operators.coreos.com", "version": "v1", "service": map[string]any{"namespace": "olm", "name": "packageserver-service"}},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": "False", "reason": "ServiceNotFound",
				"lastTransitionTime": now.Add(-time.Hour).Format(time.RFC3339)}}},
		}}
	olm := &rules.Object{Resource: &rules.Namespaces, Meta: rules.Meta{Name: "olm", UID: "olm"}}
	mappings := func(configured ...rules.FinalizerOwner) rules.FinalizerMappings {
		m, err := rules.NewFinalizerMappings(configured)
		require.NoError(t, err)
		return m
	}
	orphanedFinalizers := func(configured ...rules.FinalizerOwner) rules.Rule {
		rule, err := rules.NewOrphanedFinalizers(rules.OrphanedFinalizersArgs{}, rules.Settings{MinTerminatingAge: 15 * time.Minute, Finalizers: mappings(configured...)})
		require.NoError(t, err)
		return rule
	}
	deadAPIServices, err := rules.NewDeadAPIServices(rules.DeadAPIServicesArgs{Delete: true}, rules.Settings{MinAge: 10 * time.Minute, Finalizers: mappings()})
	require.NoError(t, err)

	tests := []struct {
		name    string
		rule    rules.Rule
		objects []*rules.Object
		want    string
	}{
		{"orphaned-finalizers: a controller mapping by label selector", orphanedFinalizers(),
			[]*rules.Object{stuck(&loggings, "", "s", "syslogngconfig.logging.banzaicloud.io/finalizer")},
			"prevent it next time: operator-sweeper preflight deployment/NAME -n NAMESPACE --drain (before uninstalling the operator; " +
				"NAME: the Deployment that matches app.kubernetes.io/name=logging-operator, NAMESPACE: the Deployment's)"},
		{"orphaned-finalizers: the Helm release of the CRD", orphanedFinalizers(rules.FinalizerOwner{Pattern: "cleanup.acme.io/finalizer", Consequence: rules.ConsequenceLocal}),
			[]*rules.Object{stuck(&widgets, "shop", "w", "cleanup.acme.io/finalizer"), helmCRD},
			"prevent it next time: operator-sweeper preflight helm/acme -n acme-system --drain (before uninstalling the operator)"},
		{"dead-apiservices: the ClusterServiceVersion that registered it", deadAPIServices,
			[]*rules.Object{packageServer, olm},
			"prevent it next time: operator-sweeper preflight csv/packageserver -n olm (before uninstalling the operator)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			findings := tt.rule.Plan(context.Background(), rules.NewView(now, resources, rules.Coverage{}, tt.objects))
			require.Len(t, findings, 1)
			f := findings[0]
			f.Rule = tt.rule.Name()
			reworded := f
			reworded.Reason = "in other words: " + f.Reason
			reworded.Evidence = nil
			for _, e := range f.Evidence {
				reworded.Evidence = append(reworded.Evidence, "in other words: "+strings.ToUpper(e))
			}
			for _, f := range []rules.Finding{f, reworded} {
				_, out := explained(explainReport(f), f.Object.UID, "it")
				assert.Contains(t, out, "\n"+tt.want+"\n", "as the rule words it: %q", f.Reason)
			}
		})
	}
}

// TestPreflightHintReadBack: a report read back from its JSON or YAML (merge, a Job's logs) keeps
// what its findings blame, and names the same preflights.
func TestPreflightHintReadBack(t *testing.T) {
	sweep := explainReport(deadAPIService, orphanedWidget, stuckWidget, stuckNamespace)
	_, want := explained(sweep, explainNamespace.UID, "Namespace shop")
	require.Contains(t, want, "prevent it next time:")
	for _, format := range []report.Format{report.JSON, report.YAML} {
		t.Run(string(format), func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, sweep.Print(&out, format))
			read, ok := report.Find(out.Bytes())
			require.True(t, ok)
			assert.Equal(t, sweep.Findings, read.Findings)
			_, got := explained(read, explainNamespace.UID, "Namespace shop")
			assert.Equal(t, want, got)
		})
	}
}
