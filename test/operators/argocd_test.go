package operators

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// resourcesFinalizer is the finalizer that makes Argo CD's application-controller delete an
// Application's resources before the Application (users, the argocd CLI and ApplicationSets put it
// on).
const resourcesFinalizer = "resources-finalizer.argocd.argoproj.io"

// argoCDApplicationController is the application-controller's StatefulSet as upstream ships it
// (manifests/base/application-controller): kwok runs its pod, so the cluster sees it available;
// the controller itself runs out of cluster, as a process of the test.
const argoCDApplicationController = `
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: argocd-application-controller
  namespace: NAMESPACE
  labels: {app.kubernetes.io/name: argocd-application-controller, app.kubernetes.io/part-of: argocd, app.kubernetes.io/component: application-controller}
spec:
  replicas: 1
  serviceName: argocd-application-controller
  selector: {matchLabels: {app.kubernetes.io/name: argocd-application-controller}}
  template:
    metadata: {labels: {app.kubernetes.io/name: argocd-application-controller}}
    spec: {containers: [{name: argocd-application-controller, image: ` + cluster.ArgoCDImage + `}]}
`

// argoCDApplication is an Application APP of namespace NAMESPACE deploying to namespace DEST of
// the cluster Argo CD runs in, with resourcesFinalizer, and a ConfigMap it manages there: Argo
// CD v3 tracks what an Application manages by annotation. No repo-server runs: the Application is
// never synced, which deleting it does not need.
const argoCDApplication = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: APP, namespace: NAMESPACE, finalizers: [` + resourcesFinalizer + `]}
spec:
  project: default
  source: {repoURL: 'https://git.example.invalid/guestbook.git', path: guestbook, targetRevision: HEAD}
  destination: {server: 'https://kubernetes.default.svc', namespace: DEST}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: APP-ui, namespace: DEST, annotations: {argocd.argoproj.io/tracking-id: 'APP:/ConfigMap:DEST/APP-ui'}}
`

// TestArgoCDResourcesFinalizer runs the real Argo CD v3.2.11 application-controller against the
// real control plane. While its StatefulSet is available, an Application being deleted is kept,
// and the finding names the StatefulSet; the controller then deletes the resources the
// Application manages and removes its finalizer itself. Scaled to 0, it is warned about, nothing
// released. Uninstalled (its StatefulSet deleted), the stuck Application is released by the
// shipped config, as the CronJob's ServiceAccount, and what it managed is left in place.
func TestArgoCDResourcesFinalizer(t *testing.T) {
	setUpOnce(t)
	ctx := context.Background()
	require.NoError(t, testCluster.InstallArgoCDCRDs(ctx))
	op := operator{namespace: testCluster.NewNamespace(t, "argocd"), kind: "StatefulSet", name: "argocd-application-controller", finalizer: resourcesFinalizer,
		resource: schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}}
	dest := testCluster.NewNamespace(t, "guestbook")
	_, err := testCluster.Create(ctx, cluster.Fill(argoCDApplicationController, op.namespace))
	require.NoError(t, err)
	op.workloadHas(t, "availableReplicas", 1)
	controller, err := testCluster.StartArgoCDApplicationController(ctx, op.namespace)
	require.NoError(t, err)
	t.Cleanup(func() { _ = controller.Stop() })

	var apps []*unstructured.Unstructured
	for _, name := range []string{"lagging", "orphaned"} {
		objs, err := testCluster.Create(ctx, strings.NewReplacer("APP", name, "NAMESPACE", op.namespace, "DEST", dest).Replace(argoCDApplication))
		require.NoError(t, err)
		apps = append(apps, objs[0])
	}
	op.releaseAtCleanup(t, apps)
	for _, a := range apps {
		testCluster.Eventually(t, time.Minute, "the controller reconciles Application "+a.GetName(), func() bool {
			now, err := op.objects().Get(ctx, a.GetName(), metav1.GetOptions{})
			if err != nil {
				return false
			}
			reconciled, _, _ := unstructured.NestedString(now.Object, "status", "reconciledAt")
			return reconciled != ""
		})
	}
	// managed gets the ConfigMap app manages.
	managed := func(app *unstructured.Unstructured) error {
		_, err := testCluster.Kube.CoreV1().ConfigMaps(dest).Get(ctx, app.GetName()+"-ui", metav1.GetOptions{})
		return err
	}
	lagging, orphaned := apps[0], apps[1]

	// Running, as far as the cluster can tell (its StatefulSet available), but lagging: the
	// process is stopped while an Application is deleted.
	require.NoError(t, controller.Stop())
	op.keptWhileAvailable(t, lagging)

	// Back, the controller deletes what the Application manages, then removes its finalizer.
	controller, err = testCluster.StartArgoCDApplicationController(ctx, op.namespace)
	require.NoError(t, err)
	op.gone(t, lagging, "the controller finalizes the deleted Application")
	err = managed(lagging)
	assert.True(t, apierrors.IsNotFound(err), "the controller deleted the ConfigMap the Application managed: %v", err)
	require.NoError(t, controller.Stop())

	op.warnedWhenScaledToZero(t, orphaned)
	// Uninstalled, released: what it managed is left in place, as releasing the finalizer by hand
	// leaves it.
	op.releasedWhenUninstalled(t, orphaned)
	assert.NoError(t, managed(orphaned), "the ConfigMap the released Application managed is left")
}
