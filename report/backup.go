package report

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// PreImage says where the pre-image of an object written is kept (the object as it was read right
// before the write: what restore brings back), how to check it, and what undoing needs short of its
// body. The body itself is never in a report: it may hold a Secret's data or a password in a spec,
// and a report goes to logs, notifications and files readable by far more people than the object.
type PreImage struct {
	// Resource is the object's resource by its plural name ("clusterroles"); the object's
	// apiVersion gives its group and version.
	Resource string `json:"resource"`
	// Kept says where the body is: "secret:<namespace>/<name>" (the record's Secret in the
	// sweeper's namespace; the body in Parts Secrets <name>-0, <name>-1, …) or "file:<name>" (in
	// the run's directory of --backup-dir).
	Kept string `json:"kept,omitempty"`
	// Parts counts the Secrets the body is split into, each under the API server's size limit.
	Parts int `json:"parts,omitempty"`
	// Entry, when set, says the body is one of many in a Secret that keeps a batch of writes'
	// pre-images, under the data key body-<entry>, with their records; Parts is then 0.
	Entry string `json:"entry,omitempty"`
	// SHA256 is the hex SHA-256 of the body, uncompressed: restore refuses a body that differs.
	SHA256 string `json:"sha256,omitempty"`
	// CustomResources counts, for a CustomResourceDefinition deleted, the custom resources kept
	// with it in the body, which went with it.
	CustomResources int `json:"customResources,omitempty"`
	// Finalizers and OwnerReferences are the object's before the write.
	Finalizers      []string                `json:"finalizers,omitempty"`
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences,omitempty"`
}

// Image is obj as a pre-image keeps it: without status and what the server sets.
func Image(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	delete(out.Object, "status")
	for _, field := range []string{"uid", "resourceVersion", "managedFields", "creationTimestamp", "generation",
		"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
		unstructured.RemoveNestedField(out.Object, "metadata", field)
	}
	return out
}

// BodyWriter writes a pre-image's body: the object's image, then a CustomResourceDefinition's
// custom resources, one JSON document a line, gzipped; Sum is the SHA-256 of the lines.
type BodyWriter struct {
	gz     *gzip.Writer
	digest hash.Hash
	enc    *json.Encoder
	n      int
}

// NewBodyWriter writes a body to w.
func NewBodyWriter(w io.Writer) *BodyWriter {
	gz, digest := gzip.NewWriter(w), sha256.New()
	return &BodyWriter{gz: gz, digest: digest, enc: json.NewEncoder(io.MultiWriter(gz, digest))}
}

// Reset makes b write another body, to w: a compressor costs most of a megabyte to make, and a
// batch of small bodies reuses one.
func (b *BodyWriter) Reset(w io.Writer) {
	b.gz.Reset(w)
	b.digest.Reset()
	b.n = 0
}

// Write adds an object, as its image.
func (b *BodyWriter) Write(obj *unstructured.Unstructured) error {
	b.n++
	return b.enc.Encode(Image(obj).Object)
}

// Objects counts the objects written.
func (b *BodyWriter) Objects() int { return b.n }

// Close ends the body.
func (b *BodyWriter) Close() error { return b.gz.Close() }

// Sum is the hex SHA-256 of what was written, uncompressed.
func (b *BodyWriter) Sum() string { return hex.EncodeToString(b.digest.Sum(nil)) }

// BodyReader reads a pre-image's body, and checks it against its SHA-256 once it is read to its
// end: a body that differs from what was kept is an error, however it was changed.
type BodyReader struct {
	dec    *json.Decoder
	digest hash.Hash
	sum    string
}

// maxBodyLine bounds one object of a body: an object is at most the API server's request limit.
const maxBodyLine = 3 << 20

// NewBodyReader reads from r a body whose SHA-256 is sum.
func NewBodyReader(r io.Reader, sum string) (*BodyReader, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("not a pre-image's body: %w", err)
	}
	digest := sha256.New()
	return &BodyReader{dec: json.NewDecoder(bufio.NewReaderSize(io.TeeReader(gz, digest), maxBodyLine)), digest: digest, sum: sum}, nil
}

// Next returns the next object of the body, or io.EOF after the last, once the body is found to be
// what was kept.
func (b *BodyReader) Next() (*unstructured.Unstructured, error) {
	var line json.RawMessage
	err := b.dec.Decode(&line)
	switch {
	case errors.Is(err, io.EOF):
		if got := hex.EncodeToString(b.digest.Sum(nil)); got != b.sum {
			return nil, fmt.Errorf("the pre-image's body was changed: its SHA-256 is %s, not %s as kept", got, b.sum)
		}
		return nil, io.EOF
	case err != nil:
		return nil, fmt.Errorf("read a pre-image's body: %w", err)
	}
	// As the API server's objects are decoded: whole numbers are int64, not float64, so that a
	// pre-image compares equal to the object it was read from.
	var obj map[string]any
	if err := utiljson.Unmarshal(line, &obj); err != nil {
		return nil, fmt.Errorf("read a pre-image's body: %w", err)
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

// The identity of a backup record.
const (
	BackupAPIVersion = APIVersion
	BackupKind       = "SweepBackup"
)

// BackupRecord is the record of a write the sweeper was about to make, kept before it beside the
// pre-image's body (a file of --backup-dir, or a Secret in the sweeper's namespace), and signed.
// A record without an outcome is of a write whose answer it does not know: restore judges it by
// the object as it is.
type BackupRecord struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Cluster, ClusterUID, RunID and StartTime say which run wrote it.
	Cluster    string      `json:"cluster"`
	ClusterUID string      `json:"clusterUID"`
	RunID      string      `json:"runID"`
	StartTime  metav1.Time `json:"startTime"`
	// Finding is the finding whose action the write carries out, signed, with where the
	// pre-image's body is kept in before.
	Finding FindingResult `json:"finding"`
}

// SigningPayload is what a finding's signature covers: the finding but its signature, and the
// cluster and the run it is of, so that a finding signed in one cluster or run does not pass in
// another.
func SigningPayload(f FindingResult, clusterUID, runID string) ([]byte, error) {
	f.Signature = ""
	return json.Marshal(struct {
		ClusterUID string        `json:"clusterUID"`
		RunID      string        `json:"runID"`
		Finding    FindingResult `json:"finding"`
	}{clusterUID, runID, f})
}
