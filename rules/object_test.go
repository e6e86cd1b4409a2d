package rules

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestRulesDeclareTheAnnotationsTheyRead: a view keeps only the annotations of the families the
// enabled rules declare (AnnotationReader), so a rule declares every annotation it looks up, in
// its own code or a helper's: run alone or beside others, it sees them. Rules look annotations up
// by a key, a literal or a constant, never range over them: they would see only those kept.
func TestRulesDeclareTheAnnotationsTheyRead(t *testing.T) {
	code := parseRuleCode(t)
	lookups, other := code.annotationLookups(code.keys())
	assert.Empty(t, other, "objects keep only the annotations rules look up")
	require.NotEmpty(t, lookups, "the rules read some annotations")
	read := map[string]bool{}
	for _, rule := range everyRule(t) {
		reached, _ := code.annotationLookups(code.reach(typeName(rule)))
		kept := KeepAnnotations()
		if reader, ok := rule.(AnnotationReader); ok {
			kept = KeepAnnotations(reader.ReadsAnnotations()...)
		}
		for key, where := range reached {
			read[key] = true
			assert.True(t, kept.Keeps(key), "%s reads annotation %s (%s): add its family to its ReadsAnnotations", rule.Name(), key, where[0])
		}
		assert.False(t, kept.Keeps("kubectl.kubernetes.io/last-applied-configuration"), rule.Name())
	}
	for key, where := range lookups {
		assert.True(t, read[key], "annotation %s is looked up (%s) by code no rule reaches", key, where[0])
	}
}

// TestKeptAnnotations: the families kept, and no others; the zero value keeps all.
func TestKeptAnnotations(t *testing.T) {
	annotations := map[string]string{"meta.helm.sh/release-name": "shop", "kubectl.kubernetes.io/last-applied-configuration": "{}"}
	tests := []struct {
		name string
		kept KeptAnnotations
		want map[string]string
	}{
		{name: "all", want: annotations},
		{name: "none", kept: KeepAnnotations(), want: nil},
		{name: "a family", kept: KeepAnnotations("meta.helm.sh/", "operatorframework.io/"), want: map[string]string{"meta.helm.sh/release-name": "shop"}},
		{name: "every one's family", kept: KeepAnnotations("meta.helm.sh/", "kubectl.kubernetes.io/"), want: annotations},
		{name: "no family of theirs", kept: KeepAnnotations("operatorframework.io/"), want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.kept.Of(annotations))
			assert.Len(t, annotations, 2, "the annotations are left as they were")
		})
	}
	assert.Equal(t, KeepAnnotations("b/", "a/"), KeepAnnotations("a/", "b/", "a/"), "families are a set")
}

func TestMetaOf(t *testing.T) {
	deleted := metav1.NewTime(testNow)
	meta := metav1.ObjectMeta{
		Namespace: "shop", Name: "a", UID: "u", ResourceVersion: "7", Generation: 3, GenerateName: "a-",
		CreationTimestamp: metav1.NewTime(testNow.Add(-1)), DeletionTimestamp: &deleted, DeletionGracePeriodSeconds: ptr.To[int64](30),
		Labels: map[string]string{"app": "shop"},
		Annotations: map[string]string{
			"meta.helm.sh/release-name": "shop", "kubectl.kubernetes.io/last-applied-configuration": "{}",
		},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "o"}},
		Finalizers:      []string{"example.com/f"},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
	}
	assert.Equal(t, Meta{
		Namespace: "shop", Name: "a", UID: "u", ResourceVersion: "7",
		CreationTimestamp: meta.CreationTimestamp, DeletionTimestamp: &deleted, DeletionGracePeriodSeconds: ptr.To[int64](30),
		Labels:          map[string]string{"app": "shop"},
		Annotations:     meta.Annotations, // the view drops those no rule reads (KeptAnnotations)
		OwnerReferences: meta.OwnerReferences,
		Finalizers:      []string{"example.com/f"},
	}, MetaOf(&meta))
	assert.Len(t, meta.Annotations, 2, "meta is left as it was")
}

func TestControllerRef(t *testing.T) {
	obj := object(Pods, "shop", "p")
	assert.Nil(t, obj.ControllerRef())
	obj.OwnerReferences = []metav1.OwnerReference{
		{Kind: "ConfigMap", Name: "c", UID: "c", Controller: ptr.To(false)},
		{Kind: "ReplicaSet", Name: "rs", UID: "rs", Controller: ptr.To(true)},
	}
	assert.Same(t, &obj.OwnerReferences[1], obj.ControllerRef())
}
