package rules

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ruleCode is the code of package rules (its test files aside), parsed for what each rule reads
// through the helpers it calls: the tests of the rules' declarations check them against it. A
// method called on anything but the caller's own receiver is followed by its name, to the methods
// of that name of every type the code reached names (in a declaration, a signature, a literal), so
// what a rule is found to reach can be more than it does, never less; a closure is within the
// body of the function that makes it.
type ruleCode struct {
	fset *token.FileSet
	// nodes are the functions ("name"), methods ("Type.name"), types ("Type") and package-level
	// variables ("name") by key.
	nodes map[string]codeNode
	// methods are the keys of the methods of each name.
	methods map[string][]string
	// consts are the package's string constants and variables, by name.
	consts map[string]string
	// resources are the package-level Resources (resources.go's table), by name.
	resources map[string]schema.GroupResource
	imports   map[string]bool
}

type codeNode struct {
	node ast.Node
	// typ is a method's receiver type, and receiver its name; isType marks a type.
	typ, receiver string
	isType        bool
	file          string
}

func parseRuleCode(t *testing.T) *ruleCode {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	c := &ruleCode{fset: token.NewFileSet(), nodes: map[string]codeNode{}, methods: map[string][]string{},
		consts: map[string]string{}, resources: map[string]schema.GroupResource{}, imports: map[string]bool{}}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(c.fset, name, nil, 0)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			local := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				local = imp.Name.Name
			}
			c.imports[local] = true
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if decl.Recv == nil {
					c.nodes[decl.Name.Name] = codeNode{node: decl, file: name}
					continue
				}
				field := decl.Recv.List[0]
				typ := field.Type
				if star, ok := typ.(*ast.StarExpr); ok {
					typ = star.X
				}
				if generic, ok := typ.(*ast.IndexExpr); ok {
					typ = generic.X
				}
				node := codeNode{node: decl, typ: typ.(*ast.Ident).Name, file: name}
				if len(field.Names) > 0 {
					node.receiver = field.Names[0].Name
				}
				key := node.typ + "." + decl.Name.Name
				c.nodes[key] = node
				c.methods[decl.Name.Name] = append(c.methods[decl.Name.Name], key)
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						c.nodes[spec.Name.Name] = codeNode{node: spec.Type, isType: true, file: name}
					case *ast.ValueSpec:
						c.value(spec, name)
					}
				}
			}
		}
	}
	return c
}

// value records the package-level variables and constants of spec.
func (c *ruleCode) value(spec *ast.ValueSpec, file string) {
	for i, id := range spec.Names {
		if i >= len(spec.Values) {
			continue
		}
		value := spec.Values[i]
		c.nodes[id.Name] = codeNode{node: value, file: file}
		if lit, ok := value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			c.consts[id.Name], _ = strconv.Unquote(lit.Value)
		}
		if call, ok := value.(*ast.CallExpr); ok && len(call.Args) == 5 {
			if fn, ok := call.Fun.(*ast.Ident); ok && fn.Name == "known" {
				group, _ := c.stringOf(call.Args[0])
				resource, _ := c.stringOf(call.Args[2])
				c.resources[id.Name] = schema.GroupResource{Group: group, Resource: resource}
			}
		}
	}
}

// reach returns the keys of the code reachable from the methods of a type.
func (c *ruleCode) reach(typ string) []string {
	seen := map[string]bool{}
	called := map[string]bool{} // the names of the methods called on other than a receiver
	queue := []string{typ}
	for key, node := range c.nodes {
		if node.typ == typ {
			queue = append(queue, key)
		}
	}
	for len(queue) > 0 {
		key := queue[0]
		queue = queue[1:]
		if seen[key] {
			continue
		}
		seen[key] = true
		if c.nodes[key].isType {
			for name := range called {
				if _, ok := c.nodes[key+"."+name]; ok {
					queue = append(queue, key+"."+name)
				}
			}
		}
		refs, methods := c.refs(key)
		queue = append(queue, refs...)
		for _, name := range methods {
			called[name] = true
			for _, method := range c.methods[name] {
				if seen[c.nodes[method].typ] {
					queue = append(queue, method)
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// refs are the keys the code of key refers to (functions, variables, types, and the methods it
// calls on its own receiver), and the names of the methods it calls on anything else.
func (c *ruleCode) refs(key string) (refs, methods []string) {
	node := c.nodes[key]
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok {
				switch {
				case c.imports[x.Name] && c.nodes[x.Name].node == nil:
					return false
				case node.receiver != "" && x.Name == node.receiver:
					if _, ok := c.nodes[node.typ+"."+n.Sel.Name]; ok {
						refs = append(refs, node.typ+"."+n.Sel.Name)
					}
					return false
				}
			}
			methods = append(methods, n.Sel.Name)
			ast.Inspect(n.X, visit)
			return false
		case *ast.Ident:
			if other, ok := c.nodes[n.Name]; ok && other.typ == "" {
				refs = append(refs, n.Name)
			}
		}
		return true
	}
	ast.Inspect(node.node, visit)
	return refs, methods
}

// annotationLookups are the annotation keys the code of keys looks up (obj.Annotations[key]),
// and where each use of annotations of another kind is. Object.go's code, which keeps annotations
// and reads none, is left out.
func (c *ruleCode) annotationLookups(keys []string) (lookups map[string][]string, other []string) {
	lookups = map[string][]string{}
	for _, key := range keys {
		if c.nodes[key].file == "object.go" {
			continue
		}
		indexed := map[ast.Expr]bool{}
		ast.Inspect(c.nodes[key].node, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.IndexExpr:
				if sel, ok := n.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Annotations" {
					indexed[sel] = true
					where := c.fset.Position(n.Pos()).String()
					if annotation, ok := c.stringOf(n.Index); ok {
						lookups[annotation] = append(lookups[annotation], where)
					} else {
						other = append(other, where+": look annotations up by a literal or constant key")
					}
				}
			case *ast.SelectorExpr:
				if n.Sel.Name == "Annotations" && !indexed[n] {
					other = append(other, c.fset.Position(n.Pos()).String()+": annotations used other than by key")
				}
			}
			return true
		})
	}
	return lookups, other
}

// viewQueries are the package-level Resources the code of keys asks a view for objects of, with
// where: view.List(Secrets.GroupResource()), and the same of r ranging over a list of them
// (for _, r := range olmRBACResources, or []Resource{Secrets, ConfigMaps}); Get, InNamespace and
// Observed alike.
func (c *ruleCode) viewQueries(keys []string) map[string][]string {
	queries := map[string][]string{}
	for _, key := range keys {
		ranged := map[string][]string{} // the Resources a loop variable ranges over, by its name
		ast.Inspect(c.nodes[key].node, func(n ast.Node) bool {
			if loop, ok := n.(*ast.RangeStmt); ok {
				if v, ok := loop.Value.(*ast.Ident); ok {
					ast.Inspect(loop.X, func(x ast.Node) bool {
						if id, ok := x.(*ast.Ident); ok {
							ranged[v.Name] = append(ranged[v.Name], c.resourcesIn(id.Name, map[string]bool{})...)
						}
						return true
					})
				}
			}
			return true
		})
		ast.Inspect(c.nodes[key].node, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			fn, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !slices.Contains([]string{"List", "InNamespace", "Get", "Observed"}, fn.Sel.Name) {
				return true
			}
			arg, ok := call.Args[0].(*ast.CallExpr)
			if !ok {
				return true
			}
			if gr, ok := arg.Fun.(*ast.SelectorExpr); ok && gr.Sel.Name == "GroupResource" {
				if r, ok := gr.X.(*ast.Ident); ok {
					resources := ranged[r.Name]
					if _, ok := c.resources[r.Name]; ok {
						resources = []string{r.Name}
					}
					for _, name := range resources {
						queries[name] = append(queries[name], c.fset.Position(call.Pos()).String())
					}
				}
			}
			return true
		})
	}
	return queries
}

// resourcesIn are the package-level Resources a package-level variable's value names, itself
// or through other variables.
func (c *ruleCode) resourcesIn(name string, seen map[string]bool) []string {
	if _, ok := c.resources[name]; ok {
		return []string{name}
	}
	node, ok := c.nodes[name]
	if !ok || node.typ != "" || node.isType || seen[name] {
		return nil
	}
	seen[name] = true
	if _, ok := node.node.(*ast.FuncDecl); ok {
		return nil
	}
	var out []string
	ast.Inspect(node.node, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name != name {
			out = append(out, c.resourcesIn(id.Name, seen)...)
		}
		return true
	})
	return out
}

func (c *ruleCode) stringOf(expr ast.Expr) (string, bool) {
	switch expr := expr.(type) {
	case *ast.BasicLit:
		if expr.Kind == token.STRING {
			s, err := strconv.Unquote(expr.Value)
			return s, err == nil
		}
	case *ast.Ident:
		s, ok := c.consts[expr.Name]
		return s, ok
	}
	return "", false
}

// keys are the keys of all the package's code.
func (c *ruleCode) keys() []string {
	return slices.Sorted(maps.Keys(c.nodes))
}

// everyRule is every rule: the registry's, with their default arguments, and preflight's.
func everyRule(t *testing.T) []Rule {
	t.Helper()
	all := []Rule{NewPreflight(Uninstall{}, Settings{}, false, false)}
	for _, reg := range Registry() {
		rule, err := reg.New(nil, Settings{})
		require.NoError(t, err, reg.Name)
		all = append(all, rule)
	}
	return all
}

// typeName is the name of a rule's type, as its methods' receivers name it.
func typeName(rule Rule) string {
	return reflect.TypeOf(rule).Name()
}

// TestRulesDeclareWhatTheyReadWhole: each shard of a split sweep reads whole only what the enabled
// rules declare (WholeReader), so a rule declares every resource it reads in full, and every
// resource of the table it asks the view for objects of, in its own code or a helper's
// (view.List(Secrets.GroupResource()), and the same over a list of the table's). A resource it
// asks for by a kind known only at run time (an Operator's components) it need not: those are
// the objects it reports on, which the shard that owns them sees.
func TestRulesDeclareWhatTheyReadWhole(t *testing.T) {
	code := parseRuleCode(t)
	for _, rule := range everyRule(t) {
		declared := map[schema.GroupResource]bool{}
		if reader, ok := rule.(WholeReader); ok {
			for _, gr := range reader.ReadsWhole() {
				declared[gr] = true
			}
		}
		if reader, ok := rule.(ContentReader); ok {
			for _, req := range reader.ReadsContent() {
				assert.True(t, declared[req.Resource], "%s reads %s in full: add it to its ReadsWhole", rule.Name(), req.Resource)
			}
		}
		for name, where := range code.viewQueries(code.reach(typeName(rule))) {
			assert.True(t, declared[code.resources[name]], "%s asks the view for %s (%s): add them to its ReadsWhole", rule.Name(), code.resources[name], where[0])
		}
	}
}

// TestAdmissionWithinWrites: what a rule's Admission lets the admission policy allow is a write
// the rule declares it may make (Writes): the policy never lets through more than the rules do.
func TestAdmissionWithinWrites(t *testing.T) {
	for _, rule := range everyRule(t) {
		authorized, ok := rule.(Authorized)
		if !ok {
			continue
		}
		admission := authorized.Admission()
		for _, r := range admission.Deletes {
			assert.True(t, Allows(authorized, Delete{}.Type(), r.GroupResource()), "%s's Admission lets it delete %s, which it does not write", rule.Name(), r)
		}
		for _, o := range admission.Owners {
			assert.True(t, Allows(authorized, SetOwnerReferences{}.Type(), o.Resource.GroupResource()), "%s's Admission lets it give %s owners, which it does not write", rule.Name(), o.Resource)
			assert.NotEmpty(t, o.Owner, rule.Name())
		}
		if admission.When != "" {
			assert.NotEmpty(t, admission.Deletes, "%s's Admission has a When for no delete", rule.Name())
		}
	}
}
