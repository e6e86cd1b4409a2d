// Package preflight answers "if I uninstall this operator now, what will be stuck?": it resolves
// what a user uninstalls (a workload, a Helm release, an OLM Subscription or CSV) into what goes
// with it, for rule preflight to judge, and waits for a drain's deletes to finish.
package preflight

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/operator-sweeper/operator-sweeper/input"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// The types of target, as the command line names them.
const (
	TypeDeployment   = "deployment"
	TypeStatefulSet  = "statefulset"
	TypeDaemonSet    = "daemonset"
	TypeHelm         = "helm"
	TypeSubscription = "subscription"
	TypeCSV          = "csv"
	// TypeClusterExtension is an OLM v1 ClusterExtension, cluster-scoped.
	TypeClusterExtension = "clusterextension"
)

// Target is what `operator-sweeper preflight` is asked about: TYPE/NAME of what a user
// uninstalls, in Namespace.
type Target struct {
	Type, Name, Namespace string
}

// canonicalType is the type kubectl's names (plural, short) stand for, "" if none.
func canonicalType(typ string) string {
	switch strings.ToLower(typ) {
	case "deployment", "deployments", "deploy", "deployment.apps", "deployments.apps":
		return TypeDeployment
	case "statefulset", "statefulsets", "sts", "statefulset.apps", "statefulsets.apps":
		return TypeStatefulSet
	case "daemonset", "daemonsets", "ds", "daemonset.apps", "daemonsets.apps":
		return TypeDaemonSet
	case "helm", "release", "helmrelease":
		return TypeHelm
	case "subscription", "subscriptions", "sub", "subs", "subscription.operators.coreos.com", "subscriptions.operators.coreos.com":
		return TypeSubscription
	case "csv", "csvs", "clusterserviceversion", "clusterserviceversions", "clusterserviceversion.operators.coreos.com", "clusterserviceversions.operators.coreos.com":
		return TypeCSV
	case "clusterextension", "clusterextensions", "ce", "clusterextension.olm.operatorframework.io", "clusterextensions.olm.operatorframework.io":
		return TypeClusterExtension
	}
	return ""
}

// ParseTarget parses TYPE/NAME; every type is namespaced, so namespace must be given.
func ParseTarget(arg, namespace string) (Target, error) {
	typ, name, ok := strings.Cut(arg, "/")
	if !ok || typ == "" || name == "" || strings.Contains(name, "/") {
		return Target{}, input.Errorf("preflight %q: give what you uninstall as TYPE/NAME, such as helm/logging-operator or deployment/logging-operator, with -n NAMESPACE", arg)
	}
	canonical := canonicalType(typ)
	if canonical == "" {
		return Target{}, input.Errorf("preflight %q: unknown type %q; use deployment, statefulset, daemonset, helm, subscription, csv or clusterextension", arg, typ)
	}
	if problems := validation.IsDNS1123Subdomain(name); len(problems) > 0 {
		return Target{}, input.Errorf("preflight %q: %q is not a name: %s", arg, name, strings.Join(problems, "; "))
	}
	if canonical == TypeClusterExtension {
		return Target{Type: canonical, Name: name}, nil // cluster-scoped: -n means nothing
	}
	if namespace == "" {
		return Target{}, input.Errorf("preflight %q: give its namespace with -n", arg)
	}
	return Target{Type: canonical, Name: name, Namespace: namespace}, nil
}

func (t Target) String() string {
	if t.Namespace == "" {
		return t.Type + "/" + t.Name
	}
	return t.Type + "/" + t.Name + " -n " + t.Namespace
}

// Resolve reads what goes with the target: the workloads that run its controllers, its CRDs,
// Services, webhook configurations and APIServices. A target that does not exist is an
// input.Error.
func Resolve(ctx context.Context, clients *sweeper.Clients, t Target) (rules.Uninstall, error) {
	switch t.Type {
	case TypeDeployment, TypeStatefulSet, TypeDaemonSet:
		resource := map[string]rules.Resource{TypeDeployment: rules.Deployments, TypeStatefulSet: rules.StatefulSets, TypeDaemonSet: rules.DaemonSets}[t.Type]
		obj, err := get(ctx, clients, resource, t.Namespace, t.Name)
		if err != nil {
			return rules.Uninstall{}, err
		}
		return rules.Uninstall{
			Target:    fmt.Sprintf("%s %s/%s", obj.GetKind(), t.Namespace, t.Name),
			Workloads: []rules.ObjectKey{{Resource: resource.GroupResource(), Namespace: t.Namespace, Name: t.Name}},
		}, nil
	case TypeHelm:
		return resolveRelease(ctx, clients, t.Namespace, t.Name)
	case TypeSubscription:
		return resolveSubscription(ctx, clients, t.Namespace, t.Name)
	case TypeCSV:
		return resolveCSV(ctx, clients, t.Namespace, t.Name, "")
	case TypeClusterExtension:
		return resolveClusterExtension(ctx, clients, t.Name)
	}
	return rules.Uninstall{}, input.Errorf("preflight %s: unknown type %q", t, t.Type)
}

// get reads one object with its content: a list by name, as the sweep reads (the shipped RBAC
// grants list, not get). Not found is an input.Error.
func get(ctx context.Context, clients *sweeper.Clients, r rules.Resource, namespace, name string) (*unstructured.Unstructured, error) {
	list, err := clients.Dynamic.Resource(r.GroupVersionResource).Namespace(namespace).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	where := ""
	if namespace != "" {
		where = " in namespace " + namespace
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, input.Errorf("preflight: the cluster serves no %s: is the operator that defines %s installed? (%w)", r.GroupResource(), r.Kind, err)
	case err != nil:
		return nil, fmt.Errorf("read %s %s%s: %w", r.Kind, name, where, err)
	case len(list.Items) == 0:
		return nil, input.Errorf("preflight: %s %q not found%s", r.Kind, name, where)
	}
	return &list.Items[0], nil
}

// key is the ObjectKey of an object of resource r.
func key(r rules.Resource, namespace, name string) rules.ObjectKey {
	return rules.ObjectKey{Resource: r.GroupResource(), Namespace: namespace, Name: name}
}

// resourceOf is the resource of a manifest's apiVersion and kind, if it is one a
// preflight asks about.
func resourceOf(apiVersion, kind string) (rules.Resource, bool) {
	gk := schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind()
	for _, r := range []rules.Resource{rules.Deployments, rules.StatefulSets, rules.DaemonSets, rules.Services,
		rules.CustomResourceDefinitions, rules.ValidatingWebhookConfigurations, rules.MutatingWebhookConfigurations, rules.APIServices} {
		if r.Group == gk.Group && r.Kind == gk.Kind {
			return r, true
		}
	}
	return rules.Resource{}, false
}
