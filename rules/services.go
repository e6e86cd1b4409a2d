package rules

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// What rules read of EndpointSlices: which Service each serves (a label) and its endpoints.
const serviceNameLabel = "kubernetes.io/service-name"

var endpointSliceContent = ContentRequest{Resource: EndpointSlices.GroupResource(), Selector: serviceNameLabel, Fields: []string{"endpoints"}}

// serviceState is what the view says of a Service an APIService or a webhook calls.
type serviceState int

const (
	// serviceUnknown: the Service, or its EndpointSlices, were not listed.
	serviceUnknown serviceState = iota
	// serviceGone: no such Service.
	serviceGone
	// serviceNoEndpoints: the Service exists, without a ready endpoint.
	serviceNoEndpoints
	// serviceReady: the Service has a ready endpoint.
	serviceReady
)

// judgeService says whether the Service namespace/name exists and has a ready endpoint, with a
// line of evidence. An endpoint without a ready condition counts as ready, as the EndpointSlice
// API says consumers should take it.
func judgeService(view *View, namespace, name string) (serviceState, string) {
	what := fmt.Sprintf("Service %s/%s", namespace, name)
	if _, exists := view.Get(Services.GroupResource(), namespace, name); !exists {
		if !view.Observed(Services.GroupResource(), namespace) {
			return serviceUnknown, what + " was not listed: cannot tell whether it exists"
		}
		return serviceGone, what + ": no such Service"
	}
	if !view.Observed(EndpointSlices.GroupResource(), namespace) {
		return serviceUnknown, what + " exists; its EndpointSlices were not listed"
	}
	sliceCount, ready := 0, 0
	for _, slice := range view.InNamespace(EndpointSlices.GroupResource(), namespace) {
		if slice.Labels[serviceNameLabel] != name {
			continue
		}
		sliceCount++
		endpoints, _, _ := unstructured.NestedSlice(slice.Content, "endpoints")
		for _, e := range endpoints {
			endpoint, _ := e.(map[string]any)
			if isReady, found, _ := unstructured.NestedBool(endpoint, "conditions", "ready"); !found || isReady {
				ready++
			}
		}
	}
	switch {
	case ready > 0:
		return serviceReady, fmt.Sprintf("%s has %d ready endpoints", what, ready)
	case sliceCount == 0:
		return serviceNoEndpoints, what + " exists, without an EndpointSlice: nothing serves it"
	}
	return serviceNoEndpoints, fmt.Sprintf("%s exists; its %d EndpointSlices have no ready endpoint", what, sliceCount)
}

// registrarReads are the resources judgeService and registrarGone read whole: a Service and its
// EndpointSlices, the records of a Helm release, a ClusterServiceVersion and whether OLM runs, a
// namespace, each wherever it is.
func registrarReads() []schema.GroupResource {
	return slices.Concat(groupResources(Services, EndpointSlices, ClusterServiceVersions, Namespaces), helmRecords(), contentResources(workloadContent()))
}

// registrarGone says whether whoever registered obj (an APIService, a webhook configuration)
// for the Service in serviceNamespace is gone, with the evidence, and the facts a deletion would
// rest on. Its registrar is judged as a CRD's installer is: Helm ownership metadata names a
// release, gone when the release is uninstalled (in any storage driver the sweeper reads; see
// helmRelease); OLM's objects (labelled olm.owner) are gone with their ClusterServiceVersion when
// OLM is gone too. Any other's registrar is gone when the Service's namespace is: an uninstall
// that removed the namespace and left the cluster-scoped registration behind. When the namespace
// remains, whoever registered it may still be there, and nothing says who.
//
// The installer it returns is the ClusterServiceVersion OLM registered obj for, and nil for any
// other registrar: of those, the preflight hint of docs/report.md names only that one.
func registrarGone(view *View, mappings FinalizerMappings, helmSQL bool, obj *Object, serviceNamespace string) (bool, []string, []Fact, *Installer) {
	if namespace, release, ok := helmOwner(obj); ok {
		state, evidence := helmRelease(view, namespace, release, helmSQL)
		evidence = fmt.Sprintf("registered by Helm release %s/%s (meta.helm.sh annotations): %s", namespace, release, evidence)
		if state != helmUninstalled {
			return false, []string{evidence}, nil, nil
		}
		return true, []string{evidence}, []Fact{helmReleaseUninstalled(namespace, release, helmSQL)}, nil
	}
	if csvNamespace, csvName, ok := csvOwner(obj); ok {
		evidence := []string{fmt.Sprintf("registered by OLM for ClusterServiceVersion %s/%s (label olm.owner)", csvNamespace, csvName)}
		csv := &Installer{Kind: ClusterServiceVersions.Kind, Namespace: csvNamespace, Name: csvName}
		if _, exists := view.Get(ClusterServiceVersions.GroupResource(), csvNamespace, csvName); exists || !view.Observed(ClusterServiceVersions.GroupResource(), csvNamespace) {
			return false, append(evidence, fmt.Sprintf("ClusterServiceVersion %s/%s exists, or was not listed", csvNamespace, csvName)), nil, csv
		}
		evidence = append(evidence, fmt.Sprintf("ClusterServiceVersion %s/%s no longer exists", csvNamespace, csvName))
		olm, mapped := mappings.ownerOf(csvCleanupFinalizer, ClusterServiceVersions.GroupResource())
		if !mapped {
			return false, append(evidence, "no controller mapping names OLM: cannot tell whether it runs"), nil, csv
		}
		status := controllersOf(view, olm)
		evidence = append(evidence, status.evidence...)
		if status.liveness != gone {
			return false, append(evidence, "OLM is not gone: it deletes what it registered"), nil, csv
		}
		return true, evidence, []Fact{ObjectAbsent{ClusterServiceVersions, csvNamespace, csvName}, controllersGone(view, olm)}, csv
	}
	if _, exists := view.Get(Namespaces.GroupResource(), "", serviceNamespace); exists || !view.Observed(Namespaces.GroupResource(), "") {
		return false, []string{fmt.Sprintf("namespace %s exists: whoever registered it may still be there, and nothing says who", serviceNamespace)}, nil, nil
	}
	return true, []string{fmt.Sprintf("namespace %s no longer exists: what was installed there is gone", serviceNamespace)},
		[]Fact{ObjectAbsent{Namespaces, "", serviceNamespace}}, nil
}
