package preflight

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// Unknown are the errors of a preflight's report that leave its answer unknown: every discovery
// or list that failed, except the discovery of an API that an APIService of the operator serves.
// That one fails whenever the operator's API server is unavailable, and what it serves is not
// stored in the cluster: no custom resource of it can be left blocked.
func Unknown(r *report.Report, u rules.Uninstall) []report.Error {
	ours := slices.Clone(u.APIServices)
	for _, f := range r.Findings {
		if f.Rule == rules.PreflightName && f.Object.Kind == rules.APIServices.Kind {
			ours = append(ours, f.Object.Name)
		}
	}
	var unknown []report.Error
	for _, e := range r.Errors {
		if e.Stage != report.StageInventory && e.Stage != report.StageObserve {
			continue
		}
		gv, err := schema.ParseGroupVersion(e.Resource)
		if e.Stage == report.StageInventory && err == nil && slices.Contains(ours, gv.Version+"."+gv.Group) {
			continue
		}
		unknown = append(unknown, e)
	}
	return unknown
}
