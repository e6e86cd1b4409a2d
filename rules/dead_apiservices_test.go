package rules

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// apiService is an APIService for group version v1 of packages.operators.coreos.com backed by
// Service olm/packageserver-service, with Available as given, changed ago before testNow.
func apiService(available, reason string, ago time.Duration, opts ...func(*Object)) *Object {
	return object(APIServices, "", "v1.packages.operators.coreos.com", append([]func(*Object){withContent(map[string]any{
		"spec": map[string]any{"group": "packages.operators.coreos.com", "version": "v1",
			"service": map[string]any{"namespace": "olm", "name": "packageserver-service"}},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Available", "status": available, "reason": reason, "message": "service/packageserver-service in \"olm\" is not present",
			"lastTransitionTime": testNow.Add(-ago).Format(time.RFC3339),
		}}},
	})}, opts...)...)
}

// endpointSlice is an EndpointSlice of Service namespace/service with endpoints of the given
// readiness.
func endpointSlice(namespace, service string, ready ...bool) *Object {
	var endpoints []any
	for _, r := range ready {
		endpoints = append(endpoints, map[string]any{"addresses": []any{"10.0.0.1"}, "conditions": map[string]any{"ready": r}})
	}
	return object(EndpointSlices, namespace, service+"-abcde", withLabels(serviceNameLabel, service), withContent(map[string]any{"endpoints": endpoints}))
}

func TestDeadAPIServices(t *testing.T) {
	olmLabels := withLabels("olm.owner", "packageserver", "olm.owner.namespace", "olm", "olm.owner.kind", "ClusterServiceVersion")
	olmNamespace := object(Namespaces, "", "olm")
	stuck := object(Namespaces, "", "team-a", terminatingFor(time.Hour), withContent(map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "NamespaceDeletionDiscoveryFailure", "status": "True",
			"message": "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: packages.operators.coreos.com/v1: stale GroupVersion discovery: packages.operators.coreos.com/v1"},
	}}}))
	tests := []struct {
		name       string
		args       DeadAPIServicesArgs
		coverage   Coverage
		objects    []*Object
		wantReason string // "" for no finding
		wantAction bool
		wantOptIn  string
		evidence   []string
	}{
		{
			name:    "available: nothing",
			objects: []*Object{apiService("True", "Passed", time.Hour), olmNamespace},
		},
		{
			name:    "unavailable for less than --min-age: nothing yet",
			objects: []*Object{apiService("False", "ServiceNotFound", 9*time.Minute)},
		},
		{
			name:    "a local APIService: never",
			objects: []*Object{object(APIServices, "", "v1.apps", withContent(map[string]any{"spec": map[string]any{"group": "apps", "version": "v1"}}))},
		},
		{
			name:       "OLM's packageserver, its Service, CSV and OLM gone: deleted once opted in",
			args:       DeadAPIServicesArgs{Delete: true},
			objects:    []*Object{apiService("False", "ServiceNotFound", time.Hour, olmLabels), olmNamespace, stuck},
			wantReason: "unavailable: Service olm/packageserver-service is gone, and so is whoever registered it",
			wantAction: true,
			evidence: []string{
				"condition Available=False since 2026-11-23T11:00:00Z (60m ago, --min-age 10m0s), reason ServiceNotFound: service/packageserver-service in \"olm\" is not present",
				"Service olm/packageserver-service: no such Service",
				"packages.operators.coreos.com/v1 is unavailable: its discovery fails, and so does every namespace deletion",
				"blocks the deletion of namespaces team-a (condition NamespaceDeletionDiscoveryFailure)",
				"registered by OLM for ClusterServiceVersion olm/packageserver (label olm.owner)",
				"ClusterServiceVersion olm/packageserver no longer exists",
				"no Deployment matches name olm-operator in any namespace",
			},
		},
		{
			name:       "the same without the opt-in: skipped, opt-in",
			objects:    []*Object{apiService("False", "ServiceNotFound", time.Hour, olmLabels), olmNamespace},
			wantReason: "unavailable: Service olm/packageserver-service is gone, and so is whoever registered it",
			wantAction: true,
			wantOptIn:  "rules.dead-apiservices.delete",
		},
		{
			name:       "OLM still runs: it cleans up after itself",
			args:       DeadAPIServicesArgs{Delete: true},
			objects:    []*Object{apiService("False", "ServiceNotFound", time.Hour, olmLabels), olmNamespace, workload(Deployments, "olm", "olm-operator", 1)},
			wantReason: "unavailable: Service olm/packageserver-service is gone, but not whoever registered it",
			evidence:   []string{"OLM is not gone: it deletes what it registered"},
		},
		{
			name:       "the packageserver CSV exists: kept",
			args:       DeadAPIServicesArgs{Delete: true},
			objects:    []*Object{apiService("False", "ServiceNotFound", time.Hour, olmLabels), olmNamespace, object(ClusterServiceVersions, "olm", "packageserver")},
			wantReason: "unavailable: Service olm/packageserver-service is gone, but not whoever registered it",
		},
		{
			name:       "not OLM's, its namespace still there: nothing says who registered it",
			args:       DeadAPIServicesArgs{Delete: true},
			objects:    []*Object{apiService("False", "ServiceNotFound", time.Hour), olmNamespace},
			wantReason: "unavailable: Service olm/packageserver-service is gone, but not whoever registered it",
			evidence:   []string{"namespace olm exists: whoever registered it may still be there, and nothing says who"},
		},
		{
			name:       "not OLM's, its namespace gone: deleted",
			args:       DeadAPIServicesArgs{Delete: true},
			objects:    []*Object{apiService("False", "ServiceNotFound", time.Hour)},
			wantReason: "unavailable: Service olm/packageserver-service is gone, and so is whoever registered it",
			wantAction: true,
			evidence:   []string{"namespace olm no longer exists: what was installed there is gone"},
		},
		{
			name:       "the Service exists without a ready endpoint: reported and kept",
			args:       DeadAPIServicesArgs{Delete: true},
			objects:    []*Object{apiService("False", "MissingEndpoints", time.Hour), object(Services, "olm", "packageserver-service"), endpointSlice("olm", "packageserver-service", false)},
			wantReason: "unavailable: Service olm/packageserver-service has no ready endpoint; its workload may come back",
			evidence:   []string{"Service olm/packageserver-service exists; its 1 EndpointSlices have no ready endpoint"},
		},
		{
			name:       "Services not listed there: cannot tell",
			args:       DeadAPIServicesArgs{Delete: true},
			coverage:   Coverage{Unlisted: []schema.GroupResource{Services.GroupResource()}},
			objects:    []*Object{apiService("False", "ServiceNotFound", time.Hour)},
			wantReason: "unavailable (ServiceNotFound); Service olm/packageserver-service",
			evidence:   []string{"Service olm/packageserver-service was not listed: cannot tell whether it exists"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule, err := NewDeadAPIServices(tt.args, Settings{MinAge: 10 * time.Minute, Finalizers: shippedMappings(t)})
			require.NoError(t, err)
			findings := rule.Plan(context.Background(), viewWith(tt.coverage, tt.objects...))
			if tt.wantReason == "" {
				assert.Empty(t, findings)
				return
			}
			require.Len(t, findings, 1)
			f := findings[0]
			assert.Equal(t, tt.wantReason, f.Reason)
			assert.Equal(t, tt.wantAction, f.Action != nil, "action")
			assert.Equal(t, tt.wantOptIn, f.OptIn)
			if f.Action != nil {
				assert.NotEmpty(t, f.Facts, "a deletion rests on facts read again")
			}
			for _, e := range tt.evidence {
				assert.Contains(t, f.Evidence, e)
			}
		})
	}
}

func TestDeadAPIServicesFactsBreakWhenTheServiceReturns(t *testing.T) {
	rule, err := NewDeadAPIServices(DeadAPIServicesArgs{Delete: true}, Settings{MinAge: time.Minute, Finalizers: shippedMappings(t)})
	require.NoError(t, err)
	findings := rule.Plan(context.Background(), viewWith(Coverage{}, apiService("False", "ServiceNotFound", time.Hour)))
	require.Len(t, findings, 1)
	back := viewWith(Coverage{}, object(Services, "olm", "packageserver-service"))
	held := 0
	for _, fact := range findings[0].Facts {
		if ok, _ := fact.Holds(back); ok {
			held++
		}
	}
	assert.Less(t, held, len(findings[0].Facts), "the Service back breaks a fact")
}

// TestDeadAPIServicesPolicyRules: get and delete on APIServices, once opted in; nothing before.
func TestDeadAPIServicesPolicyRules(t *testing.T) {
	tests := []struct {
		name string
		args DeadAPIServicesArgs
		want []rbacv1.PolicyRule
	}{
		{name: "reporting only"},
		{name: "opted in", args: DeadAPIServicesArgs{Delete: true}, want: []rbacv1.PolicyRule{
			{APIGroups: []string{"apiregistration.k8s.io"}, Resources: []string{"apiservices"}, Verbs: []string{"get", "delete"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, policyRulesOf(t, DeadAPIServicesName, tt.args, Settings{}))
		})
	}
	assert.Equal(t, DeadAPIServicesArgs{Delete: true}, DeadAPIServices{}.OptInArgs(), "its opt-in in the cluster: delete")
}
