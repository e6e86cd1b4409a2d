// Command generate writes what is derived from the rules' declarations and the operator catalog,
// as controller-gen writes RBAC from markers:
//
//   - the rules of the ClusterRoles in manifests/base/rbac.yaml and the chart's templates/rbac.yaml:
//     of operator-sweeper-walk, what the walk needs; of operator-sweeper, what the rules the shipped
//     config enables declare they need to act (rules.Authorized), and the Events;
//   - the rules of each opt-in's ClusterRole operator-sweeper-<rule>, in its component
//     manifests/components/opt-in-<rule>/rbac.yaml and in the chart's templates/opt-ins.yaml: what
//     the rule declares once built from the arguments its opt-in covers (rules.OptedIn). An opt-in
//     whose component has no rbac.yaml (dead-webhooks) needs nothing the ClusterRole
//     operator-sweeper does not grant already, or generate fails;
//   - of the admission policy, in manifests/base/admission.yaml and the chart's
//     templates/admission.yaml: the finalizers it never lets the sweeper remove (the catalog's
//     guards), what each rule may delete and the owners each may add (rules.Admission), and, in
//     the base's ConfigMap operator-sweeper-opt-ins, a key for each opt-in;
//   - docs/catalog.md, the catalog as a page.
//
// Each generated part of a file sits between a "# BEGIN generated …" and a "# END generated …"
// line; the rest of the file is written by hand. `make generate` runs it (and `make manifests`,
// before it renders them); a test fails when the files on disk are not what it would write.
//
//	go run ./hack/generate [-root DIR]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	files, err := generate(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(*root, f.path), f.content, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "generate:", err)
			os.Exit(1)
		}
	}
}

// file is a file as generate would write it.
type file struct {
	path    string
	content []byte
}

// generate returns every generated file, with its content as it should be.
func generate(root string) ([]file, error) {
	operators, err := rules.Catalog()
	if err != nil {
		return nil, err
	}
	acting, ruleSet, err := actingRules(filepath.Join(root, "manifests/base/config.yaml"))
	if err != nil {
		return nil, err
	}
	clusterRole, granted := clusterRoleRules(ruleSet)
	var walk strings.Builder
	writePolicyRules(&walk, "", sweeper.WalkPolicyRules()...)
	rbac := []region{{"walk", walk.String()}, {"rules", clusterRole}}
	deletes, err := deleteVariables(acting)
	if err != nil {
		return nil, err
	}
	optIns, err := optInRoles(root, acting, granted)
	if err != nil {
		return nil, err
	}
	var optInKeys strings.Builder
	for _, o := range optIns {
		fmt.Fprintf(&optInKeys, "  %s: \"false\"\n", o.rule)
	}
	admission := []region{
		{"guarded finalizers", guardedFinalizers(operators)},
		{"owners", ownerValidations(acting)},
		{"deletes", deletes},
	}
	type regions struct {
		path    string
		regions []region
	}
	generated := []regions{
		{"manifests/base/rbac.yaml", rbac},
		{"charts/operator-sweeper/templates/rbac.yaml", rbac},
		// The chart's ConfigMap of opt-ins is in templates/opt-ins.yaml, written by hand.
		{"manifests/base/admission.yaml", append(admission, region{"opt-ins", optInKeys.String()})},
		{"charts/operator-sweeper/templates/admission.yaml", admission},
	}
	chart := regions{path: "charts/operator-sweeper/templates/opt-ins.yaml"}
	for _, o := range optIns {
		if o.component != "" {
			generated = append(generated, regions{o.component, []region{o.region}})
			chart.regions = append(chart.regions, o.region)
		}
	}
	generated = append(generated, chart)
	var files []file
	for _, f := range generated {
		content, err := os.ReadFile(filepath.Join(root, f.path))
		if err != nil {
			return nil, err
		}
		for _, r := range f.regions {
			if content, err = replaceRegion(content, r.name, r.content); err != nil {
				return nil, fmt.Errorf("%s: %w", f.path, err)
			}
		}
		files = append(files, file{f.path, content})
	}
	return append(files, file{"docs/catalog.md", catalogPage(operators)}), nil
}

// region is the content of a generated region of a file, by name.
type region struct{ name, content string }

// replaceRegion replaces the lines between "# BEGIN generated <name>" and "# END generated
// <name>" with content, keeping the marker lines.
func replaceRegion(data []byte, name, content string) ([]byte, error) {
	begin, end := "# BEGIN generated "+name, "# END generated "+name
	i := bytes.Index(data, []byte(begin))
	j := bytes.Index(data, []byte(end))
	if i < 0 || j < i {
		return nil, fmt.Errorf("no region %q … %q", begin, end)
	}
	i += bytes.IndexByte(data[i:], '\n') + 1
	var out bytes.Buffer
	out.Write(data[:i])
	out.WriteString(content)
	out.Write(data[j:])
	return out.Bytes(), nil
}

// actingRule is a rule of the registry as it may act in a cluster the manifests deploy: as the
// shipped config builds it, or, for an opt-in, as its opt-in's arguments build it.
type actingRule struct {
	rules.Authorized
	name  string
	optIn bool
}

// actingRules are the registry's rules that may act, in its order: those the shipped config
// enables as they act in the CronJob's mode (--dry-run=none), but each opt-in's rule as the
// arguments its opt-in covers build it (rules.OptedIn); and the shipped config's rules.
func actingRules(configFile string) ([]actingRule, []rules.Rule, error) {
	opts, err := options.LoadConfigFile(configFile, options.Default())
	if err != nil {
		return nil, nil, err
	}
	opts.DryRun = report.DryRunNone
	ruleSet, err := opts.RuleSet()
	if err != nil {
		return nil, nil, err
	}
	var acting []actingRule
	for _, reg := range rules.Registry() {
		rule, err := reg.New(nil, rules.Settings{})
		if err != nil {
			return nil, nil, err
		}
		if optedIn, ok := rule.(rules.OptedIn); ok {
			on, err := reg.New(optedIn.OptInArgs(), rules.Settings{})
			if err != nil {
				return nil, nil, fmt.Errorf("%s's opt-in: %w", reg.Name, err)
			}
			acting = append(acting, actingRule{on.(rules.Authorized), reg.Name, true})
			continue
		}
		i := slices.IndexFunc(ruleSet, func(r rules.Rule) bool { return r.Name() == reg.Name })
		if i < 0 {
			continue // not enabled by the shipped config
		}
		if authorized, ok := ruleSet[i].(rules.Authorized); ok {
			acting = append(acting, actingRule{authorized, reg.Name, false})
		}
	}
	return acting, ruleSet, nil
}

// clusterRoleRules are the rules of ClusterRole operator-sweeper, as YAML and as granted: what
// each rule the shipped config enables needs to act in the CronJob's mode, rule by rule, and
// create on the Events it records.
func clusterRoleRules(ruleSet []rules.Rule) (string, []rbacv1.PolicyRule) {
	var b strings.Builder
	var granted []rbacv1.PolicyRule
	for _, rule := range ruleSet {
		authorized, ok := rule.(rules.Authorized)
		if !ok || len(authorized.PolicyRules()) == 0 {
			continue
		}
		writePolicyRules(&b, rule.Name(), authorized.PolicyRules()...)
		granted = append(granted, authorized.PolicyRules()...)
	}
	writePolicyRules(&b, "The Events of what was done.", sweeper.EventsPolicyRule())
	return b.String(), append(granted, sweeper.EventsPolicyRule())
}

// deleteVariables are the variables of the admission policy on creates and deletes that say what
// the rules may delete: of each acting rule, an object of a resource its Admission names for
// which its When holds, an opt-in's only while its key in the policy's ConfigMap is "true"; and
// ruleDeletes, any of them. A delete a rule's PolicyRules grant and its Admission does not allow
// is an error: the API server would refuse it.
func deleteVariables(acting []actingRule) (string, error) {
	var b strings.Builder
	b.WriteString("  # What each rule may delete: an object of a resource its Admission names, for which its When\n")
	b.WriteString("  # holds (rules/); an opt-in's only while its key in the ConfigMap is \"true\".\n")
	var names []string
	for _, rule := range acting {
		admission := rule.Admission()
		for _, p := range rule.PolicyRules() {
			for _, group := range p.APIGroups {
				for _, resource := range p.Resources {
					gr := schema.GroupResource{Group: group, Resource: resource}
					if slices.Contains(p.Verbs, "delete") && !slices.ContainsFunc(admission.Deletes, func(r rules.Resource) bool { return r.GroupResource() == gr }) {
						return "", fmt.Errorf("rule %s may delete %s by its PolicyRules, but its Admission does not name it in Deletes: the admission policy would refuse every delete", rule.name, gr)
					}
				}
			}
		}
		if len(admission.Deletes) == 0 {
			continue
		}
		var resources []string
		for _, r := range admission.Deletes {
			resources = append(resources, "'"+r.Group+"/"+r.Resource+"'")
		}
		var terms []string
		if rule.optIn {
			terms = append(terms, fmt.Sprintf("'%[1]s' in variables.optIn && variables.optIn['%[1]s'] == 'true'", rule.name))
		}
		terms = append(terms, "variables.resource in ["+strings.Join(resources, ", ")+"]")
		if admission.When != "" {
			terms = append(terms, "("+strings.ReplaceAll(admission.When, "\n", "\n      ")+")")
		}
		name := celName(rule.name) + "Deletes"
		names = append(names, "variables."+name)
		fmt.Fprintf(&b, "  - name: %s\n    expression: >-\n      %s\n", name, strings.Join(terms, " &&\n      "))
	}
	if len(names) == 0 {
		names = []string{"false"}
	}
	fmt.Fprintf(&b, "  - name: ruleDeletes\n    expression: >-\n      %s\n", strings.Join(names, " ||\n      "))
	return b.String(), nil
}

// ownerValidations are the validations of the admission policy on updates that fence the
// ownerReferences: only of the objects of a resource an acting rule gives owners may they
// change, and only by gaining owners the rule may add (its Admission's Owners).
func ownerValidations(acting []actingRule) string {
	var owners []rules.OwnerAdmission
	for _, rule := range acting {
		owners = append(owners, rule.Admission().Owners...)
	}
	var names, kinds []string
	for _, o := range owners {
		names = append(names, "'"+o.Resource.String()+"'")
		kinds = append(kinds, o.Resource.Kind+"s")
	}
	unchanged := `(has(object.metadata.ownerReferences) ? has(oldObject.metadata.ownerReferences) && object.metadata.ownerReferences == oldObject.metadata.ownerReferences
                                            : !has(oldObject.metadata.ownerReferences))`
	var b strings.Builder
	message := "operator-sweeper may change no ownerReferences"
	expression := unchanged
	if len(owners) > 0 {
		message = "operator-sweeper may change the ownerReferences of " + strings.Join(kinds, " and ") + " only"
		expression = "variables.resourceName in [" + strings.Join(names, ", ") + "] ||\n      " + unchanged
	}
	fmt.Fprintf(&b, "  - expression: >-\n      %s\n    message: %s\n    reason: Forbidden\n", expression, message)
	for _, o := range owners {
		b.WriteString("  # An owner is in the object's namespace: one added is of the object's.\n")
		fmt.Fprintf(&b, `  - expression: >-
      variables.resourceName != '%s' || !has(object.metadata.ownerReferences) ||
      object.metadata.ownerReferences.all(r,
        (has(oldObject.metadata.ownerReferences) && r in oldObject.metadata.ownerReferences) ||
        (%s))
    message: operator-sweeper may give %s %s only %s as owners
    reason: Forbidden
`, o.Resource.String(), o.Owner, article(o.Resource.Kind), o.Resource.Kind, o.Owners)
	}
	return b.String()
}

// article is the indefinite article of a Kind.
func article(kind string) string {
	if strings.ContainsRune("AEIOU", rune(kind[0])) {
		return "an"
	}
	return "a"
}

// celName is a rule's name as a CEL identifier: olm-rbac is olmRbac.
func celName(rule string) string {
	parts := strings.Split(rule, "-")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}

// optInRole is the ClusterRole of an opt-in: the generated region of its rules, and the file of
// its component that holds it ("" when the component needs no ClusterRole of its own).
type optInRole struct {
	rule      string
	region    region
	component string
}

// optInRoles are the ClusterRoles of the opt-ins among the acting rules, in the registry's order:
// each one's rules are the PolicyRules of the rule built from its opt-in's arguments. The
// component manifests/components/opt-in-<rule> (and the chart's optIn value) is written by hand;
// without an rbac.yaml it grants no ClusterRole, which granted, the ClusterRole
// operator-sweeper's rules, must then cover.
func optInRoles(root string, acting []actingRule, granted []rbacv1.PolicyRule) ([]optInRole, error) {
	chart, err := os.ReadFile(filepath.Join(root, "charts/operator-sweeper/templates/opt-ins.yaml"))
	if err != nil {
		return nil, err
	}
	var roles []optInRole
	for _, rule := range acting {
		if !rule.optIn {
			continue
		}
		name, policy := rule.name, rule.PolicyRules()
		dir := filepath.Join("manifests/components", "opt-in-"+name)
		if _, err := os.Stat(filepath.Join(root, dir, "kustomization.yaml")); err != nil {
			return nil, fmt.Errorf("rule %s has an opt-in but no component %s: write it by hand, as the other opt-ins' (%w)", name, dir, err)
		}
		var yaml strings.Builder
		writePolicyRules(&yaml, "", policy...)
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(name) + `: \{\{ \.Values\.optIn\.`).Match(chart) {
			return nil, fmt.Errorf("rule %s has an opt-in but the chart's templates/opt-ins.yaml switches no key %s in its ConfigMap: add an optIn value and its line, as the other opt-ins'", name, name)
		}
		role := optInRole{rule: name, region: region{"opt-in " + name, yaml.String()}, component: filepath.Join(dir, "rbac.yaml")}
		if _, err := os.Stat(filepath.Join(root, role.component)); os.IsNotExist(err) {
			for _, p := range policy {
				if missing := notCovered(granted, p); missing != "" {
					return nil, fmt.Errorf("opt-in %s needs %s, which the ClusterRole operator-sweeper does not grant: give %s an rbac.yaml with a region %q, as the other opt-ins', and the chart's templates/opt-ins.yaml one too", name, missing, dir, role.region.name)
				}
			}
			role.component = ""
		}
		roles = append(roles, role)
	}
	return roles, nil
}

// notCovered names a verb on a resource that p grants and none of granted does; "" if none.
func notCovered(granted []rbacv1.PolicyRule, p rbacv1.PolicyRule) string {
	has := func(items []string, item string) bool {
		return slices.Contains(items, item) || slices.Contains(items, "*")
	}
	for _, group := range p.APIGroups {
		for _, resource := range p.Resources {
			for _, verb := range p.Verbs {
				if !slices.ContainsFunc(granted, func(g rbacv1.PolicyRule) bool {
					return has(g.APIGroups, group) && has(g.Resources, resource) && has(g.Verbs, verb)
				}) {
					return fmt.Sprintf("%s on %s", verb, schema.GroupResource{Group: group, Resource: resource})
				}
			}
		}
	}
	return ""
}

// writePolicyRules writes policy as ClusterRole rules, under a comment if there is one.
func writePolicyRules(b *strings.Builder, comment string, policy ...rbacv1.PolicyRule) {
	if comment != "" {
		fmt.Fprintf(b, "# %s\n", comment)
	}
	for _, p := range policy {
		fmt.Fprintf(b, "- apiGroups: [%s]\n  resources: [%s]\n  verbs: [%s]\n", yamlList(p.APIGroups), yamlList(p.Resources), yamlList(p.Verbs))
	}
}

// yamlList is a flow sequence of plain strings, quoting those YAML would not read as such.
func yamlList(items []string) string {
	quoted := make([]string, len(items))
	for i, item := range items {
		quoted[i] = item
		if item == "" || item == "*" {
			quoted[i] = `"` + item + `"`
		}
	}
	return strings.Join(quoted, ", ")
}

// guardedFinalizers is the admission policy's variable "guarded": whether the update removes a
// finalizer the catalog says guards something outside the cluster, from an object of a resource
// its entry names. Globs become anchored regular expressions (path.Match's * and ? do not match
// "/"); the resource is matched as the catalog names it, "<plural>.<group>" or "<plural>".
func guardedFinalizers(operators []rules.CatalogOperator) string {
	var terms []string
	for _, op := range operators {
		for _, owner := range op.Finalizers {
			if owner.Consequence != rules.ConsequenceGuards {
				continue
			}
			var resources []string
			for _, glob := range owner.Resources {
				resources = append(resources, globRegexp(glob))
			}
			terms = append(terms, fmt.Sprintf("(f.matches(r'^%s$') && variables.resourceName.matches(r'^(%s)$'))",
				globRegexp(owner.Pattern), strings.Join(resources, "|")))
		}
	}
	var b strings.Builder
	b.WriteString("  # The finalizers the catalog (rules/catalog) says guard something outside the cluster, or data,\n")
	b.WriteString("  # on the resources it names: never removed by the sweeper, whatever the RBAC or its config say.\n")
	b.WriteString("  - name: guarded\n    expression: >-\n      variables.released.exists(f,\n")
	for i, term := range terms {
		sep := " ||"
		if i == len(terms)-1 {
			sep = ")"
		}
		fmt.Fprintf(&b, "        %s%s\n", term, sep)
	}
	if len(terms) == 0 {
		b.WriteString("        false)\n")
	}
	return b.String()
}

// globRegexp is the regular expression of a path.Match glob (the catalog's are validated).
func globRegexp(glob string) string {
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; c {
		case '*':
			b.WriteString(`[^/]*`)
		case '?':
			b.WriteString(`[^/]`)
		case '\\':
			if i+1 < len(glob) {
				i++
				b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
			}
		case '[':
			j := strings.IndexByte(glob[i:], ']')
			class := glob[i : i+j+1]
			b.WriteString(strings.Replace(class, "[^", "[^/", 1))
			i += j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// catalogPage is docs/catalog.md: every operator of the catalog, by category, and what each of its
// finalizers stands for.
func catalogPage(operators []rules.CatalogOperator) []byte {
	var b strings.Builder
	count := map[rules.Consequence]int{}
	entries := 0
	for _, op := range operators {
		for _, owner := range op.Finalizers {
			count[owner.Consequence]++
			entries++
		}
	}
	fmt.Fprintf(&b, `# The operator catalog

<!-- Generated by make generate from rules/catalog/*.yaml: edit those, not this page. -->

What operator-sweeper knows of %d operators: the finalizers each adds, the kinds they are on, the
workloads and Leases that serve them, and what each stands for, checked against the upstream source
named on its row. The catalog is compiled into the binary; `+"`orphaned-finalizers`"+` releases a finalizer
only when its controller is proven gone **and** its consequence lets it go ([Rules](rules.md#how-orphaned-finalizers-decides)):

- **local** (%d entries): the controller cleans up inside the cluster only; released once it is gone.
- **cascades** (%d): the controller deletes what the object deployed; released once it is gone (what
  was deployed stays), drained by `+"`preflight --drain`"+` only with `+"`--drain-protected`"+`.
- **guards** (%d): it stands for something outside the cluster, or for data; never released, by any
  path, and the admission policy refuses its removal too. The row says what to do first.

A finalizer the catalog does not name has an unknown consequence: reported, never released. A
config file entry classifies it ([Configuration](configuration.md#controller-mappings)).

`, len(operators), count[rules.ConsequenceLocal], count[rules.ConsequenceCascades], count[rules.ConsequenceGuards])
	for _, category := range rules.Categories {
		var in []rules.CatalogOperator
		for _, op := range operators {
			if op.Category == category {
				in = append(in, op)
			}
		}
		if len(in) == 0 {
			continue
		}
		fmt.Fprintf(&b, "## %s\n\n", category)
		for _, op := range in {
			fmt.Fprintf(&b, "### %s\n\n%s (%s)\n\n", op.Name, op.Description, op.Repository)
			b.WriteString("| finalizer | on | consequence | stands for | served by | checked against |\n|---|---|---|---|---|---|\n")
			for _, owner := range op.Finalizers {
				standsFor := cell(owner.StandsFor)
				if owner.Remedy != "" {
					standsFor += "; **first**: " + cell(owner.Remedy)
				}
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s %s: %s |\n", owner.Pattern, codeList(owner.Resources), consequence(owner.Consequence),
					standsFor, servedBy(owner), owner.Source.Repository, owner.Source.Release, codeList(owner.Source.Files))
			}
			b.WriteString("\n")
		}
	}
	out := strings.TrimRight(b.String(), "\n") + "\n"
	return []byte(out)
}

func consequence(c rules.Consequence) string {
	if c == rules.ConsequenceGuards {
		return "**guards**"
	}
	return string(c)
}

// cell is text fit for a table cell: one line, pipes escaped.
func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}

func codeList(items []string) string {
	quoted := make([]string, len(items))
	for i, item := range items {
		quoted[i] = "`" + item + "`"
	}
	return strings.Join(quoted, ", ")
}

// servedBy names an entry's workloads and Leases.
func servedBy(owner rules.FinalizerOwner) string {
	var parts []string
	for _, c := range owner.Controllers {
		what := ""
		switch {
		case c.Name != "":
			what = "`" + c.Name + "`"
		case c.Selector != "":
			what = "`" + c.Selector + "`"
		default:
			what = "image `" + c.Image + "`"
		}
		if c.Namespace != "" {
			what += " in " + c.Namespace
		}
		parts = append(parts, c.Kind+" "+what)
	}
	for _, lease := range owner.Leases {
		parts = append(parts, "Lease `"+lease+"`")
	}
	return strings.Join(parts, "; ")
}
