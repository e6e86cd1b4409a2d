package sweeper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// TestWaves: the writes of one rule to one resource go at once; the next resource's, the next
// rule's, what depends on an action and a second action on the same object wait for a later wave.
func TestWaves(t *testing.T) {
	release := rules.RemoveFinalizers{Finalizers: []string{"example.com/f"}}
	finding := func(uid string, rule, resource int, action rules.Action, dependsOn ...string) plannedFinding {
		f := &rules.Finding{Object: rules.ObjectRef{Name: uid, UID: types.UID(uid)}, Action: action}
		for _, d := range dependsOn {
			f.DependsOn = append(f.DependsOn, rules.ObjectRef{UID: types.UID(d)})
		}
		return plannedFinding{Finding: f, order: rule, resource: resource}
	}
	tests := []struct {
		name    string
		planned []plannedFinding
		want    [][]int
	}{
		{"one rule, one resource: all at once",
			[]plannedFinding{finding("a", 0, 0, release), finding("b", 0, 0, release), finding("c", 0, 0, release)},
			[][]int{{0, 1, 2}}},
		{"the next resource waits, as does the next rule",
			[]plannedFinding{finding("binding", 0, 0, release), finding("role", 0, 1, release), finding("role-2", 0, 1, release), finding("csv", 1, 0, release)},
			[][]int{{0}, {1, 2}, {3}}},
		{"findings without an action wait for nothing",
			[]plannedFinding{finding("a", 0, 0, release), finding("stuck", 0, 1, nil), finding("b", 0, 1, release)},
			[][]int{{0, 1}, {2}}},
		{"a dependency in the same group comes first",
			[]plannedFinding{finding("a", 0, 0, release), finding("b", 0, 0, release, "a"), finding("c", 0, 0, release)},
			[][]int{{0, 2}, {1}}},
		{"a second action on one object comes after the first",
			[]plannedFinding{finding("a", 0, 0, release), finding("a", 1, 0, rules.Delete{})},
			[][]int{{0}, {1}}},
		{"after a dependency's later wave, the next group starts after it",
			[]plannedFinding{finding("a", 0, 0, release), finding("b", 0, 0, release, "a"), finding("c", 1, 0, release)},
			[][]int{{0}, {1}, {2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, waves(tt.planned))
		})
	}
}
