package rules

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

// DeadAPIServices reports aggregated APIServices that have been unavailable for longer than
// --min-age, as the API server's own availability check says (condition Available=False:
// ServiceNotFound, MissingEndpoints, FailedDiscoveryCheck, …). While one is, discovery of its
// group version fails, and the namespace controller cannot finish any namespace deletion
// (NamespaceDeletionDiscoveryFailure): after OLM is removed, v1.packages.operators.coreos.com
// still points at olm/packageserver-service; after metrics-server, v1beta1.metrics.k8s.io.
// With rules.dead-apiservices.delete, it deletes one whose Service is gone (not merely without
// endpoints) and whose registrar is gone (see registrarGone; for OLM's packageserver: no
// packageserver CSV, and OLM gone). Never a local APIService (no spec.service).
type DeadAPIServices struct {
	minAge   time.Duration
	delete   bool
	mappings FinalizerMappings
	helmSQL  bool
}

// DeadAPIServicesName is the name of rule dead-apiservices.
const DeadAPIServicesName = "dead-apiservices"

// DeadAPIServicesArgs are the arguments of dead-apiservices: rules.dead-apiservices in the config
// file. Its threshold is --min-age.
type DeadAPIServicesArgs struct {
	// Delete allows deleting a dead APIService whose Service and registrar are gone.
	Delete bool `json:"delete,omitempty"`
}

// NewDeadAPIServices builds dead-apiservices.
func NewDeadAPIServices(args DeadAPIServicesArgs, settings Settings) (DeadAPIServices, error) {
	return DeadAPIServices{minAge: settings.MinAge, delete: args.Delete, mappings: settings.Finalizers, helmSQL: settings.HelmSQLStorage}, nil
}

var (
	_ ContentReader    = DeadAPIServices{}
	_ WholeReader      = DeadAPIServices{}
	_ AnnotationReader = DeadAPIServices{}
	_ Authorized       = DeadAPIServices{}
	_ OptedIn          = DeadAPIServices{}
)

// Name implements Rule.
func (DeadAPIServices) Name() string { return DeadAPIServicesName }

// Writes implements Authorized: it deletes APIServices.
func (DeadAPIServices) Writes() []Write { return deletes([]Resource{APIServices}) }

// MayHaveWritten implements Authorized: an aggregated APIService, one with a Service.
func (DeadAPIServices) MayHaveWritten(_ string, obj *unstructured.Unstructured, _ []string) error {
	if err := sameKind(APIServices, obj); err != nil {
		return err
	}
	if _, ok, _ := unstructured.NestedMap(obj.Object, "spec", "service"); !ok {
		return fmt.Errorf("APIService %s is local (no spec.service), which dead-apiservices never deletes", obj.GetName())
	}
	return nil
}

// Admission implements Authorized: an aggregated APIService, never a local one.
func (DeadAPIServices) Admission() Admission {
	return Admission{Deletes: []Resource{APIServices}, When: "has(oldObject.spec.service)"}
}

// OptInArgs implements OptedIn: delete.
func (DeadAPIServices) OptInArgs() any { return DeadAPIServicesArgs{Delete: true} }

// PolicyRules implements Authorized: delete, once opted in.
func (r DeadAPIServices) PolicyRules() []rbacv1.PolicyRule {
	if !r.delete {
		return nil
	}
	return deletePolicy([]Resource{APIServices})
}

// ReadsContent implements ContentReader: the APIServices' Service and conditions, the endpoints
// of Services, the conditions of Namespaces, and what tells whether OLM runs.
func (DeadAPIServices) ReadsContent() []ContentRequest {
	return append([]ContentRequest{
		{Resource: APIServices.GroupResource(), Fields: []string{"spec.service", "spec.group", "spec.version", "status.conditions"}},
		endpointSliceContent,
		{Resource: Namespaces.GroupResource(), Fields: []string{"status.conditions"}},
	}, workloadContent()...)
}

// ReadsWhole implements WholeReader: every APIService and the namespaces their discovery blocks,
// and what says whether a Service and its registrar are gone.
func (r DeadAPIServices) ReadsWhole() []schema.GroupResource {
	return slices.Concat(contentResources(r.ReadsContent()), registrarReads())
}

// ReadsAnnotations implements AnnotationReader: the Helm release that registered an APIService.
func (DeadAPIServices) ReadsAnnotations() []string { return []string{helmAnnotations} }

// Plan implements Rule.
func (r DeadAPIServices) Plan(_ context.Context, view *View) []Finding {
	var findings []Finding
	var blocked map[schema.GroupVersion][]string // Terminating namespaces by failing group version
	for _, api := range view.List(APIServices.GroupResource()) {
		serviceNamespace, serviceName := nestedString(api, "spec", "service", "namespace"), nestedString(api, "spec", "service", "name")
		if serviceName == "" || api.DeletionTimestamp != nil {
			continue // local: served by the API server itself
		}
		status, since, found := condition(api, "Available")
		if !found || status != "False" || view.Now().Sub(since) < r.minAge {
			continue
		}
		available, _ := conditionOf(api, "Available")
		gv := schema.GroupVersion{Group: nestedString(api, "spec", "group"), Version: nestedString(api, "spec", "version")}
		state, serviceEvidence := judgeService(view, serviceNamespace, serviceName)
		f := Finding{
			Severity: SeverityWarning,
			Object:   api.Ref(),
			Evidence: []string{
				fmt.Sprintf("condition Available=False since %s (%s ago, --min-age %s), reason %v: %v",
					since.UTC().Format(time.RFC3339), duration.HumanDuration(view.Now().Sub(since)), r.minAge, available["reason"], available["message"]),
				serviceEvidence,
				fmt.Sprintf("%s is unavailable: its discovery fails, and so does every namespace deletion", gv),
			},
		}
		if blocked == nil {
			blocked = namespacesBlockedByDiscovery(view)
		}
		if names := blocked[gv]; len(names) > 0 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("blocks the deletion of namespaces %s (condition NamespaceDeletionDiscoveryFailure)", strings.Join(names, ", ")))
		}
		switch state {
		case serviceGone:
			gone, evidence, facts, installer := registrarGone(view, r.mappings, r.helmSQL, api, serviceNamespace)
			f.Evidence = append(f.Evidence, evidence...)
			if !gone {
				f.Reason = fmt.Sprintf("unavailable: Service %s/%s is gone, but not whoever registered it", serviceNamespace, serviceName)
				break
			}
			f.Reason = fmt.Sprintf("unavailable: Service %s/%s is gone, and so is whoever registered it", serviceNamespace, serviceName)
			f.Action = Delete{}
			f.OperatorGone = &OperatorGone{Installer: installer}
			f.Facts = append(facts, ObjectAbsent{Services, serviceNamespace, serviceName})
			if !r.delete {
				f.OptIn = "rules.dead-apiservices.delete"
			}
		case serviceNoEndpoints:
			f.Reason = fmt.Sprintf("unavailable: Service %s/%s has no ready endpoint; its workload may come back", serviceNamespace, serviceName)
		default:
			f.Reason = fmt.Sprintf("unavailable (%v); Service %s/%s", available["reason"], serviceNamespace, serviceName)
		}
		findings = append(findings, f)
	}
	return findings
}

// namespacesBlockedByDiscovery are the Terminating namespaces whose NamespaceDeletionDiscoveryFailure
// condition names a group version, by group version.
func namespacesBlockedByDiscovery(view *View) map[schema.GroupVersion][]string {
	blocked := map[schema.GroupVersion][]string{}
	for _, ns := range view.List(Namespaces.GroupResource()) {
		if ns.DeletionTimestamp == nil {
			continue
		}
		if status, _, _ := condition(ns, "NamespaceDeletionDiscoveryFailure"); status != "True" {
			continue
		}
		c, _ := conditionOf(ns, "NamespaceDeletionDiscoveryFailure")
		message, _ := c["message"].(string)
		for _, gv := range failedGroupVersions(message) {
			blocked[gv] = append(blocked[gv], ns.Name)
		}
	}
	return blocked
}
