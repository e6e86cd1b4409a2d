package sweeper

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

func TestOwnerReferences(t *testing.T) {
	ref := func(kind, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "operators.coreos.com/v1alpha1", Kind: kind, Name: kind + "-" + uid, UID: types.UID(uid)}
	}
	tests := []struct {
		name string
		refs []metav1.OwnerReference
		act  rules.SetOwnerReferences
		want []metav1.OwnerReference
	}{
		{
			name: "add to none",
			act:  rules.SetOwnerReferences{Add: []metav1.OwnerReference{ref("Subscription", "new")}},
			want: []metav1.OwnerReference{ref("Subscription", "new")},
		},
		{
			name: "replace a stale owner and keep the others",
			refs: []metav1.OwnerReference{ref("Subscription", "old"), ref("CatalogSource", "cat")},
			act:  rules.SetOwnerReferences{Add: []metav1.OwnerReference{ref("Subscription", "new")}, Remove: []types.UID{"old"}},
			want: []metav1.OwnerReference{ref("CatalogSource", "cat"), ref("Subscription", "new")},
		},
		{
			name: "an added reference replaces one with the same UID",
			refs: []metav1.OwnerReference{{Kind: "Subscription", Name: "s", UID: "same", Controller: new(true)}},
			act:  rules.SetOwnerReferences{Add: []metav1.OwnerReference{ref("Subscription", "same")}},
			want: []metav1.OwnerReference{ref("Subscription", "same")},
		},
		{
			name: "remove only",
			refs: []metav1.OwnerReference{ref("Subscription", "old")},
			act:  rules.SetOwnerReferences{Remove: []types.UID{"old"}},
			want: []metav1.OwnerReference{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ownerReferences(tt.refs, tt.act))
		})
	}
}

func TestMayHaveLostRace(t *testing.T) {
	gr := rules.ConfigMaps.GroupResource()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"conflict", apierrors.NewConflict(gr, "a", errors.New("the object has been modified")), true},
		{"failed JSON patch test", apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "",
			"testing value /metadata/finalizers failed: test failed", 0, false), true},
		{"wrapped conflict", fmt.Errorf("patch: %w", apierrors.NewConflict(gr, "a", errors.New("x"))), true},
		{"any other 422 is checked by re-reading", apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "a", nil), true},
		{"not found", apierrors.NewNotFound(gr, "a"), false},
		{"forbidden", apierrors.NewForbidden(gr, "a", errors.New("no")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, mayHaveLostRace(tt.err))
		})
	}
}

func TestBlamedWebhook(t *testing.T) {
	config := &rules.Object{Resource: &rules.ValidatingWebhookConfigurations, Meta: rules.Meta{Name: "acme", UID: "cfg"},
		Content: map[string]any{"webhooks": []any{map[string]any{"name": "deny.acme.io"}}}}
	twin := &rules.Object{Resource: &rules.MutatingWebhookConfigurations, Meta: rules.Meta{Name: "other", UID: "twin"},
		Content: map[string]any{"webhooks": []any{map[string]any{"name": "shared.example.com"}}}}
	alsoShared := &rules.Object{Resource: &rules.ValidatingWebhookConfigurations, Meta: rules.Meta{Name: "third", UID: "third"},
		Content: map[string]any{"webhooks": []any{map[string]any{"name": "shared.example.com"}}}}
	view := rules.NewView(time.Now(), []rules.Resource{rules.ValidatingWebhookConfigurations, rules.MutatingWebhookConfigurations}, rules.Coverage{},
		[]*rules.Object{config, twin, alsoShared})
	tests := []struct {
		detail, want string
		blamed       bool
	}{
		{`admission webhook "deny.acme.io" denied the request: finalizers are ours`,
			`refused by webhook deny.acme.io of ValidatingWebhookConfiguration acme: admission webhook "deny.acme.io" denied the request: finalizers are ours`, true},
		{`Internal error occurred: failed calling webhook "deny.acme.io": failed to call webhook: Post "https://acme-webhook.acme.svc:443/validate": service "acme-webhook" not found`,
			`refused by webhook deny.acme.io of ValidatingWebhookConfiguration acme: Internal error occurred: failed calling webhook "deny.acme.io": failed to call webhook: Post "https://acme-webhook.acme.svc:443/validate": service "acme-webhook" not found`, true},
		{`admission webhook "other.example.com" denied the request: no`, `admission webhook "other.example.com" denied the request: no`, false},
		{`the server could not find the requested resource`, `the server could not find the requested resource`, false},
		{`admission webhook "shared.example.com" denied the request: no`, `admission webhook "shared.example.com" denied the request: no`, false}, // two have it
	}
	for _, tt := range tests {
		res := Failed(report.ReasonAPIError, "%s", tt.detail)
		blamed(view, &res)
		assert.Equal(t, tt.want, res.Detail)
		if tt.blamed {
			assert.Equal(t, []rules.ObjectRef{config.Ref()}, res.BlockedBy)
		} else {
			assert.Empty(t, res.BlockedBy)
		}
	}
}
