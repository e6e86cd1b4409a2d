package action

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/operator-sweeper/operator-sweeper/input"
	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/report/reporttest"
)

func TestFailure(t *testing.T) {
	r := reporttest.New(time.Now())
	r.Errors = append(r.Errors, report.Error{Stage: report.StagePush, Message: "refused"})
	assert.Empty(t, failure(r), "a failed push is a warning, unless required")
	r.Errors = append(r.Errors, report.Error{Stage: report.StageInventory, Message: "unreachable", Fatal: true})
	assert.Equal(t, "inventory: unreachable", failure(r))
	r.Errors = append(r.Errors, report.Error{Stage: report.StagePush, Message: "refused", Fatal: true})
	assert.Equal(t, "inventory: unreachable; refused (--require-push)", failure(r))
}

// TestResultPrint: a Result is printed in full, then ends as its report says, then as its verdict
// (a preflight's); a fleet's reports of one cluster twice are bad input, printed nowhere.
func TestResultPrint(t *testing.T) {
	r := reporttest.New(time.Now())
	res := single(options.OutputOptions{Output: report.JSON}, r)
	res.verdict = fmt.Errorf("%w: 1 findings: uninstalling now would leave them blocked", ErrFindings)
	var out bytes.Buffer
	require.ErrorIs(t, res.Print(&out), ErrFindings)
	assert.Contains(t, out.String(), `"kind": "SweepReport"`)

	r.Errors = append(r.Errors, report.Error{Stage: report.StageInventory, Message: "unreachable", Fatal: true})
	out.Reset()
	err := res.Print(&out)
	require.ErrorIs(t, err, ErrIncomplete, "a failed run is worse than its findings")
	assert.Equal(t, "sweep incomplete: inventory: unreachable", err.Error())
	assert.NotEmpty(t, out.String())

	a, b := reporttest.New(time.Now()), reporttest.New(time.Now())
	a.Metadata.Cluster, b.Metadata.Cluster = "prod", "prod"
	fleet := &Result{output: options.OutputOptions{Output: report.JSON}, fleet: true, reports: []*report.Report{a, b}}
	out.Reset()
	var inputErr *input.Error
	require.ErrorAs(t, fleet.Print(&out), &inputErr)
	assert.Empty(t, out.String())
}
