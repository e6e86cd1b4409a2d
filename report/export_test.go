package report

// What the tests of package report_test read of the package's insides.

// CauseUnexplained counts a stuck namespace no finding explains.
const CauseUnexplained = causeUnexplained

var (
	HTMLScript = htmlScript
	HTMLStyle  = htmlStyle
	CSPHash    = cspHash
	HTMLAsset  = htmlAsset
	ReportHTML = reportHTML
)

// RowNames are the objects' names in table order, indented as the table indents them.
func (r *Report) RowNames() []string {
	var rows []string
	for _, row := range r.rows() {
		rows = append(rows, indent(row.depth)+r.Findings[row.finding].Object.Name)
	}
	return rows
}

// AgeAt and MaskAges find and mask the ages of reasons.
var (
	AgeAt    = ageAt
	MaskAges = maskAges
)
