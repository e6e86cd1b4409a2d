package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// The field cases of DESIGN §1, seeded as they happen in a cluster: each in a namespace of its
// own, cluster-scoped objects named after that namespace. In manifests, NAMESPACE stands for it.

// Fill replaces NAMESPACE in manifests.
func Fill(manifests, namespace string) string {
	return strings.ReplaceAll(manifests, "NAMESPACE", namespace)
}

// Seeded is what a field case created and left in place.
type Seeded struct {
	Objects []*unstructured.Unstructured
}

// Get returns the seeded object of a kind and name, or nil.
func (s Seeded) Get(kind, name string) *unstructured.Unstructured {
	for _, obj := range s.Objects {
		if obj.GetKind() == kind && obj.GetName() == name {
			return obj
		}
	}
	return nil
}

func (s *Seeded) add(objs []*unstructured.Unstructured, err error) error {
	s.Objects = append(s.Objects, objs...)
	return err
}

// F1CSV is a ClusterServiceVersion OLM marked with its csv-cleanup finalizer.
const F1CSV = `
apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: etcdoperator.v0.9.4
  namespace: NAMESPACE
  finalizers: [operators.coreos.com/csv-cleanup]
  labels: {operators.coreos.com/etcd.NAMESPACE: ""}
spec:
  displayName: etcd
  install: {strategy: deployment, spec: {deployments: []}}
`

// F1Cleanup is what OLM created for the CSV and its csv-cleanup finalizer deletes.
const F1Cleanup = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: NAMESPACE-role
  labels: {olm.owner: etcdoperator.v0.9.4, olm.owner.namespace: NAMESPACE, olm.owner.kind: ClusterServiceVersion, operators.coreos.com/etcd.NAMESPACE: ""}
rules: [{apiGroups: [etcd.database.coreos.com], resources: [etcdclusters], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: NAMESPACE-binding
  labels: {olm.owner: etcdoperator.v0.9.4, olm.owner.namespace: NAMESPACE, olm.owner.kind: ClusterServiceVersion, operators.coreos.com/etcd.NAMESPACE: ""}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: NAMESPACE-role}
subjects: [{kind: ServiceAccount, name: etcd-operator, namespace: NAMESPACE}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: NAMESPACE-webhook
  labels: {olm.owner: etcdoperator.v0.9.4, olm.owner.namespace: NAMESPACE, olm.owner.kind: ClusterServiceVersion}
webhooks: []
`

// SeedF1 leaves a CSV Terminating on OLM's csv-cleanup finalizer, with the RBAC and webhook
// configuration the finalizer stands for; whether OLM is there is up to the caller.
func (c *Cluster) SeedF1(ctx context.Context, namespace string) (Seeded, error) {
	var s Seeded
	if err := s.add(c.Create(ctx, Fill(F1Cleanup, namespace))); err != nil {
		return s, err
	}
	return s, s.add(c.Terminate(ctx, Fill(F1CSV, namespace)))
}

// The etcd operator as OLM installs it in NAMESPACE: its CRD, in a group of the namespace's own
// so that tests do not share it, and its CSV, which owns the CRD and carries the label OLM puts
// on the components of Operator etcd.NAMESPACE; and the two as that Operator lists them.
const (
	etcdCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: etcdclusters.NAMESPACE.test.operator-sweeper.io}
spec:
  group: NAMESPACE.test.operator-sweeper.io
  scope: Namespaced
  names: {plural: etcdclusters, singular: etcdcluster, kind: EtcdCluster, listKind: EtcdClusterList}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`
	etcdCSV = `
apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata: {name: etcdoperator.v0.9.4, namespace: NAMESPACE, labels: {operators.coreos.com/etcd.NAMESPACE: ""}}
spec:
  displayName: etcd
  install: {strategy: deployment, spec: {deployments: []}}
  customresourcedefinitions:
    owned: [{name: etcdclusters.NAMESPACE.test.operator-sweeper.io, version: v1, kind: EtcdCluster}]
`
	etcdCRDRef = `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, name: etcdclusters.NAMESPACE.test.operator-sweeper.io}`
	etcdCSVRef = `{apiVersion: operators.coreos.com/v1alpha1, kind: ClusterServiceVersion, name: etcdoperator.v0.9.4, namespace: NAMESPACE}`
)

// operator is the Operator object OLM keeps for the package PACKAGE installed in NAMESPACE.
const operator = `
apiVersion: operators.coreos.com/v1
kind: Operator
metadata: {name: PACKAGE.NAMESPACE}
status:
  components:
    labelSelector: {matchExpressions: [{key: operators.coreos.com/PACKAGE.NAMESPACE, operator: Exists}]}
    refs: [REFS]
`

// Operator is the Operator object OLM keeps for package pkg installed in NAMESPACE: it selects
// the package's components by the label OLM puts on them, and lists refs, each a flow mapping of
// a component's apiVersion, kind, name and, if it is namespaced, namespace.
func Operator(pkg string, refs ...string) string {
	return strings.NewReplacer("PACKAGE", pkg, "REFS", strings.Join(refs, ", ")).Replace(operator)
}

// F2Leftovers is what a deleted Subscription leaves: its Operator lists a CSV, an InstallPlan, a
// ClusterRole and a CRD.
var F2Leftovers = etcdCRD + "---" + etcdCSV + `---
apiVersion: operators.coreos.com/v1alpha1
kind: InstallPlan
metadata: {name: install-f2, namespace: NAMESPACE, labels: {operators.coreos.com/etcd.NAMESPACE: ""}}
spec: {approval: Automatic, approved: true, clusterServiceVersionNames: [etcdoperator.v0.9.4]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: NAMESPACE-etcd, labels: {operators.coreos.com/etcd.NAMESPACE: ""}}
rules: []
---` + Operator("etcd", etcdCSVRef,
	`{apiVersion: operators.coreos.com/v1alpha1, kind: InstallPlan, name: install-f2, namespace: NAMESPACE}`,
	`{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, name: NAMESPACE-etcd}`,
	etcdCRDRef)

// EtcdRunning is the etcd operator running without its Subscription, deleted on purpose or being
// re-created: not left behind, but unmanaged. Its CSV succeeded and installed a Deployment, which
// has an available replica: the live evidence that it runs. Its Operator lists the CSV and the CRD.
var EtcdRunning = etcdCRD + "---" +
	strings.Replace(etcdCSV, "deployments: []", "deployments: [{name: etcd-operator, spec: {selector: {matchLabels: {name: etcd-operator}}, template: {}}}]", 1) +
	"status: {phase: Succeeded, reason: InstallSucceeded}\n---" +
	Operator("etcd", etcdCSVRef, etcdCRDRef) + `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: etcd-operator, namespace: NAMESPACE}
spec:
  selector: {matchLabels: {name: etcd-operator}}
  template:
    metadata: {labels: {name: etcd-operator}}
    spec: {containers: [{name: etcd-operator, image: quay.io/coreos/etcd-operator:v0.9.4}]}
status: {replicas: 1, readyReplicas: 1, availableReplicas: 1}
`

// ShopSubscription is a Subscription to package shop in NAMESPACE, from the community catalog.
const ShopSubscription = `
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {name: shop, namespace: NAMESPACE}
spec: {channel: stable, name: shop, source: operatorhubio-catalog, sourceNamespace: olm}
`

// SeedF2 leaves what a deleted Subscription leaves.
func (c *Cluster) SeedF2(ctx context.Context, namespace string) (Seeded, error) {
	var s Seeded
	return s, s.add(c.Create(ctx, Fill(F2Leftovers, namespace)))
}

// SeedF3 reproduces operator-lifecycle-manager#3199 as it happens: a Manual Subscription and the
// InstallPlan OLM made for it (owned by it, as OLM writes it, next to an unrelated owner); the
// Subscription is deleted, and one of the same name, Automatic, takes the plan over in
// status.installPlanRef, or in the deprecated status.installplan if legacy.
func (c *Cluster) SeedF3(ctx context.Context, namespace string, legacy bool) (Seeded, error) {
	var s Seeded
	const subscription = `
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {name: etcd, namespace: NAMESPACE}
spec: {channel: singlenamespace-alpha, name: etcd, source: operatorhubio-catalog, sourceNamespace: olm, installPlanApproval: APPROVAL}
`
	manual, err := c.Create(ctx, Fill(strings.ReplaceAll(subscription, "APPROVAL", "Manual"), namespace))
	if err != nil {
		return s, err
	}
	if err := s.add(c.Create(ctx, Fill("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep, namespace: NAMESPACE}\n", namespace))); err != nil {
		return s, err
	}
	plan := fmt.Sprintf(`
apiVersion: operators.coreos.com/v1alpha1
kind: InstallPlan
metadata:
  name: install-abcde
  namespace: NAMESPACE
  ownerReferences:
  - {apiVersion: operators.coreos.com/v1alpha1, kind: Subscription, name: etcd, uid: %s, controller: false, blockOwnerDeletion: false}
  - {apiVersion: v1, kind: ConfigMap, name: keep, uid: %s}
spec: {approval: Manual, approved: false, clusterServiceVersionNames: [etcdoperator.v0.9.4]}
`, manual[0].GetUID(), s.Objects[0].GetUID())
	if err := s.add(c.Create(ctx, Fill(plan, namespace))); err != nil {
		return s, err
	}
	if _, err := c.Delete(ctx, manual[0]); err != nil {
		return s, err
	}
	installPlan := s.Get("InstallPlan", "install-abcde")
	ref := fmt.Sprintf("installPlanRef: {apiVersion: operators.coreos.com/v1alpha1, kind: InstallPlan, name: install-abcde, namespace: NAMESPACE, uid: %s, resourceVersion: %q}",
		installPlan.GetUID(), installPlan.GetResourceVersion())
	if legacy {
		ref = fmt.Sprintf("installplan: {apiVersion: operators.coreos.com/v1alpha1, kind: InstallPlan, name: install-abcde, uuid: %s}", installPlan.GetUID())
	}
	automatic := strings.ReplaceAll(subscription, "APPROVAL", "Automatic") +
		"status:\n  lastUpdated: \"2026-11-23T10:00:00Z\"\n  state: UpgradePending\n  " + ref + "\n"
	return s, s.add(c.Create(ctx, Fill(automatic, namespace)))
}

// LoggingOperator is the Deployment the logging-operator chart installs; REPLICAS stands for its
// replicas.
const LoggingOperator = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: logging-operator
  namespace: NAMESPACE
  labels: {app.kubernetes.io/name: logging-operator, app.kubernetes.io/instance: logging-operator}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app.kubernetes.io/name: logging-operator}}
  template:
    metadata: {labels: {app.kubernetes.io/name: logging-operator}}
    spec: {containers: [{name: logging-operator, image: ghcr.io/kube-logging/logging-operator:5.0.0}]}
`

// F4Debris is what `helm uninstall` of logging-operator and of the chart holding a site's logging
// configuration leaves (kube-logging/logging-operator#1859): the Logging, stuck on the finalizers
// logging-operator puts on Loggings only (controllers/logging/logging_controller.go), the
// FluentdConfig and SyslogNGConfig they waited for deleted with the chart.
const F4Debris = `
apiVersion: logging.banzaicloud.io/v1beta1
kind: Logging
metadata:
  name: NAMESPACE
  finalizers:
  - fluentdconfig.logging.banzaicloud.io/finalizer
  - syslogngconfig.logging.banzaicloud.io/finalizer
  - telemetrycontroller.logging.banzaicloud.io/finalizer
spec: {controlNamespace: NAMESPACE}
`

// SeedF4 leaves logging-operator's Logging Terminating on its finalizers; whether logging-operator
// is there is up to the caller.
func (c *Cluster) SeedF4(ctx context.Context, namespace string) (Seeded, error) {
	var s Seeded
	return s, s.add(c.Terminate(ctx, Fill(F4Debris, namespace)))
}

// VictoriaMetricsDebris is what `helm uninstall` of victoria-metrics-k8s-stack leaves when Helm
// deletes the operator first (VictoriaMetrics/helm-charts#2726): its objects stuck on
// apps.victoriametrics.com/finalizer in their namespace, and the operator's validating webhook,
// whose Service is gone and which fails closed on every update of them, the release of their
// finalizers included.
const VictoriaMetricsDebris = `
apiVersion: operator.victoriametrics.com/v1beta1
kind: VMAgent
metadata: {name: vm-stack, namespace: NAMESPACE, finalizers: [apps.victoriametrics.com/finalizer]}
---
apiVersion: operator.victoriametrics.com/v1beta1
kind: VMServiceScrape
metadata: {name: vm-stack-kubelet, namespace: NAMESPACE, finalizers: [apps.victoriametrics.com/finalizer]}
`

// VictoriaMetricsWebhook is the victoria-metrics-operator chart's admission webhook
// configuration, left by Helm with the release's metadata; it matches the namespace only.
const VictoriaMetricsWebhook = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: NAMESPACE-victoria-metrics-operator-admission
  labels: {app.kubernetes.io/managed-by: Helm, app.kubernetes.io/name: victoria-metrics-operator}
  annotations: {meta.helm.sh/release-name: vm-stack, meta.helm.sh/release-namespace: NAMESPACE}
webhooks:
- name: vmagents.operator.victoriametrics.com
  clientConfig: {service: {namespace: NAMESPACE, name: vm-stack-victoria-metrics-operator, path: /validate-operator-victoriametrics-com-v1beta1-vmagent}}
  rules: [{apiGroups: [operator.victoriametrics.com], apiVersions: [v1beta1], operations: [CREATE, UPDATE], resources: [vmagents, vmservicescrapes]}]
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: NAMESPACE}}
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
`

// SeedVictoriaMetrics leaves VictoriaMetrics' objects Terminating in namespace, then the
// operator's dead webhook, and deletes the namespace: it stays Terminating until they are
// released, and the webhook refuses their release.
func (c *Cluster) SeedVictoriaMetrics(ctx context.Context, namespace string) (Seeded, error) {
	var s Seeded
	if err := s.add(c.Terminate(ctx, Fill(VictoriaMetricsDebris, namespace))); err != nil {
		return s, err
	}
	if err := s.add(c.Create(ctx, Fill(VictoriaMetricsWebhook, namespace))); err != nil {
		return s, err
	}
	return s, c.Kube.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{})
}

// CatalogPod is an OLM registry pod bound to node NODE.
const CatalogPod = `
apiVersion: v1
kind: Pod
metadata:
  name: POD
  namespace: NAMESPACE
  labels: {olm.catalogSource: operatorhubio-catalog, olm.managed: "true", olm.pod-spec-hash: 5b6f7d}
spec:
  nodeName: NODE
  containers: [{name: registry-server, image: quay.io/operatorhubio/catalog:latest}]
`

// F5Pods are the pods SeedF5 leaves, and whether they are on a lost node: Unknown for 10
// minutes, or gone. The others are on a Ready node, and on one Unknown for a minute.
var F5Pods = map[string]bool{
	"on-lost-node":              true,
	"on-missing-node":           true,
	"on-ready-node":             false,
	"on-node-lost-a-minute-ago": false,
}

// SeedF5 leaves CatalogSource pods Terminating, deleted with a grace period that no kubelet
// confirms, on nodes named after the namespace.
func (c *Cluster) SeedF5(ctx context.Context, namespace string, grace time.Duration) (Seeded, error) {
	var s Seeded
	node := func(name, status string, ago time.Duration) error {
		since := time.Now().Add(-ago).UTC().Format(time.RFC3339)
		return s.add(c.Create(ctx, fmt.Sprintf(`
apiVersion: v1
kind: Node
metadata: {name: %s-%s}
status:
  conditions:
  - {type: Ready, status: %q, reason: NodeStatusUnknown, message: Kubelet stopped posting node status., lastHeartbeatTime: %q, lastTransitionTime: %q}
`, namespace, name, status, since, since)))
	}
	for _, err := range []error{node("lost", "Unknown", 10*time.Minute), node("ready", "True", time.Hour), node("flaky", "Unknown", time.Minute)} {
		if err != nil {
			return s, err
		}
	}
	for pod, nodeName := range map[string]string{"on-lost-node": "lost", "on-missing-node": "missing", "on-ready-node": "ready", "on-node-lost-a-minute-ago": "flaky"} {
		manifest := strings.NewReplacer("POD", pod, "NODE", namespace+"-"+nodeName).Replace(Fill(CatalogPod, namespace))
		created, err := c.Create(ctx, manifest)
		if err != nil {
			return s, err
		}
		if err := c.Kube.CoreV1().Pods(namespace).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(grace.Seconds()))}); err != nil {
			return s, fmt.Errorf("delete pod %s/%s: %w", namespace, pod, err)
		}
		s.Objects = append(s.Objects, created...)
	}
	return s, nil
}
