package rules

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	syslogFinalizer    = "syslogngconfig.logging.banzaicloud.io/finalizer"
	fluentdFinalizer   = "fluentdconfig.logging.banzaicloud.io/finalizer"
	loggingOperatorSel = "app.kubernetes.io/name=logging-operator"
)

func loggingOperator(replicas int64, opts ...func(*Object)) *Object {
	return workload(Deployments, "logging", "logging-operator", replicas, append([]func(*Object){withLabels("app.kubernetes.io/name", "logging-operator")}, opts...)...)
}

// stuckSyslog is a Logging stuck on finalizers: logging-operator puts them on Loggings only.
func stuckSyslog(finalizers ...string) *Object {
	return object(loggings, "", "logging", terminatingFor(time.Hour, finalizers...))
}

func TestOrphanedFinalizersDecisions(t *testing.T) {
	widgetCRD := "widgets.acme.io"
	helmCRD := func(opts ...func(*Object)) *Object {
		return object(CustomResourceDefinitions, "", widgetCRD, append([]func(*Object){withLabels("app.kubernetes.io/managed-by", "Helm"),
			withAnnotations("meta.helm.sh/release-name", "acme", "meta.helm.sh/release-namespace", "acme-system")}, opts...)...)
	}
	release := func(r Resource, revision int, status string) *Object {
		return object(r, "acme-system", fmt.Sprintf("sh.helm.release.v1.acme.v%d", revision),
			withLabels("owner", "helm", "name", "acme", "status", status, "version", fmt.Sprint(revision)))
	}
	stuckWidget := func(finalizers ...string) *Object {
		return object(widgets, "shop", "w", terminatingFor(time.Hour, finalizers...))
	}
	// The config file's word on what the widget operator's finalizers stand for.
	local := []FinalizerOwner{{Pattern: "acme.io/cleanup", Consequence: ConsequenceLocal}, {Pattern: "cleanup.acme.io/finalizer", Consequence: ConsequenceLocal}}
	guards := []FinalizerOwner{{Pattern: "cleanup.acme.io/finalizer", Resources: []string{"widgets.acme.io"}, Consequence: ConsequenceGuards,
		StandsFor: "the widget's bucket", Remedy: "empty and delete the bucket, then remove the finalizer"}}
	tests := []struct {
		name         string
		coverage     Coverage
		objects      []*Object
		wantSeverity Severity
		wantReason   string
		wantAction   Action
		wantEvidence []string // each must appear
		wantNone     bool
		helmSQL      bool
		// classified are config entries that say what finalizers stand for.
		classified []FinalizerOwner
	}{
		{
			name:     "not terminating: nothing",
			objects:  []*Object{object(syslogNGs, "logging", "s", func(o *Object) { o.Finalizers = []string{syslogFinalizer} })},
			wantNone: true,
		},
		{
			name:     "terminating for less than the threshold: nothing",
			objects:  []*Object{object(syslogNGs, "logging", "s", terminatingFor(14*time.Minute, syslogFinalizer))},
			wantNone: true,
		},
		{
			name: "built-in finalizers only: nothing",
			objects: []*Object{object(ConfigMaps, "shop", "c", terminatingFor(time.Hour, "kubernetes", "orphan", "foregroundDeletion",
				"kubernetes.io/pvc-protection", "customresourcecleanup.apiextensions.k8s.io", "service.kubernetes.io/load-balancer-cleanup", "batch.k8s.io/x"))},
			wantNone: true,
		},
		{
			name:         "mapped, no controller anywhere: orphaned",
			objects:      []*Object{stuckSyslog(syslogFinalizer)},
			wantSeverity: SeverityWarning,
			wantReason:   "operator gone; releasing " + syslogFinalizer,
			wantAction:   RemoveFinalizers{Finalizers: []string{syslogFinalizer}},
			wantEvidence: []string{
				syslogFinalizer + `: controller mapping "` + syslogFinalizer + ` on loggings.logging.banzaicloud.io"`,
				"no Deployment matches " + loggingOperatorSel + " in any namespace",
				"deletionTimestamp 2026-11-23T11:00:00Z: terminating for 60m (threshold 15m0s)",
			},
		},
		{
			name:         "mapped, controller running: left alone, the reason names it",
			objects:      []*Object{stuckSyslog(syslogFinalizer), loggingOperator(1)},
			wantSeverity: SeverityInfo,
			wantReason:   "owner still present, it will release " + syslogFinalizer + ": Deployment logging/logging-operator",
			wantEvidence: []string{"Deployment logging/logging-operator matches " + loggingOperatorSel + " in any namespace and runs (1 desired replicas)"},
		},
		{
			name:         "mapped, controller scaled to 0: a warning, no action",
			objects:      []*Object{stuckSyslog(syslogFinalizer), loggingOperator(0)},
			wantSeverity: SeverityWarning,
			wantReason:   "controller scaled to 0; scale it up instead of removing " + syslogFinalizer + ": Deployment logging/logging-operator",
			wantEvidence: []string{"Deployment logging/logging-operator matches " + loggingOperatorSel + " in any namespace and is scaled to 0"},
		},
		{
			name:         "mapped, controller being deleted: it may still run",
			objects:      []*Object{stuckSyslog(syslogFinalizer), loggingOperator(1, terminatingFor(time.Minute))},
			wantSeverity: SeverityInfo,
			wantReason:   "owner still present, it will release " + syslogFinalizer + ": Deployment logging/logging-operator",
		},
		{
			name:         "mapped, Deployments not listed everywhere: undecided",
			coverage:     Coverage{Namespaces: []string{"logging"}},
			objects:      []*Object{stuckSyslog(syslogFinalizer)},
			wantSeverity: SeverityInfo,
			wantReason:   "owner of " + syslogFinalizer + " unknown; not touched",
			wantEvidence: []string{"Deployments matching " + loggingOperatorSel + " in any namespace were not all listed (filters or errors): cannot tell whether the controller runs"},
		},
		{
			name:         "mapped, Deployment list failed: undecided",
			coverage:     Coverage{Failed: []schema.GroupResource{Deployments.GroupResource()}},
			objects:      []*Object{stuckSyslog(syslogFinalizer)},
			wantSeverity: SeverityInfo,
			wantReason:   "owner of " + syslogFinalizer + " unknown; not touched",
		},
		{
			name:         "orphaned next to built-in and unknown finalizers: only the orphaned one goes",
			objects:      []*Object{stuckSyslog("kubernetes.io/pvc-protection", syslogFinalizer, "example.com/other")},
			wantSeverity: SeverityWarning,
			wantReason:   "operator gone; releasing " + syslogFinalizer + " (keeping 1 other finalizers)",
			wantAction:   RemoveFinalizers{Finalizers: []string{syslogFinalizer}},
			wantEvidence: []string{"example.com/other: no controller mapping matches"},
		},
		{
			name:         "not mapped, not a custom resource: undecided",
			objects:      []*Object{object(ConfigMaps, "shop", "c", terminatingFor(time.Hour, "example.com/keep"))},
			wantSeverity: SeverityInfo,
			wantReason:   "owner of example.com/keep unknown; not touched",
			wantEvidence: []string{"example.com/keep: no controller mapping matches", "configmaps is not a custom resource: no CRD to ask"},
		},
		{
			name:         "CRD owned by a CSV: alive",
			objects:      []*Object{stuckWidget("acme.io/cleanup"), object(CustomResourceDefinitions, "", widgetCRD), csv("operators", "acme.v1", []string{widgetCRD})},
			wantSeverity: SeverityInfo,
			wantReason:   "owner still present, it will release acme.io/cleanup: ClusterServiceVersion operators/acme.v1",
			wantEvidence: []string{"CRD widgets.acme.io is owned by ClusterServiceVersion operators/acme.v1 (spec.customresourcedefinitions.owned)"},
		},
		{
			name:         "CRD installed by OLM, no CSV owns it: orphaned",
			classified:   local,
			objects:      []*Object{stuckWidget("acme.io/cleanup"), object(CustomResourceDefinitions, "", widgetCRD, withLabels("operators.coreos.com/acme.operators", ""))},
			wantSeverity: SeverityWarning,
			wantAction:   RemoveFinalizers{Finalizers: []string{"acme.io/cleanup"}},
			wantEvidence: []string{"CRD widgets.acme.io has no owning ClusterServiceVersion", "CRD widgets.acme.io was installed by OLM (label operators.coreos.com/acme.operators) and has no Helm ownership metadata"},
		},
		{
			name:       "a copied CSV does not own the CRD",
			classified: local,
			objects: []*Object{stuckWidget("acme.io/cleanup"), object(CustomResourceDefinitions, "", widgetCRD, withLabels("olm.managed", "true")),
				csv("shop", "acme.v1", []string{widgetCRD}, withLabels("olm.copiedFrom", "operators"))},
			wantSeverity: SeverityWarning,
			wantAction:   RemoveFinalizers{Finalizers: []string{"acme.io/cleanup"}},
		},
		{
			name:         "CRD installed by OLM, CSVs not listed: undecided",
			coverage:     Coverage{Unlisted: []schema.GroupResource{ClusterServiceVersions.GroupResource()}},
			objects:      []*Object{stuckWidget("acme.io/cleanup"), object(CustomResourceDefinitions, "", widgetCRD, withLabels("operators.coreos.com/acme.operators", ""))},
			wantSeverity: SeverityInfo,
			wantEvidence: []string{"ClusterServiceVersions were not all listed: cannot tell whether one owns CRD widgets.acme.io"},
		},
		{
			name:         "CRD of a Helm release that is installed: alive",
			objects:      []*Object{stuckWidget("cleanup.acme.io/finalizer"), helmCRD(), release(Secrets, 3, "deployed")},
			wantSeverity: SeverityInfo,
			wantReason:   "owner still present, it will release cleanup.acme.io/finalizer: Helm release acme-system/acme",
			wantEvidence: []string{"Helm release acme-system/acme is installed: Secret sh.helm.release.v1.acme.v3 has status deployed"},
		},
		{
			name:         "CRD of a Helm release kept in ConfigMaps: alive",
			objects:      []*Object{stuckWidget("cleanup.acme.io/finalizer"), helmCRD(), release(ConfigMaps, 1, "superseded"), release(ConfigMaps, 2, "failed")},
			wantSeverity: SeverityInfo,
			wantEvidence: []string{"Helm release acme-system/acme is installed: ConfigMap sh.helm.release.v1.acme.v2 has status failed"},
		},
		{
			name: "a CRD moved from OLM to Helm is judged by Helm",
			objects: []*Object{stuckWidget("cleanup.acme.io/finalizer"), helmCRD(withLabels("operators.coreos.com/acme.operators", "")),
				release(Secrets, 1, "deployed")},
			wantSeverity: SeverityInfo,
			wantReason:   "owner still present, it will release cleanup.acme.io/finalizer: Helm release acme-system/acme",
		},
		{
			name:         "Helm installed, though CSVs were not listed: alive",
			coverage:     Coverage{Unlisted: []schema.GroupResource{ClusterServiceVersions.GroupResource()}},
			objects:      []*Object{stuckWidget("cleanup.acme.io/finalizer"), helmCRD(), release(Secrets, 1, "deployed")},
			wantSeverity: SeverityInfo,
			wantReason:   "owner still present, it will release cleanup.acme.io/finalizer: Helm release acme-system/acme",
		},
		{
			name:         "CRD of a Helm release that is uninstalled: orphaned",
			classified:   local,
			objects:      []*Object{stuckWidget("cleanup.acme.io/finalizer"), helmCRD(), object(Secrets, "acme-system", "sh.helm.release.v1.other.v1", withLabels("owner", "helm", "name", "other", "status", "deployed"))},
			wantSeverity: SeverityWarning,
			wantAction:   RemoveFinalizers{Finalizers: []string{"cleanup.acme.io/finalizer"}},
			wantEvidence: []string{"Helm release acme-system/acme is uninstalled: no Secret or ConfigMap labelled owner=helm, name=acme in acme-system"},
		},
		{
			name:         "uninstalled with --keep-history: orphaned",
			classified:   local,
			objects:      []*Object{stuckWidget("cleanup.acme.io/finalizer"), helmCRD(), release(Secrets, 1, "superseded"), release(Secrets, 2, "uninstalled")},
			wantSeverity: SeverityWarning,
			wantAction:   RemoveFinalizers{Finalizers: []string{"cleanup.acme.io/finalizer"}},
			wantEvidence: []string{"Helm release acme-system/acme is uninstalled: its latest revision, Secret sh.helm.release.v1.acme.v2, has status uninstalled (history kept)"},
		},
		{
			name:         "CRD of a Helm release that is uninstalled, the finalizer unclassified: reported with the entry that would classify it",
			objects:      []*Object{stuckWidget("cleanup.acme.io/finalizer"), helmCRD()},
			wantSeverity: SeverityWarning,
			wantReason: "operator gone, but what cleanup.acme.io/finalizer stands for is unknown: not released; if it cleans up only inside the cluster, say so in the config file: " +
				`finalizers: [{pattern: "cleanup.acme.io/finalizer", resources: ["widgets.acme.io"], consequence: local}]`,
			wantEvidence: []string{
				"Helm release acme-system/acme is uninstalled: no Secret or ConfigMap labelled owner=helm, name=acme in acme-system",
				"cleanup.acme.io/finalizer: neither the catalog nor the config file says what it stands for: its consequence is unknown, so it is not released",
			},
		},
		{
			name:         "CRD of a Helm release that is uninstalled, the finalizer guards: never released",
			classified:   guards,
			objects:      []*Object{stuckWidget("cleanup.acme.io/finalizer"), helmCRD()},
			wantSeverity: SeverityWarning,
			wantReason:   "operator gone, but not released: cleanup.acme.io/finalizer guards the widget's bucket: empty and delete the bucket, then remove the finalizer",
			wantEvidence: []string{"cleanup.acme.io/finalizer guards the widget's bucket (config file): never released"},
		},
		{
			name:         "being uninstalled: undecided",
			objects:      []*Object{stuckWidget("cleanup.acme.io/finalizer"), helmCRD(), release(Secrets, 2, "uninstalling")},
			wantSeverity: SeverityInfo,
			wantEvidence: []string{"Helm release acme-system/acme is being uninstalled (Secret sh.helm.release.v1.acme.v2): wait for it to finish"},
		},
		{
			name:         "no record, but releases may be kept in SQL: undecided",
			helmSQL:      true,
			objects:      []*Object{stuckWidget("cleanup.acme.io/finalizer"), helmCRD()},
			wantSeverity: SeverityInfo,
			wantEvidence: []string{"no record of Helm release acme-system/acme in Secrets or ConfigMaps, but releases may be kept in SQL (rules.orphaned-finalizers.helm-sql-storage), which the sweeper cannot read"},
		},
		{
			name:         "CRD evidence under a namespace filter: CSVs elsewhere may own it",
			coverage:     Coverage{Namespaces: []string{"shop"}},
			objects:      []*Object{stuckWidget("cleanup.acme.io/finalizer"), helmCRD()},
			wantSeverity: SeverityInfo,
			wantEvidence: []string{"ClusterServiceVersions were not all listed: cannot tell whether one owns CRD widgets.acme.io"},
		},
		{
			name:         "CRD of a Helm release, Secrets not listed: undecided",
			coverage:     Coverage{Unlisted: []schema.GroupResource{Secrets.GroupResource()}},
			objects:      []*Object{stuckWidget("cleanup.acme.io/finalizer"), helmCRD()},
			wantSeverity: SeverityInfo,
			wantEvidence: []string{"secrets in namespace acme-system were not listed: cannot look for Helm release acme-system/acme"},
		},
		{
			name:         "CRD of a Helm release, ConfigMaps not listed: undecided",
			coverage:     Coverage{Failed: []schema.GroupResource{ConfigMaps.GroupResource()}},
			objects:      []*Object{stuckWidget("cleanup.acme.io/finalizer"), helmCRD()},
			wantSeverity: SeverityInfo,
			wantEvidence: []string{"configmaps in namespace acme-system were not listed: cannot look for Helm release acme-system/acme"},
		},
		{
			name:         "a finalizer outside the CRD's domain is never decided by the CRD",
			objects:      []*Object{stuckWidget("backup.example.com/protect"), helmCRD()},
			wantSeverity: SeverityInfo,
			wantEvidence: []string{"backup.example.com/protect is not in the API domain of CRD widgets.acme.io: it may belong to another controller"},
		},
		{
			name:         "a CRD without OLM or Helm metadata: undecided",
			objects:      []*Object{stuckWidget("acme.io/cleanup"), object(CustomResourceDefinitions, "", widgetCRD)},
			wantSeverity: SeverityInfo,
			wantEvidence: []string{"CRD widgets.acme.io has no OLM labels and no Helm ownership metadata"},
		},
		{
			name: "a configured mapping wins over CRD evidence",
			objects: []*Object{stuckSyslog(syslogFinalizer), loggingOperator(1),
				object(CustomResourceDefinitions, "", "syslogngconfigs.logging.banzaicloud.io", withLabels("operators.coreos.com/x.y", ""))},
			wantSeverity: SeverityInfo,
			wantReason:   "owner still present, it will release " + syslogFinalizer + ": Deployment logging/logging-operator",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule := OrphanedFinalizers{args: OrphanedFinalizersArgs{HelmSQLStorage: tt.helmSQL}, minAge: 15 * time.Minute, mappings: shippedMappings(t, tt.classified...)}
			findings := rule.Plan(context.Background(), viewWith(tt.coverage, tt.objects...))
			if tt.wantNone {
				assert.Empty(t, findings)
				return
			}
			require.Len(t, findings, 1)
			f := findings[0]
			assert.Equal(t, tt.wantSeverity, f.Severity)
			if tt.wantReason != "" {
				assert.Equal(t, tt.wantReason, f.Reason)
			}
			assert.Equal(t, tt.wantAction, f.Action)
			assert.Equal(t, f.Action != nil, len(f.Facts) > 0, "an action rests on facts, read again before it")
			for _, e := range tt.wantEvidence {
				assert.Contains(t, f.Evidence, e)
			}
		})
	}
}

func TestOrphanedFinalizersControllerKinds(t *testing.T) {
	daemonSet := func(desired int64) *Object {
		return object(DaemonSets, "acme", "agent", withContent(map[string]any{"status": map[string]any{"desiredNumberScheduled": desired}}))
	}
	owners := []FinalizerOwner{
		{Pattern: "sts.acme.io/*", Controllers: []Controller{{Kind: "StatefulSet", Namespace: "acme", Name: "acme"}}, Consequence: ConsequenceLocal},
		{Pattern: "ds.acme.io/*", Controllers: []Controller{{Kind: "DaemonSet", Selector: "app=agent"}}, Consequence: ConsequenceLocal},
	}
	tests := []struct {
		name    string
		objects []*Object
		want    Severity
		action  bool
	}{
		{"StatefulSet running", []*Object{workload(StatefulSets, "acme", "acme", 2)}, SeverityInfo, false},
		{"StatefulSet in another namespace does not count", []*Object{workload(StatefulSets, "other", "acme", 2)}, SeverityWarning, true},
		{"DaemonSet scheduled", []*Object{daemonSet(3)}, SeverityInfo, false},
		{"DaemonSet scheduled nowhere", []*Object{daemonSet(0)}, SeverityWarning, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.objects {
				withLabels("app", "agent")(tt.objects[i])
			}
			stuck := object(ConfigMaps, "acme", "c", terminatingFor(time.Hour, "sts.acme.io/x", "ds.acme.io/y"))
			if *tt.objects[0].Resource == DaemonSets {
				stuck.Finalizers = []string{"ds.acme.io/y"}
			} else {
				stuck.Finalizers = []string{"sts.acme.io/x"}
			}
			findings := OrphanedFinalizers{mappings: shippedMappings(t, owners...)}.Plan(context.Background(), viewWith(Coverage{}, append(tt.objects, stuck)...))
			require.Len(t, findings, 1)
			assert.Equal(t, tt.want, findings[0].Severity)
			assert.Equal(t, tt.action, findings[0].Action != nil, findings[0].Reason)
		})
	}
}

// TestCSVCleanup covers F1: OLM scaled to 0 (a warning), and OLM uninstalled (the finalizer goes,
// after the RBAC it stands for).
func TestCSVCleanup(t *testing.T) {
	stuckCSV := csv("operators", "etcd.v0.9.4", nil, terminatingFor(time.Hour, csvCleanupFinalizer))
	rbacLabels := withLabels("olm.owner", "etcd.v0.9.4", "olm.owner.namespace", "operators", "olm.owner.kind", "ClusterServiceVersion")
	role := object(ClusterRoles, "", "etcd-role", rbacLabels)
	binding := object(ClusterRoleBindings, "", "etcd-binding", rbacLabels)
	webhook := object(MutatingWebhookConfigurations, "", "etcd-webhook", rbacLabels)
	otherRole := object(ClusterRoles, "", "other", withLabels("olm.owner", "other.v1", "olm.owner.namespace", "operators", "olm.owner.kind", "ClusterServiceVersion"))
	rule := OrphanedFinalizers{minAge: 15 * time.Minute, mappings: shippedMappings(t)}

	t.Run("OLM scaled to 0", func(t *testing.T) {
		findings := rule.Plan(context.Background(), viewWith(Coverage{}, stuckCSV, role, binding,
			workload(Deployments, "olm", "olm-operator", 0), workload(Deployments, "olm", "catalog-operator", 1)))
		require.Len(t, findings, 1)
		assert.Equal(t, SeverityWarning, findings[0].Severity)
		assert.Equal(t, "controller scaled to 0; scale it up instead of removing operators.coreos.com/csv-cleanup: Deployment olm/olm-operator", findings[0].Reason)
		assert.Nil(t, findings[0].Action, "catalog-operator running does not make csv-cleanup orphaned, nor alive")
	})
	t.Run("OLM uninstalled", func(t *testing.T) {
		findings := rule.Plan(context.Background(), viewWith(Coverage{}, stuckCSV, role, binding, webhook, otherRole))
		require.Len(t, findings, 1)
		f := findings[0]
		assert.Equal(t, RemoveFinalizers{Finalizers: []string{csvCleanupFinalizer}}, f.Action)
		assert.Equal(t, []ObjectRef{binding.Ref(), role.Ref(), webhook.Ref()}, f.DependsOn)
		assert.Contains(t, f.Evidence, "no Deployment matches name olm-operator in any namespace")
		assert.Contains(t, f.Evidence, "released only after what OLM would have deleted is deleted (rule olm-rbac): ClusterRoleBinding etcd-binding, ClusterRole etcd-role, MutatingWebhookConfiguration etcd-webhook")
	})
	t.Run("OLM uninstalled, RBAC already being deleted", func(t *testing.T) {
		leaving := object(ClusterRoles, "", "etcd-leaving", rbacLabels, terminatingFor(time.Minute, "x.example.com/y"))
		findings := rule.Plan(context.Background(), viewWith(Coverage{}, stuckCSV, role, leaving))
		var csvFinding Finding
		for _, f := range findings {
			if f.Object.Kind == "ClusterServiceVersion" {
				csvFinding = f
			}
		}
		assert.Equal(t, []ObjectRef{role.Ref()}, csvFinding.DependsOn, "olm-rbac never acts on what is being deleted, so nothing waits for it")
	})
	t.Run("OLM uninstalled, no RBAC left", func(t *testing.T) {
		findings := rule.Plan(context.Background(), viewWith(Coverage{}, stuckCSV, otherRole))
		require.Len(t, findings, 1)
		assert.Equal(t, RemoveFinalizers{Finalizers: []string{csvCleanupFinalizer}}, findings[0].Action)
		assert.Empty(t, findings[0].DependsOn)
	})
	t.Run("OLM uninstalled, webhook configurations not listed", func(t *testing.T) {
		findings := rule.Plan(context.Background(), viewWith(Coverage{Unlisted: []schema.GroupResource{MutatingWebhookConfigurations.GroupResource()}}, stuckCSV))
		require.Len(t, findings, 1)
		assert.Nil(t, findings[0].Action)
		assert.Equal(t, SeverityInfo, findings[0].Severity)
	})
}

func TestBuiltIn(t *testing.T) {
	for _, f := range []string{"kubernetes", "orphan", "foregroundDeletion", "kubernetes.io/pv-protection", "kubernetes.io/pvc-protection",
		"customresourcecleanup.apiextensions.k8s.io", "batch.kubernetes.io/job-tracking", "k8s.io/x"} {
		assert.True(t, BuiltIn(f), f)
	}
	for _, f := range []string{syslogFinalizer, "operators.coreos.com/csv-cleanup", "example.com/k8s.io", "notkubernetes.io/x", "finalizer",
		"external-attacher/csi-hostpath"} {
		assert.False(t, BuiltIn(f), f)
	}
}

func TestSameDomain(t *testing.T) {
	assert.True(t, sameDomain("logging.banzaicloud.io", "logging.banzaicloud.io"))
	assert.True(t, sameDomain("syslogngconfig.logging.banzaicloud.io", "logging.banzaicloud.io"))
	assert.True(t, sameDomain("acme.io", "cache.acme.io"))
	assert.False(t, sameDomain("backup.example.com", "acme.io"))
	assert.False(t, sameDomain("evilacme.io", "acme.io"))
}

// TestOrphanedFinalizersPolicyRules: what orphaned-finalizers may release, it may get and patch:
// every resource of every catalog entry whose consequence lets it go; and it may patch nothing
// else, nor use another verb.
func TestOrphanedFinalizersPolicyRules(t *testing.T) {
	mappings, err := NewFinalizerMappings(nil)
	require.NoError(t, err)
	grants := map[string]bool{}
	for _, p := range policyRulesOf(t, OrphanedFinalizersName, nil, Settings{Finalizers: mappings}) {
		for _, group := range p.APIGroups {
			for _, resource := range p.Resources {
				for _, verb := range p.Verbs {
					grants[verb+" "+group+"/"+resource] = true
				}
			}
		}
	}
	operators, err := Catalog()
	require.NoError(t, err)
	releasable := map[string]bool{}
	for _, op := range operators {
		for _, owner := range op.Finalizers {
			if !owner.Consequence.Releasable() {
				continue
			}
			for _, glob := range owner.Resources {
				resource, group, _ := strings.Cut(glob, ".")
				releasable[group+"/"+resource] = true
				assert.True(t, grants["patch "+group+"/"+resource] || grants["patch "+group+"/*"], "%s (%s, %s) may be released: patch is granted", glob, op.Name, owner.Pattern)
				assert.True(t, grants["get "+group+"/"+resource] || grants["get "+group+"/*"], "%s: get, to re-read after a lost race", glob)
			}
		}
	}
	for grant := range grants {
		verb, resource, _ := strings.Cut(grant, " ")
		assert.Contains(t, []string{"get", "patch"}, verb, grant)
		assert.True(t, releasable[resource], "%s: only where a finalizer may be released", grant)
	}
}
