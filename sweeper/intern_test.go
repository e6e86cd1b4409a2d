package sweeper

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

func TestInternerShares(t *testing.T) {
	// Each object's strings, maps and slices of its own, as decoding makes them.
	meta := func(name string, labels map[string]string, owner string, controller bool, finalizers ...string) *metav1.ObjectMeta {
		m := &metav1.ObjectMeta{
			Namespace: strings.Clone("shop"), Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1",
			Labels: map[string]string{},
			Annotations: map[string]string{
				strings.Clone("meta.helm.sh/release-name"):         strings.Clone("shop"),
				"kubectl.kubernetes.io/last-applied-configuration": `{"kind":"ConfigMap"}`,
			},
			Finalizers: finalizers,
		}
		for k, v := range labels {
			m.Labels[strings.Clone(k)] = strings.Clone(v)
		}
		if owner != "" {
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: strings.Clone(owner), UID: types.UID("uid-" + owner), Controller: ptr.To(controller)}}
		}
		return m
	}
	in := newInterner()
	in.annotations = everyRulesAnnotations(t)
	r := rules.Pods
	a := in.object(&r, meta("a", map[string]string{"app": "shop", "tier": "web"}, "rs", true, strings.Clone("example.com/f")))
	b := in.object(&r, meta("b", map[string]string{"tier": "web", "app": "shop"}, "rs", true, strings.Clone("example.com/f")))
	c := in.object(&r, meta("c", map[string]string{"app": "shop", "tier": "db"}, "rs", false))
	d := in.object(&r, meta("d", nil, "", false))

	want := rules.MetaOf(meta("a", map[string]string{"app": "shop", "tier": "web"}, "rs", true, "example.com/f"))
	want.Annotations = map[string]string{"meta.helm.sh/release-name": "shop"}
	assert.Equal(t, want, a.Meta, "what rules read is kept, and no more")
	assert.Same(t, &r, a.Resource)
	assert.Same(t, unsafe.StringData(a.Namespace), unsafe.StringData(d.Namespace))
	assert.Equal(t, reflect.ValueOf(a.Labels).Pointer(), reflect.ValueOf(b.Labels).Pointer(), "equal label sets are one map")
	assert.NotEqual(t, reflect.ValueOf(a.Labels).Pointer(), reflect.ValueOf(c.Labels).Pointer())
	assert.Equal(t, map[string]string{"app": "shop", "tier": "db"}, c.Labels)
	assert.Equal(t, reflect.ValueOf(a.Annotations).Pointer(), reflect.ValueOf(d.Annotations).Pointer())
	assert.Equal(t, map[string]string{"meta.helm.sh/release-name": "shop"}, d.Annotations, "only the annotations rules read")
	assert.Same(t, &a.Finalizers[0], &b.Finalizers[0])
	assert.Same(t, &a.OwnerReferences[0], &b.OwnerReferences[0], "the pods of a ReplicaSet share its reference")
	assert.False(t, *c.OwnerReferences[0].Controller, "references that differ are not shared")
	assert.True(t, *a.OwnerReferences[0].Controller)
	assert.Nil(t, d.Labels)
	assert.Nil(t, c.Finalizers)
	assert.Nil(t, d.OwnerReferences)
}
