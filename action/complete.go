package action

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/preflight"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// completionTimeout bounds what a completion reads of the cluster: a shell waits for it.
const completionTimeout = 3 * time.Second

// Completion is what a shell may complete of a TYPE/NAME argument: the types a command takes, and
// the names of the objects of one, read from the cluster the options name (--kubeconfig,
// --context) within completionTimeout. What cannot be read in time is left out: a completion
// never fails.
type Completion struct {
	// Options are the command's, as parsed so far (not checked).
	Options *options.Options
	// Namespace is -n, if given.
	Namespace string
}

// ExplainTypes are the resource types explain takes: the server's listable ones (plural names),
// by discovery; without a cluster, those the rules read.
func (c Completion) ExplainTypes(ctx context.Context) []string {
	if clients, ok := c.clients(); ok {
		ctx, cancel := context.WithTimeout(ctx, completionTimeout)
		defer cancel()
		lists, _ := clients.Discovery.ServerPreferredResourcesWithContext(ctx) // partial lists are fine
		var types []string
		for _, list := range lists {
			for _, r := range list.APIResources {
				if !strings.Contains(r.Name, "/") && slices.Contains(r.Verbs, "list") {
					types = append(types, r.Name)
				}
			}
		}
		if len(types) > 0 {
			slices.Sort(types)
			return slices.Compact(types)
		}
	}
	var types []string
	for _, r := range []rules.Resource{rules.Namespaces, rules.Nodes, rules.Pods, rules.Secrets, rules.ConfigMaps, rules.Services,
		rules.ServiceAccounts, rules.Deployments, rules.StatefulSets, rules.DaemonSets, rules.Leases, rules.ClusterRoles,
		rules.ClusterRoleBindings, rules.Roles, rules.RoleBindings, rules.MutatingWebhookConfigurations,
		rules.ValidatingWebhookConfigurations, rules.APIServices, rules.CustomResourceDefinitions, rules.Subscriptions,
		rules.InstallPlans, rules.ClusterServiceVersions, rules.Operators, rules.OperatorConditions, rules.ClusterExtensions} {
		types = append(types, r.Resource)
	}
	slices.Sort(types)
	return types
}

// ExplainNames are the names of the objects of typ (as explain takes it), in Namespace if the type
// is namespaced.
func (c Completion) ExplainNames(ctx context.Context, typ string) []string {
	clients, ok := c.clients()
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	mapper := clients.Mapper()
	gvr, err := sweeper.ResourceFor(ctx, mapper, typ)
	if err != nil {
		return nil
	}
	namespaced := true
	if gvk, err := mapper.KindForWithContext(ctx, gvr); err == nil {
		if mapping, err := mapper.RESTMappingWithContext(ctx, gvk.GroupKind(), gvk.Version); err == nil {
			namespaced = mapping.Scope.Name() == meta.RESTScopeNameNamespace
		}
	}
	return c.names(ctx, clients, gvr, namespaced, "")
}

// PreflightTypes are the types preflight takes.
func (Completion) PreflightTypes() []string {
	return []string{preflight.TypeHelm, preflight.TypeDeployment, preflight.TypeStatefulSet, preflight.TypeDaemonSet,
		preflight.TypeSubscription, preflight.TypeCSV, preflight.TypeClusterExtension}
}

// PreflightNames are the names of what preflight could uninstall as typ: Helm releases (of their
// Secrets), workloads and OLM's objects, in Namespace but for ClusterExtensions.
func (c Completion) PreflightNames(ctx context.Context, typ string) []string {
	resource, ok := map[string]rules.Resource{preflight.TypeHelm: rules.Secrets, preflight.TypeDeployment: rules.Deployments,
		preflight.TypeStatefulSet: rules.StatefulSets, preflight.TypeDaemonSet: rules.DaemonSets, preflight.TypeSubscription: rules.Subscriptions,
		preflight.TypeCSV: rules.ClusterServiceVersions, preflight.TypeClusterExtension: rules.ClusterExtensions}[typ]
	if !ok {
		return nil
	}
	clients, ok := c.clients()
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	byLabel := ""
	if typ == preflight.TypeHelm {
		byLabel = "name" // a release's Secrets are labelled owner=helm, name=<release>
	}
	return c.names(ctx, clients, resource.GroupVersionResource, resource.Namespaced, byLabel)
}

// names lists the objects of gvr (in Namespace, if namespaced) and returns their names, sorted;
// with byLabel, the values of that label of the objects labelled owner=helm instead.
func (c Completion) names(ctx context.Context, clients *sweeper.Clients, gvr schema.GroupVersionResource, namespaced bool, byLabel string) []string {
	if namespaced && c.Namespace == "" {
		return nil
	}
	var list metadata.ResourceInterface = clients.Metadata.Resource(gvr)
	if namespaced {
		list = clients.Metadata.Resource(gvr).Namespace(c.Namespace)
	}
	opts := metav1.ListOptions{Limit: 500}
	if byLabel != "" {
		opts.LabelSelector = "owner=helm"
	}
	objects, err := list.List(ctx, opts)
	if err != nil {
		return nil
	}
	var names []string
	for _, obj := range objects.Items {
		name := obj.Name
		if byLabel != "" {
			name = obj.Labels[byLabel]
		}
		if name != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// clients are the clients of the cluster the options name, for a completion: no logs, no retries
// past completionTimeout.
func (c Completion) clients() (*sweeper.Clients, bool) {
	config, _, err := sweeper.LoadRESTConfig(c.Options.Kubeconfig, c.Options.Context)
	if err != nil {
		return nil, false
	}
	cc := c.Options.ClientConfig()
	cc.RequestTimeout = completionTimeout
	clients, err := sweeper.NewClients(config, cc, slog.New(slog.DiscardHandler))
	return clients, err == nil
}
