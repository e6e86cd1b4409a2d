package sweeper

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// reader is a rule that only asks for content.
type reader []rules.ContentRequest

func (reader) Name() string                                      { return "reader" }
func (reader) Plan(context.Context, *rules.View) []rules.Finding { return nil }
func (r reader) ReadsContent() []rules.ContentRequest            { return r }

func TestContentPlans(t *testing.T) {
	pods, nodes, deployments := rules.Pods.GroupResource(), rules.Nodes.GroupResource(), rules.Deployments.GroupResource()
	e := &Engine{Rules: []rules.Rule{
		reader(nil), // reads no content
		reader{
			{Resource: pods, Selector: "olm.catalogSource", Fields: []string{"spec.nodeName", "status.conditions"}},
			{Resource: nodes, Fields: []string{"status.conditions"}},
			{Resource: deployments, Fields: []string{"spec.replicas"}},
		},
		reader{
			{Resource: pods, Selector: "app=bare", Fields: []string{"spec.nodeName"}},
			{Resource: pods, Selector: "olm.catalogSource"},
			{Resource: deployments, Fields: []string{"status.readyReplicas", "spec.replicas"}},
		},
	}}
	assert.Equal(t, map[schema.GroupResource]contentPlan{
		pods:        {selectors: []string{"app=bare", "olm.catalogSource"}},
		nodes:       {all: true, fields: []string{"status.conditions"}},
		deployments: {all: true, fields: []string{"spec.replicas", "status.readyReplicas"}},
	}, e.contentPlans(), "selectors and fields merge; one request for all fields wins")
}

// declaring is a rule that declares what it reads whole and the annotations it reads.
type declaring struct {
	whole       []schema.GroupResource
	annotations []string
}

func (declaring) Name() string                                      { return "declaring" }
func (declaring) Plan(context.Context, *rules.View) []rules.Finding { return nil }
func (d declaring) ReadsWhole() []schema.GroupResource              { return d.whole }
func (d declaring) ReadsAnnotations() []string                      { return d.annotations }

// TestDeclarationsMerge: every shard reads whole what any enabled rule declares it reads whole,
// and objects keep the annotations of the families any enabled rule reads, no others.
func TestDeclarationsMerge(t *testing.T) {
	pods, nodes, crds := rules.Pods.GroupResource(), rules.Nodes.GroupResource(), rules.CustomResourceDefinitions.GroupResource()
	tests := []struct {
		name  string
		rules []rules.Rule
		whole map[schema.GroupResource]bool
		keeps []string
		drops []string
	}{
		{name: "no rule declares", rules: []rules.Rule{reader(nil)}, whole: map[schema.GroupResource]bool{},
			drops: []string{"meta.helm.sh/release-name", "kubectl.kubernetes.io/last-applied-configuration"}},
		{name: "merged", rules: []rules.Rule{
			declaring{whole: []schema.GroupResource{pods, nodes}, annotations: []string{"meta.helm.sh/"}},
			reader(nil),
			declaring{whole: []schema.GroupResource{nodes, crds}, annotations: []string{"operatorframework.io/", "meta.helm.sh/"}},
		}, whole: map[schema.GroupResource]bool{pods: true, nodes: true, crds: true},
			keeps: []string{"meta.helm.sh/release-name", "operatorframework.io/properties"},
			drops: []string{"olm.operatorGroup", "kubectl.kubernetes.io/last-applied-configuration"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Engine{Rules: tt.rules}
			assert.Equal(t, tt.whole, e.wholeResources())
			kept := e.keptAnnotations()
			for _, key := range tt.keeps {
				assert.True(t, kept.Keeps(key), key)
			}
			for _, key := range tt.drops {
				assert.False(t, kept.Keeps(key), key)
			}
		})
	}
}
