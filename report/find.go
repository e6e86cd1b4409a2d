package report

import (
	"bytes"
	"encoding/json"

	"sigs.k8s.io/yaml"
)

// Find finds a SweepReport in data: the whole of it, JSON or YAML, or the last one printed
// as JSON among other lines, as in a Job's logs.
func Find(data []byte) (*Report, bool) {
	var whole Report
	if err := yaml.Unmarshal(data, &whole); err == nil && whole.Kind == Kind {
		return &whole, true
	}
	var found *Report
	for offset := 0; offset < len(data); {
		line := data[offset:]
		if next := bytes.IndexByte(line, '\n'); next >= 0 {
			line = line[:next+1]
		}
		if bytes.HasPrefix(line, []byte("{")) {
			var r Report
			if err := json.NewDecoder(bytes.NewReader(data[offset:])).Decode(&r); err == nil && r.Kind == Kind {
				found = &r
			}
		}
		offset += len(line)
	}
	return found, found != nil
}
