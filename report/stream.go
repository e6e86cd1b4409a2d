package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"

	"sigs.k8s.io/yaml"
)

// A report of a cluster where an operator left tens of thousands of objects stuck has as many
// findings: encoded whole, the document and its indented copy would take several times the
// memory of the findings themselves. The encoders below write the same document one finding at a
// time, through a buffer that is reused.

// printJSON writes the report as indented JSON, but each finding on one line of its own: a report
// reads, greps and streams a finding a line (jq -c, restore reading a Job's logs), and its size is
// what the findings say, not their indentation.
func (r *Report) printJSON(w io.Writer) error {
	out := bufio.NewWriterSize(w, 64<<10)
	out.WriteString("{\n")
	for _, field := range []struct {
		key   string
		value any
	}{{"apiVersion", r.APIVersion}, {"kind", r.Kind}, {"metadata", r.Metadata}, {"summary", r.Summary}} {
		data, err := json.MarshalIndent(field.value, "  ", "  ")
		if err != nil {
			return fmt.Errorf("encode the report's %s as JSON: %w", field.key, err)
		}
		fmt.Fprintf(out, "  %q: %s,\n", field.key, data)
	}
	out.WriteString(`  "findings": [`)
	if err := encodeFindings(out, r.Findings); err != nil {
		return err
	}
	if len(r.Findings) > 0 {
		out.WriteString("\n  ")
	}
	out.WriteString("],\n")
	errs, err := json.MarshalIndent(r.errors(), "  ", "  ")
	if err != nil {
		return fmt.Errorf("encode the report's errors as JSON: %w", err)
	}
	fmt.Fprintf(out, "  \"errors\": %s\n}\n", errs)
	return out.Flush()
}

// findingsPerBlock is how many findings one core encodes at a time.
const findingsPerBlock = 256

// encodeFindings writes the findings, a line each ("\n    {…}", joined by commas). They are most of
// a large report, and the sweep has nothing else left to do: blocks of them are encoded on every
// core at once, in order, as many at a time as there are cores.
func encodeFindings(out io.Writer, findings []FindingResult) error {
	type encoded struct {
		data []byte
		err  error
	}
	pending := make(chan chan encoded, runtime.GOMAXPROCS(0)) // in order; full, it holds encoding back
	go func() {
		defer close(pending)
		for start := 0; start < len(findings); start += findingsPerBlock {
			block := make(chan encoded, 1)
			pending <- block
			go func() {
				data, err := encodeBlock(findings, start, min(len(findings), start+findingsPerBlock))
				block <- encoded{data, err}
			}()
		}
	}()
	var err error
	for block := range pending {
		e := <-block
		if err == nil { // after an error, the rest is drained: the encoders end
			err = e.err
			if err == nil {
				_, err = out.Write(e.data)
			}
		}
	}
	return err
}

// encodeBlock encodes the findings from start to end, each on a line of its own after a comma,
// but for the very first.
func encodeBlock(findings []FindingResult, start, end int) ([]byte, error) {
	var b bytes.Buffer
	b.Grow((end - start) * 512) // about what a finding takes: fewer copies as it grows
	enc := json.NewEncoder(&b)
	for i := start; i < end; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    ")
		if err := enc.Encode(&findings[i]); err != nil {
			return nil, fmt.Errorf("encode finding %d of the report as JSON: %w", i, err)
		}
		b.Truncate(b.Len() - 1) // the newline Encode ends with
	}
	return b.Bytes(), nil
}

// errors are the report's errors, never null in the document.
func (r *Report) errors() []Error {
	if r.Errors == nil {
		return []Error{}
	}
	return r.Errors
}

// printYAML writes the report as YAML, as sigs.k8s.io/yaml writes it (keys in order, the findings
// a sequence), one finding at a time.
func (r *Report) printYAML(w io.Writer) error {
	out := bufio.NewWriterSize(w, 64<<10)
	// Keys sort: apiVersion, errors, findings, kind, metadata, summary.
	head, err := yaml.Marshal(struct {
		APIVersion string  `json:"apiVersion"`
		Errors     []Error `json:"errors"`
	}{r.APIVersion, r.errors()})
	if err != nil {
		return fmt.Errorf("encode the report as YAML: %w", err)
	}
	out.Write(head)
	if len(r.Findings) == 0 {
		out.WriteString("findings: []\n")
	} else {
		out.WriteString("findings:\n")
	}
	for i := range r.Findings {
		data, err := yaml.Marshal(&r.Findings[i])
		if err != nil {
			return fmt.Errorf("encode finding %d of the report as YAML: %w", i, err)
		}
		// An item of the sequence: "- " before its first line, two spaces before the others.
		for j, line := range bytes.SplitAfter(data, []byte("\n")) {
			switch {
			case len(line) == 0:
				continue
			case j == 0:
				out.WriteString("- ")
			case len(line) > 1: // an empty line of a block scalar stays empty
				out.WriteString("  ")
			}
			out.Write(line)
		}
	}
	tail, err := yaml.Marshal(struct {
		Kind     string   `json:"kind"`
		Metadata Metadata `json:"metadata"`
		Summary  Summary  `json:"summary"`
	}{r.Kind, r.Metadata, r.Summary})
	if err != nil {
		return fmt.Errorf("encode the report as YAML: %w", err)
	}
	out.Write(tail)
	return out.Flush()
}
