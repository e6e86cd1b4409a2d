package rules

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestOLMRBAC(t *testing.T) {
	labelled := withLabels("olm.owner", "etcd.v0.9.4", "olm.owner.namespace", "operators", "olm.owner.kind", "ClusterServiceVersion")
	role := object(ClusterRoles, "", "etcd-role", labelled)
	binding := object(ClusterRoleBindings, "", "etcd-binding", labelled)
	nsRole := object(Roles, "operators", "etcd-role", labelled)
	nsBinding := object(RoleBindings, "operators", "etcd-binding", labelled)
	webhook := object(ValidatingWebhookConfigurations, "", "etcd-webhook", labelled)
	rbac := []*Object{role, binding, nsRole, nsBinding, webhook}
	liveCSV := csv("operators", "etcd.v0.9.4", nil)
	terminatingCSV := csv("operators", "etcd.v0.9.4", nil, terminatingFor(time.Hour, csvCleanupFinalizer))

	tests := []struct {
		name       string
		coverage   Coverage
		objects    []*Object
		wantDelete []*Object
		wantReason string
	}{
		{name: "CSV alive: its RBAC", objects: append([]*Object{liveCSV}, rbac...)},
		{
			name:       "CSV gone: every labelled RBAC object",
			objects:    rbac,
			wantDelete: rbac,
			wantReason: "ClusterServiceVersion operators/etcd.v0.9.4 no longer exists; its KIND is left behind",
		},
		{name: "CSV gone, but CSVs not listed there", coverage: Coverage{Namespaces: []string{"other"}}, objects: rbac},
		{name: "CSV terminating, OLM running", objects: append([]*Object{terminatingCSV, workload(Deployments, "olm", "olm-operator", 1)}, rbac...)},
		{name: "CSV terminating, OLM scaled to 0", objects: append([]*Object{terminatingCSV, workload(Deployments, "olm", "olm-operator", 0)}, rbac...)},
		{name: "CSV terminating, Deployments not listed", coverage: Coverage{Failed: []schema.GroupResource{Deployments.GroupResource()}}, objects: append([]*Object{terminatingCSV}, rbac...)},
		{
			name:       "CSV terminating, OLM gone",
			objects:    append([]*Object{terminatingCSV, workload(Deployments, "olm", "catalog-operator", 1)}, rbac...),
			wantDelete: rbac,
			wantReason: "ClusterServiceVersion operators/etcd.v0.9.4 is terminating and OLM is gone; its KIND is left behind",
		},
		{name: "RBAC already terminating", objects: []*Object{object(ClusterRoles, "", "r", labelled, terminatingFor(time.Minute))}},
		{name: "not labelled as a CSV's", objects: []*Object{object(ClusterRoles, "", "r", withLabels("olm.owner", "x", "olm.owner.namespace", "y", "olm.owner.kind", "OperatorGroup"))}},
		{name: "label without a namespace", objects: []*Object{object(ClusterRoles, "", "r", withLabels("olm.owner", "x", "olm.owner.kind", "ClusterServiceVersion"))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, optIn := range []bool{false, true} {
				findings := OLMRBAC{args: OLMRBACArgs{Delete: optIn}, mappings: shippedMappings(t)}.Plan(context.Background(), viewWith(tt.coverage, tt.objects...))
				var deleted []ObjectRef
				for _, f := range findings {
					deleted = append(deleted, f.Object)
					assert.Equal(t, SeverityWarning, f.Severity)
					assert.Equal(t, Delete{}, f.Action)
					assert.Equal(t, strings.ReplaceAll(tt.wantReason, "KIND", f.Object.Kind), f.Reason)
					assert.Contains(t, f.Evidence, "labelled olm.owner=etcd.v0.9.4, olm.owner.namespace=operators, olm.owner.kind=ClusterServiceVersion")
					if optIn {
						assert.Empty(t, f.OptIn)
					} else {
						assert.Equal(t, "rules.olm-rbac.delete", f.OptIn, "deleting is opt-in")
					}
				}
				var want []ObjectRef
				for _, o := range tt.wantDelete {
					want = append(want, o.Ref())
				}
				require.ElementsMatch(t, want, deleted)
			}
		})
	}
}

// TestOLMRBACPolicyRules: get and delete on what OLM makes for a CSV, once opted in; nothing
// before.
func TestOLMRBACPolicyRules(t *testing.T) {
	tests := []struct {
		name string
		args OLMRBACArgs
		want []rbacv1.PolicyRule
	}{
		{name: "reporting only"},
		{name: "opted in", args: OLMRBACArgs{Delete: true}, want: []rbacv1.PolicyRule{
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterrolebindings", "clusterroles", "rolebindings", "roles"}, Verbs: []string{"get", "delete"}},
			{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"}, Verbs: []string{"get", "delete"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, policyRulesOf(t, OLMRBACName, tt.args, Settings{}))
		})
	}
}
