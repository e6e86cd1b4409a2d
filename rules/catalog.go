package rules

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// The catalog is what the sweeper knows of the field's operators: one file per operator in
// rules/catalog, each entry a controller mapping (the schema of the config file's finalizers:
// entries) that also says what the finalizer stands for and where that was checked upstream.
// It is embedded in the binary, loaded and validated once; docs/catalog.md is generated from it.
//
//go:embed catalog/*.yaml
var catalogFiles embed.FS

// CatalogOperator is one file of the catalog: an operator, and what its finalizers stand for.
type CatalogOperator struct {
	// Name is the operator's name, and its file's: rules/catalog/<name>.yaml.
	Name string `json:"name"`
	// Category is the kind of operator it is, one of Categories.
	Category string `json:"category"`
	// Description says in a line what the operator manages.
	Description string `json:"description"`
	// Repository is where its source lives, "github.com/<owner>/<name>".
	Repository string `json:"repository"`
	// Finalizers are its controller mappings, each with its consequence and source.
	Finalizers []FinalizerOwner `json:"finalizers"`
}

// Categories are the kinds of operators the catalog covers, in the order docs/catalog.md lists
// them.
var Categories = []string{
	"operator-lifecycle",
	"node-provisioning",
	"cluster-lifecycle",
	"cloud-resources",
	"load-balancing",
	"networking",
	"service-mesh",
	"database",
	"storage",
	"backup",
	"gitops",
	"ci-cd",
	"certificates",
	"secrets",
	"policy",
	"observability",
	"messaging",
	"workloads",
}

// Catalog returns the catalog's operators, in the order of their file names. The catalog is
// parsed and validated once; an invalid one is an error of every run (and a failure of the
// tests that load it).
func Catalog() ([]CatalogOperator, error) {
	operators, err := loadCatalog()
	if err != nil {
		return nil, err
	}
	out := make([]CatalogOperator, len(operators))
	for i, op := range operators {
		out[i] = op
		out[i].Finalizers = slices.Clone(op.Finalizers)
	}
	return out, nil
}

// DefaultFinalizerOwners are the catalog's controller mappings, operator by operator in the
// catalog's order, each operator's in its file's order. A config file's entries come first, and
// replace the catalog's of the same pattern and resources (see NewFinalizerMappings).
func DefaultFinalizerOwners() ([]FinalizerOwner, error) {
	operators, err := loadCatalog()
	if err != nil {
		return nil, err
	}
	var owners []FinalizerOwner
	for _, op := range operators {
		owners = append(owners, op.Finalizers...)
	}
	return owners, nil
}

// loadCatalog parses and validates the embedded catalog, once: it is data compiled into the
// binary, the same for every run.
var loadCatalog = sync.OnceValues(func() ([]CatalogOperator, error) {
	return parseCatalog(catalogFiles, "catalog")
})

// parseCatalog reads every <name>.yaml of dir in fsys, strictly, and validates each: every
// problem is named with its file and key.
func parseCatalog(fsys embed.FS, dir string) ([]CatalogOperator, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read the catalog: %w", err)
	}
	var operators []CatalogOperator
	var errs []error
	keys := map[string]string{} // mapping key → file
	for _, entry := range entries {
		file := dir + "/" + entry.Name()
		data, err := fsys.ReadFile(file)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", file, err))
			continue
		}
		op, err := ParseCatalogFile(file, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i, owner := range op.Finalizers {
			key := keyOf(owner)
			if other, dup := keys[key]; dup {
				errs = append(errs, fmt.Errorf("%s: finalizers[%d] (%s) is in %s too: one entry a pattern and resources", file, i, key, other))
			}
			keys[key] = file
		}
		operators = append(operators, op)
	}
	if len(operators) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("the catalog is empty"))
	}
	return operators, errors.Join(errs...)
}

// ParseCatalogFile parses and validates one file of the catalog, rules/catalog/<name>.yaml: every
// problem is named with the file and its key.
func ParseCatalogFile(file string, data []byte) (CatalogOperator, error) {
	var op CatalogOperator
	if err := yaml.UnmarshalStrict(data, &op); err != nil {
		return op, fmt.Errorf("%s: %w", file, err)
	}
	name := strings.TrimSuffix(file[strings.LastIndex(file, "/")+1:], ".yaml")
	if err := op.validate(name); err != nil {
		return op, prefixed(file+": ", err)
	}
	return op, nil
}

// validate checks an operator's file: what it names, and each entry as the catalog needs it —
// what a config entry needs, and its consequence, what it stands for, the resources it is on, the
// workloads that serve it and the source it was checked against.
func (op CatalogOperator) validate(fileName string) error {
	var errs []error
	if op.Name != fileName {
		errs = append(errs, fmt.Errorf("name %q is not the file's name %q", op.Name, fileName))
	}
	if !slices.Contains(Categories, op.Category) {
		errs = append(errs, fmt.Errorf("category %q is not one of %s", op.Category, strings.Join(Categories, ", ")))
	}
	if op.Description == "" {
		errs = append(errs, errors.New("description is empty: say in a line what the operator manages"))
	}
	if !strings.HasPrefix(op.Repository, "github.com/") && !strings.Contains(op.Repository, "/") {
		errs = append(errs, fmt.Errorf("repository %q is not a repository (github.com/<owner>/<name>)", op.Repository))
	}
	if len(op.Finalizers) == 0 {
		errs = append(errs, errors.New("no finalizers: an operator is in the catalog for its finalizers"))
	}
	for i, owner := range op.Finalizers {
		errs = append(errs, validateEntry(fmt.Sprintf("finalizers[%d]", i), owner))
	}
	return errors.Join(errs...)
}

// validateEntry checks one catalog entry.
func validateEntry(key string, owner FinalizerOwner) error {
	var errs []error
	if owner.Protect || owner.Guards != "" || owner.Cascades != "" {
		errs = append(errs, fmt.Errorf("%s (%s): protect, guards and cascades are the config file's former spelling; use consequence and stands-for", key, owner.Pattern))
	}
	if _, err := compileMapping(key, owner); err != nil {
		errs = append(errs, err)
	}
	if owner.Consequence == ConsequenceUnknown {
		errs = append(errs, fmt.Errorf("%s (%s): no consequence: local, cascades or guards (when the source does not make it clear: guards)", key, owner.Pattern))
	}
	if owner.StandsFor == "" {
		errs = append(errs, fmt.Errorf("%s (%s): stands-for is empty: say what the controller does before it removes the finalizer", key, owner.Pattern))
	}
	if owner.Consequence == ConsequenceGuards && owner.Remedy == "" {
		errs = append(errs, fmt.Errorf("%s (%s): remedy is empty: say what to do before the finalizer may be removed by hand", key, owner.Pattern))
	}
	if len(owner.Controllers) == 0 {
		errs = append(errs, fmt.Errorf("%s (%s): no controllers: name the workloads that serve the finalizer", key, owner.Pattern))
	}
	if len(owner.Resources) == 0 {
		errs = append(errs, fmt.Errorf("%s (%s): no resources: name the resources the finalizer is on", key, owner.Pattern))
	}
	for j, glob := range owner.Resources {
		if _, err := resourceRule(glob); err != nil && owner.Consequence.Releasable() {
			errs = append(errs, fmt.Errorf("%s.resources[%d]: %w", key, j, err))
		}
	}
	switch s := owner.Source; {
	case s == nil:
		errs = append(errs, fmt.Errorf("%s (%s): no source: name the repository, release and files it was checked against", key, owner.Pattern))
	case s.Repository == "" || s.Release == "" || len(s.Files) == 0 || slices.Contains(s.Files, ""):
		errs = append(errs, fmt.Errorf("%s.source: name the repository, the release and the files it was checked against", key))
	}
	return errors.Join(errs...)
}

// resourceRule is a resource glob of an entry as the group and resource an RBAC rule names: the
// group must be literal, the resource literal or "*".
func resourceRule(glob string) (struct{ Group, Resource string }, error) {
	resource, group, _ := strings.Cut(glob, ".")
	var out struct{ Group, Resource string }
	if strings.ContainsAny(group, `*?[\`) || (resource != "*" && strings.ContainsAny(resource, `*?[\`)) {
		return out, fmt.Errorf("%q: a finalizer that may be released names its resources with a literal group and a literal resource or *, for the RBAC that releases it", glob)
	}
	out.Group, out.Resource = group, resource
	return out, nil
}

// prefixed prefixes every line of err.
func prefixed(prefix string, err error) error {
	var b bytes.Buffer
	for i, line := range strings.Split(err.Error(), "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(prefix + line)
	}
	return errors.New(b.String())
}

// releasePolicy is the RBAC that releasing the mappings' finalizers needs: get (to re-read after
// a lost race) and patch on the resources of every mapping whose consequence lets it be released,
// one PolicyRule per API group in order of first appearance. A mapping without resources, or with
// a resource glob no RBAC rule can name, needs its grant added by hand.
func (m FinalizerMappings) releasePolicy() []rbacv1.PolicyRule {
	var policy []rbacv1.PolicyRule
	for _, mapping := range m.mappings {
		if !mapping.Consequence.Releasable() {
			continue
		}
		for _, glob := range mapping.Resources {
			r, err := resourceRule(glob)
			if err != nil {
				continue
			}
			i := slices.IndexFunc(policy, func(p rbacv1.PolicyRule) bool { return p.APIGroups[0] == r.Group })
			if i < 0 {
				policy = append(policy, policyRule(r.Group, nil, "get", "patch"))
				i = len(policy) - 1
			}
			switch resources := policy[i].Resources; {
			case slices.Contains(resources, "*"):
			case r.Resource == "*":
				policy[i].Resources = []string{"*"}
			case !slices.Contains(resources, r.Resource):
				policy[i].Resources = append(resources, r.Resource)
			}
		}
	}
	return policy
}
