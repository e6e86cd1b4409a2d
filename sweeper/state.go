package sweeper

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-sweeper/operator-sweeper/input"
)

// podSecurityEnforce is the label by which a namespace enforces a Pod Security Standard.
const podSecurityEnforce = "pod-security.kubernetes.io/enforce"

// EnsureStateNamespace makes sure namespace, where a run that writes keeps its signing key (and,
// without --backup-dir, its pre-images), is there before anything is planned. A run by hand on a
// cluster where the sweeper is not installed creates it as the shipped manifests do (restricted
// Pod Security), when the user may, and says so; when the user may not, or it is being deleted,
// the run stops with an input.Error that says what to do, rather than fail every write.
func EnsureStateNamespace(ctx context.Context, c *Clients, namespace string) (created bool, err error) {
	namespaces := c.Dynamic.Resource(corev1.SchemeGroupVersion.WithResource("namespaces"))
	ns, err := namespaces.Get(ctx, namespace, metav1.GetOptions{})
	switch {
	case err == nil && ns.GetDeletionTimestamp() != nil:
		return false, input.Errorf("namespace %s, where a run that writes keeps its signing key and pre-images, is being deleted: "+
			"wait until it is gone, or name another with --sweeper-namespace", namespace)
	case err == nil:
		return false, nil
	case apierrors.IsForbidden(err):
		// Whether it is there cannot be told (a ServiceAccount granted only Secrets in its own
		// namespace, which is there): the writes will say.
		return false, nil
	case !apierrors.IsNotFound(err):
		return false, fmt.Errorf("read namespace %s, where a run that writes keeps its signing key and pre-images: %w", namespace, err)
	}
	ns = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata":   map[string]any{"name": namespace, "labels": map[string]any{podSecurityEnforce: "restricted"}},
	}}
	_, err = namespaces.Create(ctx, ns, metav1.CreateOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsAlreadyExists(err):
		return false, nil
	case apierrors.IsForbidden(err):
		return false, input.Errorf("namespace %s, where a run that writes keeps its signing key and pre-images, does not exist and you may not create it: "+
			"kubectl create namespace %s, or name an existing one with --sweeper-namespace (--backup-dir keeps the pre-images in files, the key still in the namespace)",
			namespace, namespace)
	}
	return false, fmt.Errorf("create namespace %s, where a run that writes keeps its signing key and pre-images: %w", namespace, err)
}
