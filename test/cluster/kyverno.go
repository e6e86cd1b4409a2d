package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kyverno's admission controller as its chart installs it (release kyverno, in namespace
// kyverno), at the version hack/testbin.sh builds.
const (
	KyvernoNamespace  = "kyverno"
	KyvernoImage      = "ghcr.io/kyverno/kyverno:v1.19.1"
	KyvernoDeployment = "kyverno-admission-controller"
	// KyvernoService is the Service its webhook configurations call.
	KyvernoService = "kyverno-svc"
	// KyvernoClusterRoleBinding grants its ServiceAccount what it does: the chart's binding of its
	// aggregated ClusterRole, here to cluster-admin.
	KyvernoClusterRoleBinding = "kyverno:admission-controller"
	// KyvernoWebhookLabel is on every webhook configuration Kyverno registers.
	KyvernoWebhookLabel = "webhook.kyverno.io/managed-by"
)

// kyvernoInstall is what of the chart's objects the admission controller needs: its ServiceAccount
// and binding, its two ConfigMaps (the webhooks leave its own namespace alone, as the chart's
// default config says), its Service, and its Deployment, whose pod kwok runs while the controller
// itself runs out of cluster, as a process of the test. The Service has no selector: its endpoint
// is the process, which the EndpointSlice StartKyverno writes names, as the EndpointSlice controller
// would name the pod.
const kyvernoInstall = `
apiVersion: v1
kind: ServiceAccount
metadata: {name: kyverno-admission-controller, namespace: kyverno, labels: {app.kubernetes.io/component: admission-controller, app.kubernetes.io/instance: kyverno, app.kubernetes.io/part-of: kyverno}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "kyverno:admission-controller", labels: {app.kubernetes.io/component: admission-controller, app.kubernetes.io/instance: kyverno, app.kubernetes.io/part-of: kyverno}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: kyverno-admission-controller, namespace: kyverno}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kyverno, namespace: kyverno, labels: {app.kubernetes.io/component: config, app.kubernetes.io/instance: kyverno, app.kubernetes.io/part-of: kyverno}}
data:
  enableDefaultRegistryMutation: "true"
  defaultRegistry: docker.io
  generateSuccessEvents: "false"
  webhooks: '[{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kyverno"]}]}}]'
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kyverno-metrics, namespace: kyverno, labels: {app.kubernetes.io/component: config, app.kubernetes.io/instance: kyverno, app.kubernetes.io/part-of: kyverno}}
data: {namespaces: '{"exclude":[],"include":[]}'}
---
apiVersion: v1
kind: Service
metadata: {name: kyverno-svc, namespace: kyverno, labels: {app.kubernetes.io/component: admission-controller, app.kubernetes.io/instance: kyverno, app.kubernetes.io/part-of: kyverno}}
spec:
  ports: [{name: https, port: 443, protocol: TCP, targetPort: https}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: kyverno-admission-controller, namespace: kyverno, labels: {app.kubernetes.io/component: admission-controller, app.kubernetes.io/instance: kyverno, app.kubernetes.io/part-of: kyverno}}
spec:
  replicas: 1
  selector: {matchLabels: {app.kubernetes.io/component: admission-controller, app.kubernetes.io/instance: kyverno, app.kubernetes.io/part-of: kyverno}}
  template:
    metadata: {labels: {app.kubernetes.io/component: admission-controller, app.kubernetes.io/instance: kyverno, app.kubernetes.io/part-of: kyverno}}
    spec:
      serviceAccountName: kyverno-admission-controller
      containers: [{name: kyverno, image: "` + KyvernoImage + `", ports: [{name: https, containerPort: 9443}]}]
`

// kyvernoEndpoints is the EndpointSlice of Kyverno's Service: its one endpoint is the process, on
// the loopback address. An IPv4 slice may not name a loopback address, an FQDN one may, and
// kube-apiserver, routing to endpoints (Components.EndpointRouting), dials it as it is.
const kyvernoEndpoints = `
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kyverno-svc-process
  namespace: kyverno
  labels: {kubernetes.io/service-name: kyverno-svc, endpointslice.kubernetes.io/managed-by: operator-sweeper-tests}
addressType: FQDN
endpoints: [{addresses: ["127.0.0.1"], conditions: {ready: true}}]
ports: [{name: https, port: PORT, protocol: TCP}]
`

// InstallKyvernoCRDs installs Kyverno's CRDs (those of its module's config/crds, which
// hack/testbin.sh copies) unless they are installed, and waits until they are served.
func (c *Cluster) InstallKyvernoCRDs(ctx context.Context) error {
	return c.installCRDFolder(ctx, "kyverno-crds")
}

// InstallKyverno creates namespace kyverno and what of the chart's objects the admission controller
// needs (kyvernoInstall); then StartKyverno runs it.
func (c *Cluster) InstallKyverno(ctx context.Context) error {
	if err := c.CreateNamespace(ctx, KyvernoNamespace); err != nil {
		return err
	}
	_, err := c.Create(ctx, kyvernoInstall)
	return err
}

// StartKyverno runs the real Kyverno admission controller out of cluster, as its ServiceAccount,
// serving its webhooks on a free loopback port, which the EndpointSlice of its Service names. It
// makes its own CA and serving certificate, registers its own webhook configurations, and deletes
// them when it is stopped after its Deployment is deleted, if its ServiceAccount still may.
// InstallKyverno first. Stop the process to stop it.
func (c *Cluster) StartKyverno(ctx context.Context) (*Process, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	if _, err := c.Create(ctx, strings.ReplaceAll(kyvernoEndpoints, "PORT", strconv.Itoa(port))); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	kubeconfig, err := c.serviceAccountKubeconfig(KyvernoNamespace, KyvernoDeployment)
	if err != nil {
		return nil, err
	}
	tlsName := KyvernoService + "." + KyvernoNamespace + ".svc"
	p, err := c.startProcess("kyverno", "kyverno", false, []string{
		"KYVERNO_NAMESPACE=" + KyvernoNamespace,
		"KYVERNO_SERVICEACCOUNT_NAME=" + KyvernoDeployment,
		"KYVERNO_DEPLOYMENT=" + KyvernoDeployment,
		"KYVERNO_POD_NAME=" + KyvernoDeployment + "-0",
		"KYVERNO_SVC=" + KyvernoService,
		"INIT_CONFIG=kyverno",
		"METRICS_CONFIG=kyverno-metrics",
	},
		"--kubeconfig="+kubeconfig,
		"--caSecretName="+tlsName+".kyverno-tls-ca",
		"--tlsSecretName="+tlsName+".kyverno-tls-pair",
		"--servicePort=443",
		"--webhookServerHost=127.0.0.1",
		"--webhookServerPort="+strconv.Itoa(port),
		"--disableMetrics=true",
		"--controllerRuntimeMetricsAddress=0",
		"--autoMemLimitEnabled=false",
		"--admissionReports=false",
		"--webhookTimeout=5",
		"--loggingFormat=text",
		"--disableLogColor",
		"-v=2",
	)
	if err != nil {
		return nil, err
	}
	address := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if conn, err := net.Dial("tcp", address); err == nil {
			conn.Close()
			return p, nil
		}
	}
	_ = p.Stop()
	return nil, fmt.Errorf("kyverno does not serve its webhooks on %s; see %s", address, p.Log)
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as ServiceAccount
// namespace/name, with a client certificate of the username and groups its tokens carry: revoking
// its ClusterRoleBinding revokes what the process may do, as for a pod.
func (c *Cluster) serviceAccountKubeconfig(namespace, name string) (string, error) {
	now := time.Now()
	cert, key, err := c.ClientCertificate("system:serviceaccount:"+namespace+":"+name,
		[]string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}, now.Add(-time.Hour), now.Add(24*time.Hour))
	if err != nil {
		return "", err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: c.Config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: name}
	cfg.CurrentContext = name
	path := filepath.Join(c.dir, "kubeconfig-"+namespace+"-"+name)
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("write the kubeconfig of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return path, os.Chmod(path, 0o600)
}

// UninstallKyverno does what `helm uninstall kyverno` does when Kyverno's own clean-up cannot run
// (kyverno#2623, #3039): it deletes the chart's objects at once, its ClusterRoleBinding among them,
// so that the pod, terminated, may no longer delete the webhook configurations it registered,
// which stay; then the namespace goes. It returns once the namespace is gone.
func (c *Cluster) UninstallKyverno(ctx context.Context, process *Process) error {
	objs, err := Decode(kyvernoInstall)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if _, err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	// The pod is terminated once its Deployment is gone, as the ReplicaSet's garbage collection
	// goes: by then Kyverno has seen its Deployment go (it cleans up only then), and the API
	// server its binding.
	time.Sleep(2 * time.Second)
	if err := process.Stop(); err != nil {
		return err
	}
	if err := c.Kube.CoreV1().Namespaces().Delete(ctx, KyvernoNamespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if _, err := c.Kube.CoreV1().Namespaces().Get(ctx, KyvernoNamespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
	}
	return fmt.Errorf("namespace %s is not gone after 2 minutes", KyvernoNamespace)
}
