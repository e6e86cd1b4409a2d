package rules

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Helm v3 keeps each revision of a release as a Secret (the default driver) or a ConfigMap (the
// configmap driver) named sh.helm.release.v1.<release>.v<revision>, in the release's namespace,
// labelled owner=helm, name=<release>, status=<status>, version=<revision> (helm
// pkg/storage/driver). `helm uninstall` deletes them all, or, with --keep-history, leaves the
// latest revision with status=uninstalled. The sql driver keeps them outside the cluster.

// helmAnnotations is the family of the annotations by which an object names its Helm release: a
// rule that asks it (helmOwner, helmMetadataOf) reads them.
const helmAnnotations = "meta.helm.sh/"

// helmRecords are the resources Helm keeps its releases' records in: a rule that judges a release
// (helmRelease) reads them whole, the release's namespace being anywhere.
func helmRecords() []schema.GroupResource {
	return groupResources(Secrets, ConfigMaps)
}

// helmOwner returns the Helm release obj says it belongs to: label
// app.kubernetes.io/managed-by=Helm and annotations meta.helm.sh/release-name and -namespace.
func helmOwner(obj *Object) (namespace, release string, ok bool) {
	m := helmMetadataOf(obj)
	return m.namespace, m.release, m.ok
}

// helmMetadata is what an object says of the Helm release it belongs to.
type helmMetadata struct {
	namespace, release string
	ok                 bool
}

func helmMetadataOf(obj *Object) helmMetadata {
	release, namespace := obj.Annotations["meta.helm.sh/release-name"], obj.Annotations["meta.helm.sh/release-namespace"]
	return helmMetadata{namespace, release, obj.Labels["app.kubernetes.io/managed-by"] == "Helm" && release != "" && namespace != ""}
}

// helmState is what the view says of a Helm release.
type helmState int

const (
	helmUnknown helmState = iota
	helmInstalled
	helmUninstalled
)

// helmRelease judges a release from its records. Installed: the latest revision has any status
// but uninstalled and uninstalling (failed and pending-* revisions may still have live
// resources). Uninstalled: no record left, or the latest is uninstalled (--keep-history), and
// both Secrets and ConfigMaps of its namespace were listed, and no release may live in SQL.
func helmRelease(view *View, namespace, release string, sqlStorage bool) (helmState, string) {
	name := fmt.Sprintf("Helm release %s/%s", namespace, release)
	var latest *Object
	latestRevision := int64(-1)
	for _, r := range []Resource{Secrets, ConfigMaps} {
		for _, record := range view.InNamespace(r.GroupResource(), namespace) {
			if record.Labels["owner"] != "helm" || record.Labels["name"] != release {
				continue
			}
			if revision, _ := strconv.ParseInt(record.Labels["version"], 10, 64); revision > latestRevision {
				latest, latestRevision = record, revision
			}
		}
	}
	if latest != nil {
		record := fmt.Sprintf("%s %s", latest.Resource.Kind, latest.Name)
		switch status := latest.Labels["status"]; status {
		case "uninstalled":
			return helmUninstalled, fmt.Sprintf("%s is uninstalled: its latest revision, %s, has status uninstalled (history kept)", name, record)
		case "uninstalling":
			return helmUnknown, fmt.Sprintf("%s is being uninstalled (%s): wait for it to finish", name, record)
		default:
			return helmInstalled, fmt.Sprintf("%s is installed: %s has status %s", name, record, status)
		}
	}
	for _, r := range []Resource{Secrets, ConfigMaps} {
		if !view.Observed(r.GroupResource(), namespace) {
			return helmUnknown, fmt.Sprintf("%s in namespace %s were not listed: cannot look for %s", r.GroupResource(), namespace, name)
		}
	}
	if sqlStorage {
		return helmUnknown, fmt.Sprintf("no record of %s in Secrets or ConfigMaps, but releases may be kept in SQL (rules.orphaned-finalizers.helm-sql-storage), which the sweeper cannot read", name)
	}
	return helmUninstalled, fmt.Sprintf("%s is uninstalled: no Secret or ConfigMap labelled owner=helm, name=%s in %s", name, release, namespace)
}

// helmReads are the live reads that judge a release again.
func helmReads(namespace, release string) []Read {
	selector := "owner=helm,name=" + release
	return []Read{
		{Resource: Secrets.GroupResource(), Namespace: namespace, Selector: selector},
		{Resource: ConfigMaps.GroupResource(), Namespace: namespace, Selector: selector},
	}
}

// helmReleaseUninstalled is the fact that a Helm release is uninstalled: read again, its records
// say so (see helmRelease).
func helmReleaseUninstalled(namespace, release string, sqlStorage bool) Fact {
	return factOf{
		key:   fmt.Sprintf("helm release uninstalled %s/%s", namespace, release),
		reads: helmReads(namespace, release),
		holds: func(view *View) (bool, string) {
			state, evidence := helmRelease(view, namespace, release, sqlStorage)
			return state == helmUninstalled, "re-checked live: " + evidence
		},
	}
}
