package cluster

import (
	"fmt"
	"strings"

	olmcrds "github.com/operator-framework/api/crds"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// CRDs returns the CRDs every test cluster has: OLM v0's real CRDs, and as minimal CRDs with the
// real group and kinds logging-operator's Logging (cluster-scoped), SyslogNGConfig and
// FluentdConfig (namespaced), victoria-metrics-operator's VMAgent and VMServiceScrape, and
// Karpenter's NodeClaim.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	crds := []*apiextensionsv1.CustomResourceDefinition{
		olmcrds.CatalogSource(),
		olmcrds.ClusterServiceVersion(),
		olmcrds.InstallPlan(),
		olmcrds.OLMConfig(),
		olmcrds.Operator(),
		olmcrds.OperatorCondition(),
		olmcrds.OperatorGroup(),
		olmcrds.Subscription(),
		MinimalCRD("logging.banzaicloud.io", "v1beta1", "Logging", apiextensionsv1.ClusterScoped),
		MinimalCRD("logging.banzaicloud.io", "v1beta1", "SyslogNGConfig", apiextensionsv1.NamespaceScoped),
		MinimalCRD("logging.banzaicloud.io", "v1beta1", "FluentdConfig", apiextensionsv1.NamespaceScoped),
		MinimalCRD("operator.victoriametrics.com", "v1beta1", "VMAgent", apiextensionsv1.NamespaceScoped),
		MinimalCRD("operator.victoriametrics.com", "v1beta1", "VMServiceScrape", apiextensionsv1.NamespaceScoped),
		MinimalCRD("karpenter.sh", "v1", "NodeClaim", apiextensionsv1.ClusterScoped),
	}
	for _, crd := range crds {
		if crd == nil || crd.Name == "" {
			return nil, fmt.Errorf("a CRD of github.com/operator-framework/api/crds is empty")
		}
	}
	return crds, nil
}

// MinimalCRD is a CRD that accepts any spec and status, for operators whose real schema does not
// matter to the sweeper.
func MinimalCRD(group, version, kind string, scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
	plural := strings.ToLower(kind) + "s"
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural:   plural,
				Singular: strings.ToLower(kind),
				Kind:     kind,
				ListKind: kind + "List",
			},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name:    version,
				Served:  true,
				Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:                   "object",
					XPreserveUnknownFields: ptr.To(true),
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}
