package sweeper

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// inventory is what discovery found.
type inventory struct {
	// resources are the resources to walk.
	resources []rules.Resource
	// unlisted are served resources the filters leave out.
	unlisted []schema.GroupResource
	// undiscovered are the API groups whose discovery failed.
	undiscovered []string
	problems     []report.Error
}

// inventory returns the resources to walk: the server's preferred version of every resource that
// supports list, filtered by --include-resources and --exclude-resources. A group whose discovery
// fails (typically an aggregated API whose backend is down) is reported and the rest is walked;
// only a discovery that yields nothing at all fails the stage.
func (e *Engine) inventory(ctx context.Context) (inventory, error) {
	lists, err := e.Clients.Discovery.ServerPreferredResourcesWithContext(ctx)
	var inv inventory
	var failed *discovery.ErrGroupDiscoveryFailed
	switch {
	case errors.As(err, &failed):
		for gv, gerr := range failed.Groups {
			inv.undiscovered = append(inv.undiscovered, gv.Group)
			inv.problems = append(inv.problems, report.Error{Stage: report.StageInventory, Resource: gv.String(), Message: gerr.Error()})
		}
		slices.SortFunc(inv.problems, func(a, b report.Error) int { return cmp.Compare(a.Resource, b.Resource) })
	case err != nil:
		return inv, fmt.Errorf("discover the server's API resources: %w", err)
	}

	include, exclude := patterns(e.Config.IncludeResources), patterns(e.Config.ExcludeResources)
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			inv.problems = append(inv.problems, report.Error{Stage: report.StageInventory, Resource: list.GroupVersion, Message: err.Error()})
			continue
		}
		for _, r := range list.APIResources {
			// Subresources (pods/log, …) are not objects of their own.
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			res := rules.Resource{GroupVersionResource: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced}
			if (len(include) > 0 && !include.matchResource(res)) || exclude.matchResource(res) {
				inv.unlisted = append(inv.unlisted, res.GroupResource())
				continue
			}
			inv.resources = append(inv.resources, res)
		}
	}
	slices.SortFunc(inv.resources, func(a, b rules.Resource) int { return cmp.Compare(a.String(), b.String()) })
	if failed != nil && len(lists) == 0 {
		return inv, fmt.Errorf("discover the server's API resources: every API group failed: %w", err)
	}
	return inv, nil
}

// patterns are globs (path.Match syntax) for resource or namespace names; Options.Validate has
// checked their syntax.
type patterns []string

func (p patterns) match(name string) bool {
	return slices.ContainsFunc(p, func(pattern string) bool {
		ok, _ := path.Match(pattern, name)
		return ok
	})
}

// matchResource matches a pattern with a dot ("deployments.apps", "*.operators.coreos.com")
// against resource.group, and a pattern without one ("pods", "events") against the resource name
// in any group.
func (p patterns) matchResource(r rules.Resource) bool {
	full := r.String()
	return slices.ContainsFunc(p, func(pattern string) bool {
		name := full
		if !strings.Contains(pattern, ".") {
			name = r.Resource
		}
		ok, _ := path.Match(pattern, name)
		return ok
	})
}

// namespaceFilter decides which namespaces the run looks at.
type namespaceFilter struct {
	include, exclude patterns
}

func (f namespaceFilter) active() bool { return len(f.include) > 0 || len(f.exclude) > 0 }

func (f namespaceFilter) allows(namespace string) bool {
	return (len(f.include) == 0 || f.include.match(namespace)) && !f.exclude.match(namespace)
}
