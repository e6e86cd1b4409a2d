package rules

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestStuckTerminating(t *testing.T) {
	const minAge = 15 * time.Minute
	tests := []struct {
		name         string
		coverage     Coverage
		objects      []*Object
		wantNames    []string
		wantReason   string
		wantEvidence []string
		// wantBlockedBy are the names of the objects the only finding names as blocking it.
		wantBlockedBy []string
	}{
		{
			name:    "an object that is not being deleted is not reported",
			objects: []*Object{object(ConfigMaps, "shop", "settings", func(o *Object) { o.Finalizers = []string{"shop.example.com/archive"} })},
		},
		{
			name:    "an object younger than the threshold is not reported",
			objects: []*Object{object(ConfigMaps, "shop", "settings", terminatingFor(minAge-time.Second, "shop.example.com/archive"))},
		},
		{
			name:       "an object exactly at the threshold is reported",
			objects:    []*Object{object(ConfigMaps, "shop", "settings", terminatingFor(minAge, "shop.example.com/archive"))},
			wantNames:  []string{"settings"},
			wantReason: "terminating for 15m, waiting on shop.example.com/archive",
			wantEvidence: []string{
				"deletionTimestamp 2026-11-23T11:45:00Z: terminating for 15m (threshold 15m0s)",
				"finalizers: shop.example.com/archive",
			},
		},
		{
			name:       "every finalizer is named",
			objects:    []*Object{object(loggings, "", "all-to-file", terminatingFor(3*time.Hour, "a.example.com/x", "b.example.com/y"))},
			wantNames:  []string{"all-to-file"},
			wantReason: "terminating for 3h, waiting on a.example.com/x, b.example.com/y",
			wantEvidence: []string{
				"deletionTimestamp 2026-11-23T09:00:00Z: terminating for 3h (threshold 15m0s)",
				"finalizers: a.example.com/x, b.example.com/y",
			},
		},
		{
			name: "a namespace is reported with what the namespace controller says keeps it",
			objects: []*Object{
				object(Namespaces, "", "logging", terminatingFor(time.Hour), withContent(map[string]any{"status": map[string]any{"conditions": []any{
					map[string]any{"type": "NamespaceDeletionDiscoveryFailure", "status": "False", "message": "All resources successfully discovered"},
					map[string]any{"type": "NamespaceContentRemaining", "status": "True", "message": "Some resources are remaining: loggings.logging.banzaicloud.io has 1 resource instances"},
					map[string]any{"type": "NamespaceFinalizersRemaining", "status": "True", "message": "Some content in the namespace has finalizers remaining: a.example.com/x in 1 resource instances"},
				}}})),
			},
			wantNames:  []string{"logging"},
			wantReason: "terminating for 60m, waiting on its 0 remaining objects (0 terminating)",
			wantEvidence: []string{
				"deletionTimestamp 2026-11-23T11:00:00Z: terminating for 60m (threshold 15m0s)",
				"no finalizers in metadata",
				"0 objects remain in the namespace, 0 of them terminating",
				"namespace condition NamespaceContentRemaining: Some resources are remaining: loggings.logging.banzaicloud.io has 1 resource instances",
				"namespace condition NamespaceFinalizersRemaining: Some content in the namespace has finalizers remaining: a.example.com/x in 1 resource instances",
			},
		},
		{
			name: "a namespace is reported with what is left in it",
			objects: []*Object{
				object(Namespaces, "", "logging", terminatingFor(time.Hour)),
				object(ConfigMaps, "logging", "stuck", terminatingFor(time.Minute, "x.example.com/y")),
				object(ConfigMaps, "logging", "plain"),
				object(ConfigMaps, "other", "elsewhere"),
			},
			wantNames:  []string{"logging"},
			wantReason: "terminating for 60m, waiting on its 2 remaining objects (1 terminating)",
			wantEvidence: []string{
				"deletionTimestamp 2026-11-23T11:00:00Z: terminating for 60m (threshold 15m0s)",
				"no finalizers in metadata",
				"2 objects remain in the namespace, 1 of them terminating",
			},
			wantBlockedBy: []string{"stuck"},
		},
		{
			name: "a namespace whose discovery fails is blocked by the APIServices of the failing group versions",
			objects: []*Object{
				object(Namespaces, "", "team-a", terminatingFor(time.Hour), withContent(map[string]any{"status": map[string]any{"conditions": []any{
					map[string]any{"type": "NamespaceDeletionDiscoveryFailure", "status": "True", "message": "Discovery failed for some groups, 2 failing: unable to retrieve the complete list of server APIs: " +
						"metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1, packages.operators.coreos.com/v1: the server is currently unable to handle the request"},
				}}})),
				object(APIServices, "", "v1.packages.operators.coreos.com"),
			},
			wantNames:  []string{"team-a"},
			wantReason: "terminating for 60m, waiting on its 0 remaining objects (0 terminating)",
			wantEvidence: []string{
				"deletionTimestamp 2026-11-23T11:00:00Z: terminating for 60m (threshold 15m0s)",
				"no finalizers in metadata",
				"0 objects remain in the namespace, 0 of them terminating",
				"namespace condition NamespaceDeletionDiscoveryFailure: Discovery failed for some groups, 2 failing: unable to retrieve the complete list of server APIs: " +
					"metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1, packages.operators.coreos.com/v1: the server is currently unable to handle the request",
				"the discovery of metrics.k8s.io/v1beta1 failed; its APIService v1beta1.metrics.k8s.io was not found",
			},
			wantBlockedBy: []string{"v1.packages.operators.coreos.com"},
		},
		{
			name: "a namespace's Events are counted once, and what was not listed makes it at least",
			objects: []*Object{
				object(Namespaces, "", "logging", terminatingFor(time.Hour)),
				object(Events, "logging", "e", withUID("same")),
				object(eventsV1, "logging", "e", withUID("same")),
			},
			coverage:   Coverage{Unlisted: []schema.GroupResource{ConfigMaps.GroupResource()}},
			wantNames:  []string{"logging"},
			wantReason: "terminating for 60m, waiting on at least 1 remaining objects (0 terminating)",
			wantEvidence: []string{
				"deletionTimestamp 2026-11-23T11:00:00Z: terminating for 60m (threshold 15m0s)",
				"no finalizers in metadata",
				"at least 1 objects remain in the namespace, 0 of them terminating",
				"not every resource was listed in the namespace: there may be more",
			},
		},
		{
			name: "a grace period is part of the evidence",
			objects: []*Object{object(ConfigMaps, "shop", "settings", terminatingFor(time.Hour), func(o *Object) {
				grace := int64(30)
				o.DeletionGracePeriodSeconds = &grace
			})},
			wantNames:  []string{"settings"},
			wantReason: "terminating for 60m, no finalizers",
			wantEvidence: []string{
				"deletionTimestamp 2026-11-23T11:00:00Z: terminating for 60m (threshold 15m0s)",
				"no finalizers in metadata",
				"deletionGracePeriodSeconds 30",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			view := NewView(testNow, []Resource{ConfigMaps, Namespaces, loggings, Events, eventsV1, APIServices}, tt.coverage, tt.objects)
			findings := StuckTerminating{minAge: minAge}.Plan(context.Background(), view)
			var names []string
			for _, f := range findings {
				names = append(names, f.Object.Name)
				assert.Equal(t, SeverityInfo, f.Severity)
				assert.Nil(t, f.Action, "stuck-terminating only reports")
			}
			require.Equal(t, tt.wantNames, names)
			if len(findings) == 1 {
				assert.Equal(t, tt.wantReason, findings[0].Reason)
				assert.Equal(t, tt.wantEvidence, findings[0].Evidence)
				var blockedBy []string
				for _, ref := range findings[0].BlockedBy {
					blockedBy = append(blockedBy, ref.Name)
				}
				assert.Equal(t, tt.wantBlockedBy, blockedBy)
			}
		})
	}
}

func TestStuckTerminatingOrderIsDeterministic(t *testing.T) {
	objects := []*Object{
		object(loggings, "", "b", terminatingFor(time.Hour, "x/y")),
		object(ConfigMaps, "shop", "b", terminatingFor(time.Hour, "x/y")),
		object(ConfigMaps, "other", "z", terminatingFor(time.Hour, "x/y")),
		object(ConfigMaps, "shop", "a", terminatingFor(time.Hour, "x/y")),
		object(loggings, "", "a", terminatingFor(time.Hour, "x/y")),
	}
	var got []string
	for _, f := range (StuckTerminating{}).Plan(context.Background(), newTestView(objects...)) {
		got = append(got, f.Object.String())
	}
	assert.Equal(t, []string{
		"ConfigMap other/z", "ConfigMap shop/a", "ConfigMap shop/b",
		"Logging.logging.banzaicloud.io a", "Logging.logging.banzaicloud.io b",
	}, got)
}

func TestFailedGroupVersions(t *testing.T) {
	for message, want := range map[string][]schema.GroupVersion{
		"Discovery failed for some groups, 2 failing: unable to retrieve the complete list of server APIs: custom/v1: the server is currently unable to handle the request, metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1": {
			{Group: "custom", Version: "v1"}, {Group: "metrics.k8s.io", Version: "v1beta1"}},
		`Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: packages.operators.coreos.com/v1: Get "https://10.0.0.1:443/apis/packages.operators.coreos.com/v1": dial tcp: connection refused`: {
			{Group: "packages.operators.coreos.com", Version: "v1"}},
		"All resources successfully discovered": nil,
	} {
		assert.Equal(t, want, failedGroupVersions(message), message)
	}
}
