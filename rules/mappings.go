package rules

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// DefaultFinalizerOwners are the controller mappings operator-sweeper ships, each checked against
// the upstream source named in its comment (file paths at the release or commit noted). A config
// file's entries come first, and replace the defaults of the same pattern.
//
// Controllers are matched by the labels the upstream manifests or chart put on the workload, and
// by image, which a repackaged or renamed install keeps; Leases by the leader-election ID in the
// upstream main.go. Any one of them alive keeps the finalizer. Finalizers that guard data outside
// the cluster are protected: reported, never released.
func DefaultFinalizerOwners() []FinalizerOwner {
	olmOperator := Controller{Kind: "Deployment", Name: "olm-operator"}
	catalogd := FinalizerOwner{Controllers: []Controller{{Kind: "Deployment", Name: "catalogd-controller-manager"}}, Leases: []string{"catalogd-operator-lock"},
		Cascades: "the catalog's content, which installed operators resolve from"}
	const (
		csvCascades  = "the operator the ClusterServiceVersion installed"
		argoCascades = "the resources the Application deployed"
	)
	// Argo CD's components share one image, so any of them running keeps its finalizers; the
	// labels differ between the upstream manifests and chart (app.kubernetes.io/name) and
	// argocd-operator, OpenShift GitOps among them (<instance>-application-controller, with
	// component and part-of).
	argoImages := []Controller{{Kind: "StatefulSet", Image: "*/argocd"}, {Kind: "Deployment", Image: "*/argocd"},
		{Kind: "StatefulSet", Image: "*argocd-rhel*"}, {Kind: "Deployment", Image: "*argocd-rhel*"}}
	argoApplicationController := append([]Controller{
		{Kind: "StatefulSet", Selector: "app.kubernetes.io/name=argocd-application-controller"},
		{Kind: "Deployment", Selector: "app.kubernetes.io/name=argocd-application-controller"}, // dynamic cluster distribution
		{Kind: "StatefulSet", Selector: "app.kubernetes.io/component=application-controller,app.kubernetes.io/part-of=argocd"},
		{Kind: "Deployment", Selector: "app.kubernetes.io/component=application-controller,app.kubernetes.io/part-of=argocd"},
	}, argoImages...)
	owners := []FinalizerOwner{
		// kube-logging/logging-operator: its chart labels the Deployment
		// app.kubernetes.io/name=logging-operator; main.go elects "logging-operator." + its API group
		// (the chart turns leader election on). rancher-logging repackages it: found by its image.
		{
			Pattern: "*.logging.banzaicloud.io/finalizer",
			Controllers: []Controller{
				{Kind: "Deployment", Selector: "app.kubernetes.io/name=logging-operator"},
				{Kind: "Deployment", Image: "*logging-operator"},
			},
			Leases: []string{"logging-operator.logging.banzaicloud.io"},
		},
		// operator-framework/operator-lifecycle-manager v0: olm-operator alone adds and removes
		// csv-cleanup (pkg/controller/operators/olm/operator.go); OLM v0 holds no Lease.
		{Pattern: "operators.coreos.com/csv-cleanup", Controllers: []Controller{olmOperator}, Cascades: csvCascades},
		// No other OLM v0 finalizer exists today; should one appear, either component may own it.
		{Pattern: "operators.coreos.com/*", Controllers: []Controller{olmOperator, {Kind: "Deployment", Name: "catalog-operator"}}, Cascades: csvCascades},
		// OLM v1: catalogd owns ClusterCatalog's delete-server-cache (formerly under
		// catalogd.operatorframework.io), operator-controller the rest (cmd/*/main.go).
		{Pattern: "olm.operatorframework.io/delete-server-cache", Controllers: catalogd.Controllers, Leases: catalogd.Leases, Cascades: catalogd.Cascades},
		{Pattern: "catalogd.operatorframework.io/*", Controllers: catalogd.Controllers, Leases: catalogd.Leases, Cascades: catalogd.Cascades},
		{
			Pattern:     "olm.operatorframework.io/*",
			Controllers: []Controller{{Kind: "Deployment", Name: "operator-controller-controller-manager"}},
			Leases:      []string{"9c4404e7.operatorframework.io"},
			Cascades:    "the extension the ClusterExtension installed",
		},
		// cert-manager/cert-manager: ACME Challenges only (pkg/apis/acme/v1/const.go; removed in
		// pkg/controller/acmechallenges/sync.go after the solver is cleaned up); the controller
		// Deployment (deploy/charts/cert-manager/templates/deployment.yaml), Lease
		// cert-manager-controller in kube-system (cmd/controller/app/controller.go).
		cert("acme.cert-manager.io/*"),
		cert("finalizer.acme.cert-manager.io"), // the legacy name, before v1.18
		// argoproj/argo-cd: pkg/apis/application/v1alpha1/application_defaults.go; the
		// application-controller removes them from Applications and AppProjects
		// (controller/appcontroller.go), and holds no Lease: it shards.
		{Pattern: "*.argocd.argoproj.io", Resources: []string{"applications.argoproj.io", "appprojects.argoproj.io"}, Controllers: argoApplicationController, Cascades: argoCascades},
		{Pattern: "*.argocd.argoproj.io/*", Resources: []string{"applications.argoproj.io", "appprojects.argoproj.io"}, Controllers: argoApplicationController, Cascades: argoCascades},
		// The applicationset-controller adds and removes it on ApplicationSets
		// (applicationset/controllers/applicationset_controller.go).
		{
			Pattern:   "resources-finalizer.argocd.argoproj.io",
			Resources: []string{"applicationsets.argoproj.io"},
			Controllers: append([]Controller{
				{Kind: "Deployment", Selector: "app.kubernetes.io/name=argocd-applicationset-controller"},
				{Kind: "Deployment", Selector: "app.kubernetes.io/component=applicationset-controller,app.kubernetes.io/part-of=argocd"},
			}, argoImages...),
			Leases:   []string{"58ac56fa.applicationsets.argoproj.io"},
			Cascades: "the Applications the ApplicationSet generated, and what they deployed",
		},
		// VictoriaMetrics/operator: api/operator/v1beta1/vmextra_types.go, on the kinds of
		// operator.victoriametrics.com (before v0.69 also on the core objects it made: not
		// mapped, those stay undecided); config/manager/manager.yaml, internal/manager/manager.go.
		{
			Pattern:   "apps.victoriametrics.com/finalizer",
			Resources: []string{"*.operator.victoriametrics.com"},
			Controllers: []Controller{
				{Kind: "Deployment", Selector: "app.kubernetes.io/name=victoria-metrics-operator"},
				{Kind: "Deployment", Image: "victoriametrics/operator"},
			},
			Leases: []string{"57410f0d.victoriametrics.com"},
		},
		// tigera/operator: pkg/render/finalizers.go and node.go; one operator process removes them
		// all (cmd/main.go elects operator-lock). cni-protector, on calico-node's ServiceAccount
		// and RBAC, keeps pod networking up while Calico is torn down.
		tigera("tigera.io/cni-protector", nil, "pod networking: calico-node's CNI must be torn down first"),
		tigera("tigera.io/*", []string{"*.operator.tigera.io"}, ""),
		tigera("operator.tigera.io/*", []string{"*.operator.tigera.io"}, ""),
		// opensearch-project/opensearch-k8s-operator: controllers/opensearchController.go and
		// controller_settings.go (opensearch.org since 2.8.1, opensearch.opster.io before); the
		// -data finalizers stand for users, roles and policies inside the OpenSearch cluster.
		openSearch("Opensearch", ""),
		openSearch("Opster", ""),
		openSearch("opensearch.org/opensearch-data", "users, roles, policies and templates inside the OpenSearch cluster"),
		openSearch("opster.io/opensearch-data", "users, roles, policies and templates inside the OpenSearch cluster"),
		openSearch("opensearch.org/*", ""),
		// strimzi/strimzi-kafka-operator: KafkaTopics' topic-operator finalizer is removed by the
		// Topic Operator in each Kafka cluster's entity-operator Deployment
		// (topic-operator/.../KubernetesHandler.java), auto-rebalancing by the cluster operator;
		// both run the same image. The cluster operator elects strimzi-cluster-operator.
		{
			Pattern:     "strimzi.io/*",
			Controllers: []Controller{{Kind: "Deployment", Image: "strimzi/operator"}},
			Leases:      []string{"strimzi-cluster-operator"},
		},
		// prometheus-operator/prometheus-operator v0.85.0: with feature gate
		// StatusForConfigurationResources, FinalizerSyncer.Sync (pkg/operator/finalizer.go) adds
		// status-cleanup to every Prometheus it reconciles (pkg/prometheus/server/operator.go) and
		// removes it as soon as the Prometheus is deleted: it cleans status only, so releasing it
		// loses nothing. Upstream labels its Deployment app.kubernetes.io/name=prometheus-operator
		// (example/rbac/prometheus-operator), kube-prometheus-stack app=<release>-operator and
		// component/part-of; the image is quay.io/prometheus-operator/prometheus-operator. It
		// elects no leader.
		{
			Pattern:   "monitoring.coreos.com/status-cleanup",
			Resources: []string{"prometheuses.monitoring.coreos.com"},
			Controllers: []Controller{
				{Kind: "Deployment", Selector: "app.kubernetes.io/name=prometheus-operator"},
				{Kind: "Deployment", Selector: "app=kube-prometheus-stack-operator"},
				{Kind: "Deployment", Selector: "app.kubernetes.io/component=prometheus-operator,app.kubernetes.io/part-of=kube-prometheus-stack"},
				{Kind: "Deployment", Image: "*/prometheus-operator/prometheus-operator"},
			},
		},
		// kyverno/kyverno v1.13–v1.17 (cmd/kyverno/main.go, cmd/cleanup-controller/main.go): with
		// autoDeleteWebhooks, on Kyverno's own Deployments, ServiceAccounts and RBAC, until it has
		// deleted its webhook configurations; Leases kyverno and kyverno-cleanup-controller.
		// Releasing them leaves those configurations, which refuse writes: reported only.
		{
			Pattern: "kyverno.io/*",
			Controllers: []Controller{
				{Kind: "Deployment", Image: "kyverno/kyverno"},
				{Kind: "Deployment", Image: "kyverno/cleanup-controller"},
			},
			Leases:  []string{"kyverno", "kyverno-cleanup-controller"},
			Protect: true,
			Guards:  "Kyverno's webhook configurations, which it deletes before it lets its own objects go (dead-webhooks reports those left)",
		},
		// rook/rook: pkg/operator/ceph/controller/finalizer.go (<kind>.ceph.rook.io) and
		// cluster/mon/mon.go (disaster-protection, on the mon Secret and endpoints ConfigMap).
		rook("*.ceph.rook.io", "Ceph pools, filesystems and object stores, and their data on the storage nodes"),
		rook("ceph.rook.io/disaster-protection", "the Ceph monitors' identity and endpoints, without which the cluster's data cannot be recovered"),
		// longhorn/longhorn-manager: datastore/longhorn.go; the longhorn-manager DaemonSet.
		{
			Pattern:     "longhorn.io",
			Controllers: []Controller{{Kind: "DaemonSet", Selector: "app=longhorn-manager"}, {Kind: "DaemonSet", Image: "longhornio/longhorn-manager"}},
			Protect:     true,
			Guards:      "volume replicas on the nodes, and backups in the backup target",
		},
		// vmware-tanzu/velero: pkg/controller/restore_controller.go (the velero Deployment),
		// data_upload_controller.go and pod_volume_backup_controller.go (the node-agent DaemonSet).
		velero("velero.io/*"),
		velero("*.velero.io/*"),
		// crossplane/crossplane-runtime: pkg/reconciler/managed/reconciler.go; the provider's
		// Deployment, labelled by the package manager (apis/pkg/v1/interfaces.go).
		{
			Pattern:     "finalizer.managedresource.crossplane.io",
			Controllers: []Controller{{Kind: "Deployment", Selector: "pkg.crossplane.io/provider"}},
			Protect:     true,
			Guards:      "the cloud resource the managed resource stands for",
		},
	}
	return append(owners, flux()...)
}

func cert(pattern string) FinalizerOwner {
	return FinalizerOwner{
		Pattern:   pattern,
		Resources: []string{"challenges.acme.cert-manager.io"},
		Controllers: []Controller{
			{Kind: "Deployment", Selector: "app.kubernetes.io/name=cert-manager,app.kubernetes.io/component=controller"},
			{Kind: "Deployment", Image: "*/cert-manager-controller"},
		},
		Leases: []string{"cert-manager-controller"},
	}
}

func tigera(pattern string, resources []string, guards string) FinalizerOwner {
	return FinalizerOwner{
		Pattern:   pattern,
		Resources: resources,
		Controllers: []Controller{
			{Kind: "Deployment", Selector: "k8s-app=tigera-operator"},
			{Kind: "Deployment", Image: "tigera/operator"},
		},
		Leases:  []string{"operator-lock"},
		Protect: guards != "",
		Guards:  guards,
	}
}

func openSearch(pattern, guards string) FinalizerOwner {
	return FinalizerOwner{
		Pattern: pattern,
		Controllers: []Controller{
			{Kind: "Deployment", Selector: "app.kubernetes.io/name=opensearch-operator"},
			{Kind: "Deployment", Image: "opensearchproject/opensearch-operator"},
		},
		Leases:  []string{"a867c7dc.opensearch.org", "a867c7dc.opensearch.opster.io"},
		Protect: guards != "",
		Guards:  guards,
	}
}

func rook(pattern, guards string) FinalizerOwner {
	return FinalizerOwner{
		Pattern:     pattern,
		Controllers: []Controller{{Kind: "Deployment", Selector: "app=rook-ceph-operator"}, {Kind: "Deployment", Image: "rook/ceph"}},
		Protect:     true,
		Guards:      guards,
	}
}

func velero(pattern string) FinalizerOwner {
	return FinalizerOwner{
		Pattern: pattern,
		Controllers: []Controller{
			{Kind: "Deployment", Selector: "component=velero"},
			{Kind: "Deployment", Image: "velero/velero"},
			{Kind: "DaemonSet", Name: "node-agent"},
		},
		Protect: true,
		Guards:  "backups and volume snapshots in the backup storage",
	}
}

// flux maps finalizers.fluxcd.io, which every Flux controller uses, by the API group of the object
// it is on (each controller's internal/controller/*_controller.go); the Deployments are labelled
// app=<controller> in flux-system (flux2 manifests/bases), the Leases are
// <controller>-leader-election, with a hash suffix under --watch-label-selector (fluxcd/pkg
// runtime/leaderelection). HelmCharts are helm-controller's creation but source-controller's
// finalizer. source-watcher has a finalizer of its own.
func flux() []FinalizerOwner {
	controller := func(pattern, name string, resources ...string) FinalizerOwner {
		return FinalizerOwner{
			Pattern:   pattern,
			Resources: resources,
			Controllers: []Controller{
				{Kind: "Deployment", Selector: "app=" + name},
				{Kind: "Deployment", Image: "fluxcd/" + name},
			},
			Leases:   []string{name + "-leader-election*"},
			Cascades: "what the object deployed (pruned, or uninstalled)",
		}
	}
	return []FinalizerOwner{
		controller("finalizers.fluxcd.io", "source-controller", "*.source.toolkit.fluxcd.io"),
		controller("finalizers.fluxcd.io", "kustomize-controller", "*.kustomize.toolkit.fluxcd.io"),
		controller("finalizers.fluxcd.io", "helm-controller", "*.helm.toolkit.fluxcd.io"),
		controller("finalizers.fluxcd.io", "notification-controller", "*.notification.toolkit.fluxcd.io"),
		controller("finalizers.fluxcd.io", "image-reflector-controller", "imagerepositories.image.toolkit.fluxcd.io", "imagepolicies.image.toolkit.fluxcd.io"),
		controller("finalizers.fluxcd.io", "image-automation-controller", "imageupdateautomations.image.toolkit.fluxcd.io"),
		controller("source.extensions.fluxcd.io/finalizer", "source-watcher", "*.source.extensions.fluxcd.io"),
	}
}

// finalizerResources are the resources the shipped mappings' finalizers that may be released are
// on, which orphaned-finalizers patches. A mapping added in the config file for another operator
// needs its resources added to the ClusterRole by hand: finalizer names do not say which kinds
// carry them.
var finalizerResources = []rbacv1.PolicyRule{
	policyRule("logging.banzaicloud.io", []string{"loggings", "syslogngconfigs", "fluentdconfigs"}, "get", "patch"),
	policyRule(ClusterServiceVersions.Group, []string{ClusterServiceVersions.Resource}, "get", "patch"),
	policyRule("olm.operatorframework.io", []string{"clusterextensions", "clustercatalogs", "clusterobjectsets"}, "get", "patch"),
	policyRule("catalogd.operatorframework.io", []string{"clustercatalogs"}, "get", "patch"),
	policyRule("acme.cert-manager.io", []string{"challenges"}, "get", "patch"),
	policyRule("argoproj.io", []string{"applications", "appprojects", "applicationsets"}, "get", "patch"),
	policyRule("operator.victoriametrics.com", []string{"*"}, "get", "patch"),
	policyRule("operator.tigera.io", []string{"*"}, "get", "patch"),
	policyRule("opensearch.org", []string{"*"}, "get", "patch"),
	policyRule("opensearch.opster.io", []string{"*"}, "get", "patch"),
	policyRule("kafka.strimzi.io", []string{"kafkatopics", "kafkarebalances"}, "get", "patch"),
	policyRule("monitoring.coreos.com", []string{"prometheuses"}, "get", "patch"),
	policyRule("source.toolkit.fluxcd.io", []string{"*"}, "get", "patch"),
	policyRule("kustomize.toolkit.fluxcd.io", []string{"*"}, "get", "patch"),
	policyRule("helm.toolkit.fluxcd.io", []string{"*"}, "get", "patch"),
	policyRule("notification.toolkit.fluxcd.io", []string{"*"}, "get", "patch"),
	policyRule("image.toolkit.fluxcd.io", []string{"*"}, "get", "patch"),
	policyRule("source.extensions.fluxcd.io", []string{"*"}, "get", "patch"),
}
