package rules

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
)

// example makes a concrete name out of a glob: every "*" becomes "x".
func example(glob string) string { return strings.ReplaceAll(glob, "*", "x") }

// exampleResource is a resource a mapping covers: its first resource glob made concrete, or a
// custom resource of no operator's.
func exampleResource(owner FinalizerOwner) Resource {
	gr := schema.GroupResource{Group: "example.com", Resource: "things"}
	if len(owner.Resources) > 0 {
		gr = schema.ParseGroupResource(example(owner.Resources[0]))
	}
	for _, known := range allTestResources {
		if known.GroupResource() == gr {
			return known
		}
	}
	return Resource{GroupVersionResource: gr.WithVersion("v1"), Kind: "Thing", Namespaced: true}
}

// exampleWorkload is a workload c matches, wanting replicas pods.
func exampleWorkload(t *testing.T, c Controller, replicas int64) *Object {
	t.Helper()
	name, podLabels := "workload", map[string]string{}
	if c.Name != "" {
		name = c.Name
	}
	if c.Selector != "" {
		selector, err := labels.Parse(c.Selector)
		require.NoError(t, err)
		requirements, _ := selector.Requirements()
		for _, r := range requirements {
			value := "true"
			if r.Operator() == selection.Equals || r.Operator() == selection.DoubleEquals || r.Operator() == selection.In {
				value = r.Values().List()[0]
			}
			podLabels[r.Key()] = value
		}
	}
	image := "registry.example.com/unrelated:v1"
	if c.Image != "" {
		image = "registry.example.com/" + strings.TrimPrefix(strings.TrimPrefix(c.Image, "*/"), "*") + ":v1"
	}
	spec := map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": image}}}}}
	content := map[string]any{"spec": spec}
	if c.Kind == "DaemonSet" {
		content["status"] = map[string]any{"desiredNumberScheduled": replicas}
	} else {
		spec["replicas"] = replicas
	}
	kv := make([]string, 0, 2*len(podLabels))
	for k, v := range podLabels {
		kv = append(kv, k, v)
	}
	return object(workloads[c.Kind], "operator-ns", name, withLabels(kv...), withContent(content))
}

// TestShippedMappings: every shipped mapping, on an object of a kind it covers, holding a finalizer
// its pattern matches: kept while a controller it names runs or a Lease it names is held, only
// warned about while scaled to 0, released once gone, or, protected, never released.
func TestShippedMappings(t *testing.T) {
	mappings := shippedMappings(t)
	for _, owner := range catalogOwners(t) {
		finalizer, res := example(owner.Pattern), exampleResource(owner)
		t.Run(owner.Pattern+" "+res.GroupResource().String(), func(t *testing.T) {
			mapping, ok := mappings.ownerOf(finalizer, res.GroupResource())
			require.True(t, ok)
			require.Equal(t, owner.Pattern, mapping.Pattern, "%s on %s is this mapping's", finalizer, res.GroupResource())
			require.Equal(t, owner.Resources, mapping.Resources)
			stuck := object(res, "team", "stuck", terminatingFor(time.Hour, finalizer))
			plan := func(objs ...*Object) Finding {
				resources := allTestResources
				if !slices.Contains(resources, res) {
					resources = append(slices.Clone(resources), res)
				}
				view := NewView(testNow, resources, Coverage{}, append([]*Object{stuck}, objs...))
				rule := OrphanedFinalizers{minAge: time.Minute, mappings: mappings}
				findings := rule.Plan(context.Background(), view)
				require.Len(t, findings, 1)
				return findings[0]
			}
			for _, c := range owner.Controllers {
				alive := plan(exampleWorkload(t, c, 1))
				assert.True(t, strings.HasPrefix(alive.Reason, "owner still present"), "%+v runs: %s", c, alive.Reason)
				scaled := plan(exampleWorkload(t, c, 0))
				assert.True(t, strings.HasPrefix(scaled.Reason, "controller scaled to 0"), "%+v scaled to 0: %s", c, scaled.Reason)
				assert.Nil(t, scaled.Action)
			}
			for _, lease := range owner.Leases {
				held := object(Leases, "kube-system", example(lease), withContent(map[string]any{"spec": map[string]any{
					"holderIdentity": "pod-1", "leaseDurationSeconds": int64(15), "renewTime": testNow.Add(-5 * time.Second).Format(time.RFC3339Nano)}}))
				f := plan(held)
				assert.True(t, strings.HasPrefix(f.Reason, "owner still present"), "Lease %s held: %s", example(lease), f.Reason)
			}
			gone := plan()
			switch owner.Consequence {
			case ConsequenceGuards:
				assert.Equal(t, fmt.Sprintf("operator gone, but not released: %s guards %s: %s", finalizer, owner.StandsFor, owner.Remedy), gone.Reason)
				assert.Nil(t, gone.Action, "never released")
				assert.Contains(t, gone.Evidence, fmt.Sprintf("%s guards %s (catalog, checked against %s %s): never released", finalizer, owner.StandsFor, owner.Source.Repository, owner.Source.Release))
				assert.Equal(t, SeverityWarning, gone.Severity)
			default:
				assert.Equal(t, RemoveFinalizers{Finalizers: []string{finalizer}}, gone.Action, gone.Reason)
				assert.NotEmpty(t, gone.Facts)
				assert.Contains(t, gone.Evidence, fmt.Sprintf("%s stands for %s: consequence %s (catalog, checked against %s %s)", finalizer, owner.StandsFor, owner.Consequence, owner.Source.Repository, owner.Source.Release))
			}
		})
	}
}

func TestFluxFinalizersGoToTheControllerOfTheirGroup(t *testing.T) {
	mappings := shippedMappings(t)
	for resource, controller := range map[string]string{
		"gitrepositories.source.toolkit.fluxcd.io":        "source-controller",
		"helmcharts.source.toolkit.fluxcd.io":             "source-controller",
		"kustomizations.kustomize.toolkit.fluxcd.io":      "kustomize-controller",
		"helmreleases.helm.toolkit.fluxcd.io":             "helm-controller",
		"receivers.notification.toolkit.fluxcd.io":        "notification-controller",
		"imagepolicies.image.toolkit.fluxcd.io":           "image-reflector-controller",
		"imageupdateautomations.image.toolkit.fluxcd.io":  "image-automation-controller",
		"artifactgenerators.source.extensions.fluxcd.io/": "source-watcher",
	} {
		gr := schema.ParseGroupResource(strings.TrimSuffix(resource, "/"))
		finalizer := "finalizers.fluxcd.io"
		if controller == "source-watcher" {
			finalizer = "source.extensions.fluxcd.io/finalizer"
		}
		mapping, ok := mappings.ownerOf(finalizer, gr)
		if assert.True(t, ok, resource) {
			assert.Equal(t, "app.kubernetes.io/component="+controller+",app.kubernetes.io/part-of=flux", mapping.Controllers[0].Selector, resource)
		}
	}
	_, ok := mappings.ownerOf("finalizers.fluxcd.io", schema.GroupResource{Group: "example.com", Resource: "things"})
	assert.False(t, ok, "Flux's finalizer on a kind Flux does not own is no Flux controller's")
}

// TestConfiguredMappingsCannotUnprotect: a broader configured pattern, checked first, still
// leaves a protected finalizer alone once its controller is gone.
func TestConfiguredMappingsCannotUnprotect(t *testing.T) {
	mine := FinalizerOwner{Pattern: "tigera.io/*", Controllers: []Controller{{Kind: "Deployment", Name: "my-tigera"}}}
	rule := OrphanedFinalizers{minAge: time.Minute, mappings: shippedMappings(t, mine)}
	sa := object(ServiceAccounts, "calico-system", "calico-node", terminatingFor(time.Hour, "tigera.io/cni-protector"))
	findings := rule.Plan(context.Background(), viewWith(Coverage{}, sa))
	require.Len(t, findings, 1)
	assert.Nil(t, findings[0].Action)
	assert.Contains(t, findings[0].Reason, "operator gone, but not released: tigera.io/cni-protector guards ")
}

// TestConfiguredMappingsReplaceByPatternAndResources: a configured mapping replaces the shipped
// one with the same pattern and resources only.
func TestConfiguredMappingsReplaceByPatternAndResources(t *testing.T) {
	tofu := FinalizerOwner{Pattern: "finalizers.fluxcd.io", Resources: []string{"*.infra.contrib.fluxcd.io"}, Controllers: []Controller{{Kind: "Deployment", Name: "tofu-controller"}}}
	merged := shippedMappings(t, tofu)
	assert.Len(t, merged.Owners(), len(catalogOwners(t))+1, "every Flux mapping stays")
	mapping, ok := merged.ownerOf("finalizers.fluxcd.io", schema.GroupResource{Group: "source.toolkit.fluxcd.io", Resource: "gitrepositories"})
	require.True(t, ok)
	assert.Equal(t, "app.kubernetes.io/component=source-controller,app.kubernetes.io/part-of=flux", mapping.Controllers[0].Selector)

	helm := FinalizerOwner{Pattern: "finalizers.fluxcd.io", Resources: []string{"*.helm.toolkit.fluxcd.io"}, Controllers: []Controller{{Kind: "Deployment", Name: "my-helm"}}}
	assert.Len(t, shippedMappings(t, helm).Owners(), len(catalogOwners(t)), "the shipped helm-controller mapping is replaced")
}

// TestConfiguredMappingsOfAProtectedPatternAddOnly: a configured mapping of the very pattern of a
// protected one adds its controllers and Leases; the finalizer stays protected, whatever the
// configured mapping says, and the shipped controllers still count.
func TestConfiguredMappingsOfAProtectedPatternAddOnly(t *testing.T) {
	var shipped FinalizerOwner
	for _, owner := range catalogOwners(t) {
		if owner.Pattern == "longhorn.io" && owner.Consequence == ConsequenceGuards {
			shipped = owner
			break
		}
	}
	require.NotEmpty(t, shipped.Resources, "the catalog's Longhorn entry")
	mine := FinalizerOwner{Pattern: "longhorn.io", Resources: shipped.Resources, Controllers: []Controller{{Kind: "Deployment", Name: "my-longhorn"}},
		Leases: []string{"my-longhorn-lock"}, Consequence: ConsequenceLocal}
	merged := shippedMappings(t, mine)
	assert.Len(t, merged.Owners(), len(catalogOwners(t)), "it takes the catalog entry's place")
	volumes := schema.GroupResource{Group: "longhorn.io", Resource: "volumes"}
	mapping, ok := merged.ownerOf("longhorn.io", volumes)
	require.True(t, ok)
	assert.Equal(t, ConsequenceGuards, mapping.Consequence, "it stays guarding, whatever the configured mapping says")
	assert.Equal(t, shipped.StandsFor, mapping.StandsFor)
	assert.Equal(t, "my-longhorn", mapping.Controllers[0].Name, "the configured controller first")
	assert.Greater(t, len(mapping.Controllers), 1, "the catalog's controllers stay")
	assert.Contains(t, mapping.Leases, "my-longhorn-lock")

	volume := object(Resource{GroupVersionResource: volumes.WithVersion("v1beta2"), Kind: "Volume", Namespaced: true}, "longhorn-system", "pvc-1",
		terminatingFor(time.Hour, "longhorn.io"))
	for name, mappings := range map[string]FinalizerMappings{
		"the same pattern and resources": merged,
		"a broader pattern, checked first": shippedMappings(t, FinalizerOwner{Pattern: "longhorn*", Controllers: []Controller{{Kind: "Deployment", Name: "my-longhorn"}},
			Consequence: ConsequenceLocal}),
	} {
		rule := OrphanedFinalizers{minAge: time.Minute, mappings: mappings}
		view := NewView(testNow, append(slices.Clone(allTestResources), *volume.Resource), Coverage{}, []*Object{volume})
		findings := rule.Plan(context.Background(), view)
		require.Len(t, findings, 1, name)
		assert.Nil(t, findings[0].Action, "%s: never released", name)
		assert.Contains(t, findings[0].Reason, "operator gone, but not released: longhorn.io guards ", name)
	}
}
