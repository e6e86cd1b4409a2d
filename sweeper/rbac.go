package sweeper

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// WalkPolicyRules are what the walk needs: list on every resource, through the metadata client.
// The shipped manifests grant them in a ClusterRole of their own, operator-sweeper-walk.
func WalkPolicyRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"list"}}}
}

// PolicyRules are what a sweep with these rules needs in mode, beyond the walk: nothing under
// --dry-run=client; the enabled rules' writes under --dry-run=server (a server-side dry run is
// authorized like the write); and, applying, create on the Events it records.
func PolicyRules(ruleSet []rules.Rule, mode report.DryRunMode) []rbacv1.PolicyRule {
	if mode == report.DryRunClient {
		return nil
	}
	var policy []rbacv1.PolicyRule
	for _, rule := range ruleSet {
		if authorized, ok := rule.(rules.Authorized); ok {
			policy = append(policy, authorized.PolicyRules()...)
		}
	}
	if mode == report.DryRunNone && len(policy) > 0 {
		policy = append(policy, EventsPolicyRule())
	}
	return policy
}

// EventsPolicyRule is what recording the Events of what was done needs (events.k8s.io/v1, which
// client-go's events recorder writes; Events alike are joined before, so never patched).
func EventsPolicyRule() rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create"}}
}
