package sweeper

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/operator-sweeper/operator-sweeper/input"
)

// Target is the object `operator-sweeper explain` is asked about: TYPE/NAME as kubectl takes it
// (namespace/logging, syslogngconfig.logging.banzaicloud.io/s1, apiservice/v1.packages.operators.coreos.com),
// and, for a namespaced type, its namespace.
type Target struct {
	Type, Name, Namespace string
}

// ParseTarget parses TYPE/NAME.
func ParseTarget(arg, namespace string) (Target, error) {
	typ, name, ok := strings.Cut(arg, "/")
	if !ok || typ == "" || name == "" || strings.Contains(name, "/") {
		return Target{}, input.Errorf("explain %q: give the object as TYPE/NAME, such as namespace/logging or apiservice/v1.packages.operators.coreos.com", arg)
	}
	return Target{Type: typ, Name: name, Namespace: namespace}, nil
}

func (t Target) String() string { return t.Type + "/" + t.Name }

// Resolve finds the target's resource as kubectl would (plural, singular, kind or short name,
// with an optional group), and the object's UID, with a name for it: "Namespace logging".
func (c *Clients) Resolve(ctx context.Context, t Target) (types.UID, string, error) {
	mapper := c.Mapper()
	gvr, err := ResourceFor(ctx, mapper, t.Type)
	switch {
	case meta.IsNoMatchError(err):
		return "", "", input.Errorf("explain %s: the server has no resource type %q (%w)", t, t.Type, err)
	case err != nil:
		return "", "", fmt.Errorf("explain %s: discover the resource type %q: %w", t, t.Type, err)
	}
	gvk, err := mapper.KindForWithContext(ctx, gvr)
	if err != nil {
		return "", "", input.Errorf("explain %s: %w", t, err)
	}
	mapping, err := mapper.RESTMappingWithContext(ctx, gvk.GroupKind(), gvk.Version)
	if err != nil {
		return "", "", input.Errorf("explain %s: %w", t, err)
	}
	namespace := ""
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if t.Namespace == "" {
			return "", "", input.Errorf("explain %s: %s is namespaced: give its namespace with -n", t, gvr.GroupResource())
		}
		namespace = t.Namespace
	}
	// A list by name, as the sweep's confirmation reads: the shipped RBAC grants list, not get.
	list, err := resourceClient(c.Metadata, gvr, namespace).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + t.Name})
	switch {
	case err != nil:
		return "", "", fmt.Errorf("explain %s: read it: %w", t, err)
	case len(list.Items) == 0:
		where := ""
		if namespace != "" {
			where = " in namespace " + namespace
		}
		return "", "", input.Errorf("explain %s: %s %q not found%s", t, gvr.GroupResource(), t.Name, where)
	}
	obj := list.Items[0]
	what := gvk.Kind + " " + t.Name
	if namespace != "" {
		what = gvk.Kind + " " + namespace + "/" + t.Name
	}
	return obj.UID, what, nil
}

// Mapper maps types to resources as kubectl does: by discovery, cached for the run, short names
// included.
func (c *Clients) Mapper() meta.RESTMapperWithContext {
	cached := memory.NewMemCacheClientWithContext(c.Discovery)
	return restmapper.NewShortcutExpanderWithContext(restmapper.NewDeferredDiscoveryRESTMapperWithContext(cached), cached, nil)
}

// ResourceFor maps TYPE to a resource: "resource.version.group" if it parses as one, else
// "resource.group" or "resource".
func ResourceFor(ctx context.Context, mapper meta.RESTMapperWithContext, typ string) (schema.GroupVersionResource, error) {
	full, partial := schema.ParseResourceArg(strings.ToLower(typ))
	if full != nil {
		if gvr, err := mapper.ResourceForWithContext(ctx, *full); err == nil {
			return gvr, nil
		}
	}
	return mapper.ResourceForWithContext(ctx, partial.WithVersion(""))
}
