package report_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/report/reporttest"
)

// TestStreamedEncodingsAreTheDocument: JSON and YAML, written a finding at a time, are the very
// document the whole report encodes to (in YAML, byte for byte); in JSON each finding takes one
// line, in order however many there are. Evidence with quotes, HTML and a multi-line message with
// an empty line included.
func TestStreamedEncodingsAreTheDocument(t *testing.T) {
	odd := reporttest.Sample()
	odd.Findings[0].Evidence = append(odd.Findings[0].Evidence, `a "quoted" <b>html</b> & more`, "line one\n\nline three\n", "  leading spaces")
	for name, r := range map[string]*report.Report{"sample": reporttest.Sample(), "odd evidence": odd, "empty": reporttest.New(time.Now()), "many": crowded()} {
		t.Run(name, func(t *testing.T) {
			var streamed bytes.Buffer
			require.NoError(t, r.Print(&streamed, report.JSON))
			whole, err := json.Marshal(r)
			require.NoError(t, err)
			if len(r.Errors) == 0 {
				whole = bytes.Replace(whole, []byte(`"errors":null`), []byte(`"errors":[]`), 1)
			}
			assert.JSONEq(t, string(whole), streamed.String())
			lines := strings.Split(streamed.String(), "\n")
			var findingLines int
			for _, line := range lines {
				if strings.HasPrefix(line, `    {"rule":`) {
					findingLines++
				}
			}
			assert.Equal(t, len(r.Findings), findingLines, "one line per finding")

			streamed.Reset()
			require.NoError(t, r.Print(&streamed, report.YAML))
			wholeYAML, err := yaml.Marshal(r)
			require.NoError(t, err)
			if len(r.Errors) == 0 {
				wholeYAML = bytes.Replace(wholeYAML, []byte("errors: null\n"), []byte("errors: []\n"), 1)
			}
			assert.Equal(t, string(wholeYAML), streamed.String())
		})
	}
}
