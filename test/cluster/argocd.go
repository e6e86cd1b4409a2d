package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ArgoCDImage is the image of Argo CD's components as upstream ships them, at the version
// hack/testbin.sh builds.
const ArgoCDImage = "quay.io/argoproj/argocd:v3.2.11"

// InstallArgoCDCRDs installs Argo CD's CRDs (Application, AppProject, ApplicationSet: those of its
// module's manifests/crds, which hack/testbin.sh copies) unless they are installed, and waits until
// they are served.
func (c *Cluster) InstallArgoCDCRDs(ctx context.Context) error {
	return c.installCRDFolder(ctx, "argocd-crds")
}

// argoCDSettings are what of Argo CD's install the application-controller reads in its namespace:
// its settings (argocd-cm and argocd-secret, found by their part-of label; empty, the defaults)
// and the AppProject "default", which lets Applications deploy anything anywhere.
const argoCDSettings = `
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: NAMESPACE, labels: {app.kubernetes.io/name: argocd-cm, app.kubernetes.io/part-of: argocd}}
---
apiVersion: v1
kind: Secret
metadata: {name: argocd-secret, namespace: NAMESPACE, labels: {app.kubernetes.io/name: argocd-secret, app.kubernetes.io/part-of: argocd}}
type: Opaque
---
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: default, namespace: NAMESPACE}
spec:
  sourceRepos: ['*']
  destinations: [{namespace: '*', server: '*'}]
  clusterResourceWhitelist: [{group: '*', kind: '*'}]
`

// ArgoCDApplicationController is the real Argo CD application-controller running out of
// cluster, with the Redis it caches in.
type ArgoCDApplicationController struct {
	redis, controller *Process
}

// StartArgoCDApplicationController creates Argo CD's settings and AppProject "default" in
// namespace unless they exist, then runs a Redis (Debian's redis-server, on PATH) and the real
// application-controller out of cluster, with the admin kubeconfig, managing the Applications of
// namespace. With ARGOCD_FAKE_IN_CLUSTER, the in-cluster destination
// (https://kubernetes.default.svc) is the cluster of that kubeconfig, as it is in cluster. It
// needs no repo-server to finalize a deleted Application: it deletes the Application's resources
// it finds live, then removes resources-finalizer.argocd.argoproj.io. It runs in a restart loop
// and elects no leader. Stop it to stop both.
func (c *Cluster) StartArgoCDApplicationController(ctx context.Context, namespace string) (*ArgoCDApplicationController, error) {
	settings, err := Decode(Fill(argoCDSettings, namespace))
	if err != nil {
		return nil, err
	}
	for _, obj := range settings {
		client, _, err := c.Resource(obj)
		if err != nil {
			return nil, err
		}
		if _, err := client.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create %s %s/%s: %w", obj.GetKind(), namespace, obj.GetName(), err)
		}
	}
	redisPort, err := freePort()
	if err != nil {
		return nil, err
	}
	redis, err := c.startRedis(redisPort)
	if err != nil {
		return nil, err
	}
	metricsPort, err := freePort()
	if err != nil {
		_ = redis.Stop()
		return nil, err
	}
	controller, err := c.startProcess("argocd-application-controller", "argocd-application-controller", true,
		[]string{"KUBECONFIG=" + c.Kubeconfig, "ARGOCD_FAKE_IN_CLUSTER=true"},
		"--namespace="+namespace,
		"--redis=127.0.0.1:"+strconv.Itoa(redisPort),
		// No repo-server runs: refreshes cannot get the Application's manifests, which deleting
		// an Application does not need (finalizeApplicationDeletion works from the live state).
		"--repo-server=127.0.0.1:1",
		"--metrics-port="+strconv.Itoa(metricsPort),
		"--logformat=text",
		"--loglevel=debug",
	)
	if err != nil {
		_ = redis.Stop()
		return nil, err
	}
	return &ArgoCDApplicationController{redis: redis, controller: controller}, nil
}

// Stop stops the application-controller, then its Redis.
func (a *ArgoCDApplicationController) Stop() error {
	return errors.Join(a.controller.Stop(), a.redis.Stop())
}

// startRedis runs Debian's redis-server on port, without persistence, in a restart loop. Unlike
// the control plane's binaries it is not in KUBEBUILDER_ASSETS: hack/debian-tools.sh installs it.
func (c *Cluster) startRedis(port int) (*Process, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server is not installed: run the tests through make (make test installs the Debian package redis-server), or apt-get install redis-server")
	}
	p, err := c.startBinary("redis-"+strconv.Itoa(port), bin, true, nil,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", c.LogDir)
	if err != nil {
		return nil, err
	}
	address := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if conn, err := net.Dial("tcp", address); err == nil {
			conn.Close()
			return p, nil
		}
	}
	_ = p.Stop()
	return nil, fmt.Errorf("redis-server does not listen on %s; see %s", address, p.Log)
}
