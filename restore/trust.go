package restore

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/backup"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// trust is what restore checks a record against before it believes it: restore runs with an
// admin's credentials, and creates what a record says, so a record that was made up or edited
// (into a ClusterRoleBinding to cluster-admin, say), or that is of another cluster, must not pass.
type trust struct {
	// cluster and clusterUID are the cluster restored into: its name, and its kube-system
	// namespace's UID.
	cluster, clusterUID string
	// key is the sweeper's signing key, from its namespace; keyErr says why there is none.
	key    []byte
	keyErr error
	// rules are the rules that write, by name; broken, those that could not be built, with why.
	rules  map[string]rules.Authorized
	broken map[string]error
}

// declared builds the rules of registry that write, by name, with the args given by name (nil:
// their defaults): what a rule may write does not depend on its config. Preflight's drain, which
// no sweep runs, is one of them. A rule that cannot be built is in broken, with why: its records
// cannot be checked, and that is an error of the run, not a record of no rule's.
func declared(registry []rules.Registration, args map[string]any) (authorized map[string]rules.Authorized, broken map[string]error) {
	authorized, broken = map[string]rules.Authorized{rules.PreflightName: rules.Preflight{}}, map[string]error{}
	for _, reg := range registry {
		rule, err := reg.New(args[reg.Name], rules.Settings{})
		if err != nil {
			broken[reg.Name] = err
			continue
		}
		if a, ok := rule.(rules.Authorized); ok {
			authorized[reg.Name] = a
		}
	}
	return authorized, broken
}

// record checks a record before its pre-image is read: it is of this cluster, signed by its
// sweeper and unchanged since, and of a write its rule declares.
func (t trust) record(rec Record) error {
	if rec.clusterUID != t.clusterUID {
		return fmt.Errorf("it is a record of another cluster (kube-system uid %q), not of %s (uid %s): restore only into the cluster it was taken in",
			rec.clusterUID, t.cluster, t.clusterUID)
	}
	if t.keyErr != nil {
		return fmt.Errorf("nothing can be verified without the sweeper's signing key: %v", t.keyErr)
	}
	if err := backup.Verify(t.key, rec.FindingResult, rec.clusterUID, rec.runID); err != nil {
		return err
	}
	if err, ok := t.broken[rec.Rule]; ok {
		return fmt.Errorf("rule %q could not be built (%v): its records cannot be checked", rec.Rule, err)
	}
	rule, ok := t.rules[rec.Rule]
	gr := rec.resource().GroupResource()
	if !ok || !rules.Allows(rule, rec.Action.Type, gr) {
		return fmt.Errorf("rule %q writes no %s of %s: no sweep of this version could have written it", rec.Rule, rec.Action.Type, gr)
	}
	return nil
}

// preImage checks that a pre-image matches its record: the same object, as it was before the
// write the record says (the finalizers removed were on it, the ownerReferences were these), and
// one its rule could have written.
func (t trust) preImage(rec Record, obj *unstructured.Unstructured) error {
	gv, _ := schema.ParseGroupVersion(obj.GetAPIVersion())
	want, _ := schema.ParseGroupVersion(rec.Object.APIVersion)
	if gv.Group != want.Group || obj.GetKind() != rec.Object.Kind || obj.GetNamespace() != rec.Object.Namespace || obj.GetName() != rec.Object.Name {
		return fmt.Errorf("its pre-image is of %s %s/%s, not of the %s its record names", obj.GetKind(), obj.GetNamespace(), obj.GetName(), rec.Object)
	}
	if !slices.Equal(obj.GetFinalizers(), rec.Before.Finalizers) || !reflect.DeepEqual(obj.GetOwnerReferences(), rec.Before.OwnerReferences) {
		return fmt.Errorf("its pre-image's finalizers or ownerReferences are not those its record says")
	}
	for _, f := range rec.Action.Finalizers {
		if !slices.Contains(obj.GetFinalizers(), f) {
			return fmt.Errorf("its record removed finalizer %s, which its pre-image does not hold", f)
		}
		if rules.BuiltIn(f) {
			return fmt.Errorf("finalizer %s is Kubernetes' own: no rule ever removes it", f)
		}
	}
	if err := t.rules[rec.Rule].MayHaveWritten(rec.Action.Type, obj, rec.Evidence); err != nil {
		return fmt.Errorf("rule %s could not have written it: %w", rec.Rule, err)
	}
	return nil
}

// grants says what an object restore creates gives whom: a role's rules, a binding's role and
// subjects, for an admin to review in the dry run before --dry-run=none.
func grants(obj *unstructured.Unstructured) []string {
	if obj == nil || schema.FromAPIVersionAndKind(obj.GetAPIVersion(), obj.GetKind()).Group != "rbac.authorization.k8s.io" {
		return nil
	}
	switch obj.GetKind() {
	case "ClusterRole", "Role":
		roleRules, _, _ := unstructured.NestedSlice(obj.Object, "rules")
		var lines []string
		for _, r := range roleRules {
			m, _ := r.(map[string]any)
			lines = append(lines, fmt.Sprintf("%v on %v of API groups %v%s", m["verbs"], cmpOr(m["resources"], m["nonResourceURLs"]), m["apiGroups"], names(m["resourceNames"])))
		}
		if len(lines) == 0 {
			return []string{"it grants nothing (no rules)"}
		}
		return []string{"it grants: " + strings.Join(lines, "; ")}
	case "ClusterRoleBinding", "RoleBinding":
		kind, _, _ := unstructured.NestedString(obj.Object, "roleRef", "kind")
		role, _, _ := unstructured.NestedString(obj.Object, "roleRef", "name")
		subjects, _, _ := unstructured.NestedSlice(obj.Object, "subjects")
		var who []string
		for _, s := range subjects {
			m, _ := s.(map[string]any)
			name := fmt.Sprint(m["name"])
			if ns, ok := m["namespace"].(string); ok && ns != "" {
				name = ns + "/" + name
			}
			who = append(who, fmt.Sprintf("%v %s", m["kind"], name))
		}
		return []string{fmt.Sprintf("it binds %s %s to %s", kind, role, strings.Join(who, ", "))}
	}
	return nil
}

func cmpOr(a, b any) any {
	if a != nil {
		return a
	}
	return b
}

func names(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf(" named %v", v)
}
