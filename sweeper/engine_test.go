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
