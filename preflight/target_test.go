package preflight

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/operator-sweeper/operator-sweeper/input"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		arg, namespace string
		want           Target
		wantErr        string // a part of the error; "" for none
	}{
		{arg: "deploy/x", namespace: "ns", want: Target{Type: TypeDeployment, Name: "x", Namespace: "ns"}},
		{arg: "deployment/x", namespace: "ns", want: Target{Type: TypeDeployment, Name: "x", Namespace: "ns"}},
		{arg: "Deployments.apps/x", namespace: "ns", want: Target{Type: TypeDeployment, Name: "x", Namespace: "ns"}},
		{arg: "sts/x", namespace: "ns", want: Target{Type: TypeStatefulSet, Name: "x", Namespace: "ns"}},
		{arg: "statefulset/x", namespace: "ns", want: Target{Type: TypeStatefulSet, Name: "x", Namespace: "ns"}},
		{arg: "ds/x", namespace: "ns", want: Target{Type: TypeDaemonSet, Name: "x", Namespace: "ns"}},
		{arg: "daemonsets/x", namespace: "ns", want: Target{Type: TypeDaemonSet, Name: "x", Namespace: "ns"}},
		{arg: "helm/x", namespace: "ns", want: Target{Type: TypeHelm, Name: "x", Namespace: "ns"}},
		{arg: "release/x", namespace: "ns", want: Target{Type: TypeHelm, Name: "x", Namespace: "ns"}},
		{arg: "sub/x", namespace: "ns", want: Target{Type: TypeSubscription, Name: "x", Namespace: "ns"}},
		{arg: "subscriptions.operators.coreos.com/x", namespace: "ns", want: Target{Type: TypeSubscription, Name: "x", Namespace: "ns"}},
		{arg: "csv/x", namespace: "ns", want: Target{Type: TypeCSV, Name: "x", Namespace: "ns"}},
		{arg: "clusterserviceversion/x", namespace: "ns", want: Target{Type: TypeCSV, Name: "x", Namespace: "ns"}},
		{arg: "CSV/etcd.v0.9.4", namespace: "operators", want: Target{Type: TypeCSV, Name: "etcd.v0.9.4", Namespace: "operators"}},
		{arg: "clusterextension/etcd", namespace: "", want: Target{Type: TypeClusterExtension, Name: "etcd"}},
		{arg: "ce/etcd", namespace: "ignored", want: Target{Type: TypeClusterExtension, Name: "etcd"}},
		{arg: "pod/x", namespace: "ns", wantErr: `unknown type "pod"`},
		{arg: "helmrelease.helm.toolkit.fluxcd.io/x", namespace: "ns", wantErr: "unknown type"},
		{arg: "deploy/x", namespace: "", wantErr: "give its namespace with -n"},
		{arg: "x", namespace: "ns", wantErr: "give what you uninstall as TYPE/NAME"},
		{arg: "helm/", namespace: "ns", wantErr: "give what you uninstall as TYPE/NAME"},
		{arg: "/x", namespace: "ns", wantErr: "give what you uninstall as TYPE/NAME"},
		{arg: "helm/a/b", namespace: "ns", wantErr: "give what you uninstall as TYPE/NAME"},
		{arg: "", namespace: "ns", wantErr: "give what you uninstall as TYPE/NAME"},
	}
	for _, tt := range tests {
		t.Run(tt.arg+" -n "+tt.namespace, func(t *testing.T) {
			got, err := ParseTarget(tt.arg, tt.namespace)
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			var inputErr *input.Error
			assert.True(t, errors.As(err, &inputErr), "an input.Error: exit 2")
			assert.Equal(t, Target{}, got)
		})
	}
}

func TestTargetString(t *testing.T) {
	assert.Equal(t, "helm/logging-operator -n logging", Target{Type: TypeHelm, Name: "logging-operator", Namespace: "logging"}.String())
}

func TestCanonicalType(t *testing.T) {
	tests := map[string]string{
		"deployment": TypeDeployment, "deployments": TypeDeployment, "deploy": TypeDeployment, "deployment.apps": TypeDeployment, "DEPLOY": TypeDeployment,
		"statefulset": TypeStatefulSet, "statefulsets": TypeStatefulSet, "sts": TypeStatefulSet, "statefulsets.apps": TypeStatefulSet,
		"daemonset": TypeDaemonSet, "daemonsets": TypeDaemonSet, "ds": TypeDaemonSet, "daemonset.apps": TypeDaemonSet,
		"helm": TypeHelm, "release": TypeHelm, "helmrelease": TypeHelm,
		"subscription": TypeSubscription, "subs": TypeSubscription, "sub": TypeSubscription, "subscription.operators.coreos.com": TypeSubscription,
		"csv": TypeCSV, "csvs": TypeCSV, "clusterserviceversions": TypeCSV, "clusterserviceversion.operators.coreos.com": TypeCSV,
		"": "", "pod": "", "deployment.extensions": "", "replicaset": "", "operator": "",
	}
	for typ, want := range tests {
		assert.Equal(t, want, canonicalType(typ), typ)
	}
}

func TestResourceOf(t *testing.T) {
	tests := []struct {
		apiVersion, kind string
		want             rules.Resource
		ok               bool
	}{
		{"apps/v1", "Deployment", rules.Deployments, true},
		{"apps/v1", "StatefulSet", rules.StatefulSets, true},
		{"apps/v1", "DaemonSet", rules.DaemonSets, true},
		{"v1", "Service", rules.Services, true},
		{"apiextensions.k8s.io/v1", "CustomResourceDefinition", rules.CustomResourceDefinitions, true},
		{"apiextensions.k8s.io/v1beta1", "CustomResourceDefinition", rules.CustomResourceDefinitions, true},
		{"admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", rules.ValidatingWebhookConfigurations, true},
		{"admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", rules.MutatingWebhookConfigurations, true},
		{"apiregistration.k8s.io/v1", "APIService", rules.APIServices, true},
		{"extensions/v1beta1", "Deployment", rules.Resource{}, false},
		{"v1", "ConfigMap", rules.Resource{}, false},
		{"v1", "ServiceAccount", rules.Resource{}, false},
		{"rbac.authorization.k8s.io/v1", "ClusterRole", rules.Resource{}, false},
		{"example.com/v1", "Service", rules.Resource{}, false},
		{"", "", rules.Resource{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.apiVersion+" "+tt.kind, func(t *testing.T) {
			got, ok := resourceOf(tt.apiVersion, tt.kind)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}
