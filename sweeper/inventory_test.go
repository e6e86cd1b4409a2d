package sweeper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

func TestPatternsMatchResource(t *testing.T) {
	pods := rules.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}
	events := rules.Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "events"}}
	eventsV1 := rules.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}}
	deployments := rules.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}}
	subscriptions := rules.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "subscriptions"}}

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
