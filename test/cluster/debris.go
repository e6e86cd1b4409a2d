package cluster

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DemoDebris is what an uninstalled logging-operator and an uninstalled OLM leave behind, plus
// one object whose finalizer no known operator owns. Everything in it is Terminating.
const DemoDebris = `
apiVersion: logging.banzaicloud.io/v1beta1
kind: Logging
metadata:
  name: all-to-file
  finalizers:
  - fluentdconfig.logging.banzaicloud.io/finalizer
  - syslogngconfig.logging.banzaicloud.io/finalizer
  - telemetrycontroller.logging.banzaicloud.io/finalizer
spec:
  controlNamespace: logging
---
apiVersion: logging.banzaicloud.io/v1beta1
kind: SyslogNGConfig
metadata:
  name: syslog-ng
  namespace: logging
  finalizers:
  - syslogngconfig.logging.banzaicloud.io/finalizer
---
apiVersion: logging.banzaicloud.io/v1beta1
kind: FluentdConfig
metadata:
  name: fluentd
  namespace: logging
  finalizers:
  - fluentdconfig.logging.banzaicloud.io/finalizer
---
apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: etcdoperator.v0.9.4
  namespace: operators
  finalizers:
  - operators.coreos.com/csv-cleanup
spec:
  displayName: etcd
  install:
    strategy: deployment
    spec:
      deployments: []
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: checkout-settings
  namespace: shop
  finalizers:
  - shop.example.com/archive
data:
  currency: EUR
`

// DemoAlive is what is not Terminating: the namespaces, a healthy object, and the RBAC OLM made
// for the CSV, which its csv-cleanup finalizer stands for.
const DemoAlive = `
apiVersion: v1
kind: Namespace
metadata:
  name: logging
---
apiVersion: v1
kind: Namespace
metadata:
  name: operators
---
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: storefront
  namespace: shop
data:
  theme: dark
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: etcdoperator.v0.9.4-7d9f8
  labels: {olm.owner: etcdoperator.v0.9.4, olm.owner.namespace: operators, olm.owner.kind: ClusterServiceVersion}
rules:
- {apiGroups: [etcd.database.coreos.com], resources: [etcdclusters], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: etcdoperator.v0.9.4-7d9f8
  labels: {olm.owner: etcdoperator.v0.9.4, olm.owner.namespace: operators, olm.owner.kind: ClusterServiceVersion}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: etcdoperator.v0.9.4-7d9f8}
subjects:
- {kind: ServiceAccount, name: etcd-operator, namespace: operators}
`

// SeedDemo creates the demo's debris and leaves it Terminating. The logging namespace is deleted
// too and, with its objects stuck, hangs Terminating as in the field.
func SeedDemo(ctx context.Context, c *Cluster) error {
	if _, err := c.Create(ctx, DemoAlive); err != nil {
		return fmt.Errorf("seed healthy objects: %w", err)
	}
	if _, err := c.Terminate(ctx, DemoDebris); err != nil {
		return fmt.Errorf("seed debris: %w", err)
	}
	if err := c.Kube.CoreV1().Namespaces().Delete(ctx, "logging", metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete namespace logging: %w", err)
	}
	return nil
}
