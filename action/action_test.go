package action

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

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
