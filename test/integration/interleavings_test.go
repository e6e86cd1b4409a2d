package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// change is something a controller or an admin does between the sweeper's view and its writes,
// after which an object the view showed as debris is owned again; protected names the writes
// that must then not happen, as "METHOD path-regexp" (NAMESPACE stands for the test's).
type change struct {
	name      string
	do        func(t *testing.T, ns string, debris map[string]*unstructured.Unstructured)
	protected []string
}

// interleavingDebris seeds, in ns, debris every rule acts on: a ClusterRole of a gone CSV
// (olm-rbac), logging-operator's Logging stuck on its finalizer (orphaned-finalizers), the
// Operator and a ConfigMap of a deleted Subscription (operator-leftovers), an InstallPlan owned
// by a deleted Subscription and used by its re-creation (installplan-owners), and a CatalogSource
// pod on a lost node among healthy ones (catalog-pods).
func interleavingDebris(t *testing.T, ns string) map[string]*unstructured.Unstructured {
	t.Helper()
	debris := map[string]*unstructured.Unstructured{}
	debris["role"] = create(t, ns, fill(olmRBAC, ns, "op.v1"))[0]
	debris["logging"] = terminate(t, ns, fill(`
apiVersion: logging.banzaicloud.io/v1beta1
kind: Logging
metadata: {name: NAMESPACE, finalizers: [fluentdconfig.logging.banzaicloud.io/finalizer]}
spec: {controlNamespace: NAMESPACE}
`, ns, ""))[0]
	objs := create(t, ns, fill(`
apiVersion: v1
kind: ConfigMap
metadata: {name: shop-settings, namespace: NAMESPACE}
---`+cluster.Operator("shop", "{apiVersion: v1, kind: ConfigMap, name: shop-settings, namespace: NAMESPACE}"), ns, ""))
	debris["settings"], debris["operator"] = objs[0], objs[1]
	f3 := seeded(t)(testCluster.SeedF3(context.Background(), ns, false))
	debris["plan"] = f3.Get("InstallPlan", "install-abcde")
	node(t, ns+"-lost", ns, "Unknown", 10*time.Minute, 10*time.Minute)
	for i := range 3 {
		node(t, fmt.Sprintf("%s-up-%d", ns, i), ns, "True", time.Hour, 5*time.Second)
	}
	debris["pod"] = catalogPodOn(t, ns, "on-lost-node", ns+"-lost", false)
	return debris
}

// interleavingChanges are what may happen between the view and the writes.
func interleavingChanges() []change {
	return []change{
		{
			name: "the CSV of the ClusterRole is installed",
			do: func(t *testing.T, ns string, _ map[string]*unstructured.Unstructured) {
				create(t, ns, fill(plainCSV, ns, "op.v1"))
			},
			protected: []string{"DELETE /clusterroles/NAMESPACE-op.v1$"},
		},
		{
			name: "OLM upgrades the operator: the ClusterRole is the new CSV's",
			do: func(t *testing.T, ns string, debris map[string]*unstructured.Unstructured) {
				create(t, ns, fill(plainCSV, ns, "op.v2"))
				patchObject(t, debris["role"], `{"metadata":{"labels":{"olm.owner":"op.v2"}}}`)
			},
			protected: []string{"DELETE /clusterroles/NAMESPACE-op.v1$"},
		},
		{
			name: "logging-operator is installed again",
			do: func(t *testing.T, ns string, _ map[string]*unstructured.Unstructured) {
				create(t, ns, deployment(cluster.LoggingOperator, "1"))
			},
			protected: []string{"PATCH /loggings/NAMESPACE$"},
		},
		{
			name: "the Subscription of the operator is re-created",
			do: func(t *testing.T, ns string, _ map[string]*unstructured.Unstructured) {
				create(t, ns, cluster.ShopSubscription)
			},
			protected: []string{"DELETE /namespaces/NAMESPACE/configmaps/shop-settings$", "DELETE /operators/shop.NAMESPACE$"},
		},
		{
			name: "the InstallPlan's Subscription is re-created once more",
			do: func(t *testing.T, ns string, _ map[string]*unstructured.Unstructured) {
				subs := testCluster.Dynamic.Resource(rules.Subscriptions.GroupVersionResource).Namespace(ns)
				sub, err := subs.Get(context.Background(), "etcd", metav1.GetOptions{})
				require.NoError(t, err)
				require.NoError(t, subs.Delete(context.Background(), "etcd", metav1.DeleteOptions{}))
				unstructured.RemoveNestedField(sub.Object, "metadata", "uid")
				unstructured.RemoveNestedField(sub.Object, "metadata", "resourceVersion")
				unstructured.RemoveNestedField(sub.Object, "metadata", "creationTimestamp")
				status := sub.Object["status"]
				sub, err = subs.Create(context.Background(), sub, metav1.CreateOptions{})
				require.NoError(t, err)
				sub.Object["status"] = status
				_, err = subs.UpdateStatus(context.Background(), sub, metav1.UpdateOptions{})
				require.NoError(t, err)
			},
			protected: []string{"PATCH /namespaces/NAMESPACE/installplans/install-abcde$"},
		},
		{
			name: "the lost node's kubelet is back",
			do: func(t *testing.T, ns string, _ map[string]*unstructured.Unstructured) {
				n, err := testCluster.Kube.CoreV1().Nodes().Get(context.Background(), ns+"-lost", metav1.GetOptions{})
				require.NoError(t, err)
				now := metav1.Now()
				n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
				_, err = testCluster.Kube.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{})
				require.NoError(t, err)
			},
			protected: []string{"DELETE /namespaces/NAMESPACE/pods/on-lost-node$"},
		},
	}
}

func patchObject(t *testing.T, obj *unstructured.Unstructured, patch string) {
	t.Helper()
	client, _, err := testCluster.Resource(obj)
	require.NoError(t, err)
	_, err = client.Patch(context.Background(), obj.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

// TestInterleavingsNeverWriteToWhatIsOwnedAgain is a property test on the real API server: for
// random subsets, in random order, of the changes above happening between the sweeper's view and
// its writes, no write reaches an object a live operator, Subscription or kubelet owns again, and
// the debris nothing changed is still cleaned up. The seed of a failing case is in its name.
func TestInterleavingsNeverWriteToWhatIsOwnedAgain(t *testing.T) {
	changes := interleavingChanges()
	for seed := range uint64(16) {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		var chosen []change
		for _, i := range rng.Perm(len(changes)) {
			if rng.IntN(2) == 0 {
				chosen = append(chosen, changes[i])
			}
		}
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			ns := testCluster.NewNamespace(t)
			debris := interleavingDebris(t, ns) // the sweep's clock is an hour ahead: all of it is old
			var names []string
			opts := shippedOptions(t)
			opts.CatalogPodSlack.Duration = 0
			opts.RuleConfigs[rules.OperatorLeftoversName] = rules.RuleConfig{Args: rules.OperatorLeftoversArgs{Delete: []string{"ConfigMap", "Operator.operators.coreos.com"}}}
			rec := &recorder{}

			sweepChanging(t, opts, rec, func() {
				for _, c := range chosen {
					names = append(names, c.name)
					c.do(t, ns, debris)
				}
			})

			protected := map[string]bool{}
			for _, c := range chosen {
				for _, write := range c.protected {
					protected[write] = true
					method, path, _ := strings.Cut(strings.ReplaceAll(write, "NAMESPACE", ns), " ")
					assert.Empty(t, rec.writes(method, path), "after %q: no %s", c.name, write)
				}
			}
			for _, c := range changes {
				for _, write := range c.protected {
					if !protected[write] {
						method, path, _ := strings.Cut(strings.ReplaceAll(write, "NAMESPACE", ns), " ")
						assert.NotEmpty(t, rec.writes(method, path), "nothing changed its owner: %s is done (changes: %v)", write, names)
					}
				}
			}
		})
	}
}
