package sweeper

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

func TestPatternsMatchResource(t *testing.T) {
	pods, events, deployments, subscriptions := rules.Pods, rules.Events, rules.Deployments, rules.Subscriptions
	eventsV1 := rules.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}}

	tests := []struct {
		pattern string
		matches []rules.Resource
		misses  []rules.Resource
	}{
		{"pods", []rules.Resource{pods}, []rules.Resource{events, deployments}},
		{"events", []rules.Resource{events, eventsV1}, []rules.Resource{pods}},
		{"events.events.k8s.io", []rules.Resource{eventsV1}, []rules.Resource{events}},
		{"deployments.apps", []rules.Resource{deployments}, []rules.Resource{pods}},
		{"*.operators.coreos.com", []rules.Resource{subscriptions}, []rules.Resource{pods, deployments}},
		{"*", []rules.Resource{pods, events, eventsV1, deployments, subscriptions}, nil},
		{"deploy*", []rules.Resource{deployments}, []rules.Resource{pods}},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			p := patterns{tt.pattern}
			for _, r := range tt.matches {
				assert.True(t, p.matchResource(r), "%s should match %s", tt.pattern, r)
			}
			for _, r := range tt.misses {
				assert.False(t, p.matchResource(r), "%s should not match %s", tt.pattern, r)
			}
		})
	}
}

func TestNamespaceFilter(t *testing.T) {
	tests := []struct {
		name             string
		include, exclude []string
		allowed, denied  []string
	}{
		{"no filter", nil, nil, []string{"a", "kube-system"}, nil},
		{"include", []string{"team-*"}, nil, []string{"team-a"}, []string{"kube-system"}},
		{"exclude", nil, []string{"kube-*"}, []string{"team-a"}, []string{"kube-system", "kube-public"}},
		{"exclude wins", []string{"team-*"}, []string{"team-b"}, []string{"team-a"}, []string{"team-b", "other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := namespaceFilter{include: tt.include, exclude: tt.exclude}
			assert.Equal(t, len(tt.include)+len(tt.exclude) > 0, f.active())
			for _, ns := range tt.allowed {
				assert.True(t, f.allows(ns), ns)
			}
			for _, ns := range tt.denied {
				assert.False(t, f.allows(ns), ns)
			}
		})
	}
}

// preferredResources is discovery as a server with these resources answers it; the rest of
// the interface is not used by inventory.
type preferredResources struct {
	discovery.DiscoveryInterfaceWithContext
	lists []*metav1.APIResourceList
	err   error
}

func (p preferredResources) ServerPreferredResourcesWithContext(context.Context) ([]*metav1.APIResourceList, error) {
	return p.lists, p.err
}

func TestInventory(t *testing.T) {
	list := func(gv string, resources ...metav1.APIResource) *metav1.APIResourceList {
		return &metav1.APIResourceList{GroupVersion: gv, APIResources: resources}
	}
	listable := func(name, kind string, namespaced bool) metav1.APIResource {
		return metav1.APIResource{Name: name, Kind: kind, Namespaced: namespaced, Verbs: []string{"get", "list", "watch"}}
	}
	core := list("v1", listable("pods", "Pod", true), listable("pods/log", "Pod", true), listable("namespaces", "Namespace", false),
		metav1.APIResource{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: []string{"create"}})
	apps := list("apps/v1", listable("deployments", "Deployment", true))
	metricsDown := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
		{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("the server is currently unable to handle the request"),
	}}

	tests := []struct {
		name          string
		discovery     preferredResources
		include       []string
		exclude       []string
		wantResources []string
		wantUnlisted  []schema.GroupResource
		wantGroups    []string
		wantProblems  []report.Error
		wantErr       string
	}{
		{
			name:          "every listable resource, sorted; no subresources, nothing without list",
			discovery:     preferredResources{lists: []*metav1.APIResourceList{core, apps}},
			wantResources: []string{"deployments.apps", "namespaces", "pods"},
		},
		{
			name:          "filters",
			discovery:     preferredResources{lists: []*metav1.APIResourceList{core, apps}},
			include:       []string{"pods", "*.apps"},
			exclude:       []string{"deployments.apps"},
			wantResources: []string{"pods"},
			wantUnlisted:  []schema.GroupResource{{Resource: "namespaces"}, {Group: "apps", Resource: "deployments"}},
		},
		{
			name:          "a group that failed is reported, the rest walked",
			discovery:     preferredResources{lists: []*metav1.APIResourceList{apps}, err: metricsDown},
			wantResources: []string{"deployments.apps"},
			wantGroups:    []string{"metrics.k8s.io"},
			wantProblems:  []report.Error{{Stage: report.StageInventory, Resource: "metrics.k8s.io/v1beta1", Message: "the server is currently unable to handle the request"}},
		},
		{
			name:         "every group failed",
			discovery:    preferredResources{err: metricsDown},
			wantGroups:   []string{"metrics.k8s.io"},
			wantProblems: []report.Error{{Stage: report.StageInventory, Resource: "metrics.k8s.io/v1beta1", Message: "the server is currently unable to handle the request"}},
			wantErr:      "discover the server's API resources: every API group failed",
		},
		{
			name:      "discovery failed",
			discovery: preferredResources{err: errors.New("connection refused")},
			wantErr:   "discover the server's API resources: connection refused",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{IncludeResources: tt.include, ExcludeResources: tt.exclude}
			e := &Engine{Config: cfg, Clients: &Clients{Discovery: tt.discovery}}
			inv, err := e.inventory(context.Background())
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			var names []string
			for _, r := range inv.resources {
				names = append(names, r.String())
			}
			assert.Equal(t, tt.wantResources, names)
			assert.Equal(t, tt.wantUnlisted, inv.unlisted)
			assert.Equal(t, tt.wantGroups, inv.undiscovered)
			assert.Equal(t, tt.wantProblems, inv.problems)
		})
	}
}
