package backup

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-sweeper/operator-sweeper/report"
)

// The layout of a Secret that keeps a batch of writes' pre-images: <prefix><run ID>-b<NNNNNN>,
// their records in one key, gzipped JSON lines, and each body, gzipped as a part is, under
// body-<entry>. A run of thousands of small writes keeps tens of Secrets, not two per write.
const (
	batchRecordsKey = "records.jsonl.gz"
	batchBodyPrefix = "body-"
	// batchLimit is the most a batch Secret's data holds, as a part's.
	batchLimit = partSize
	// ownSecrets is the size of a body, gzipped, past which it keeps Secrets of its own, as one
	// write's, rather than crowd a batch.
	ownSecrets = batchLimit / 4
)

// Batch implements Store: the entries' bodies and records go to as few Secrets as hold them, each
// created, and so kept by etcd, before Batch returns, and so before any of the writes is sent.
func (s *Secrets) Batch(ctx context.Context, entries []Entry) error {
	var b *batchSecret
	var body bytes.Buffer
	w := report.NewBodyWriter(&body)
	for _, e := range entries {
		body.Reset()
		w.Reset(&body)
		if err := errors.Join(w.Write(e.Object), w.Close()); err != nil {
			return fmt.Errorf("keep the pre-image of %s: %w", e.Name, err)
		}
		if body.Len() > ownSecrets {
			if err := s.own(ctx, e); err != nil {
				return err
			}
			continue
		}
		if b != nil && !b.fits(body.Len()) {
			if err := s.flush(ctx, b); err != nil {
				return err
			}
			b = nil
		}
		if b == nil {
			s.batches++
			b = newBatchSecret(s.Namespace, fmt.Sprintf("%s%s-b%06d", SecretPrefix, s.RunID, s.batches))
		}
		entry := fmt.Sprintf("%04d", len(b.bodies))
		e.Pre.Kept, e.Pre.Parts, e.Pre.Entry, e.Pre.SHA256 = b.kept, 0, entry, w.Sum()
		rec, err := e.Record(e.Pre)
		if err != nil {
			return err
		}
		if err := b.add(entry, body.Bytes(), rec); err != nil {
			return fmt.Errorf("keep the record of %s: %w", e.Name, err)
		}
	}
	if b == nil {
		return nil
	}
	return s.flush(ctx, b)
}

// own keeps a large body as one write's: in Secrets of its own, and its record in another.
func (s *Secrets) own(ctx context.Context, e Entry) error {
	if err := s.Body(ctx, e.Name, e.Pre, func(w *report.BodyWriter) error { return w.Write(e.Object) }); err != nil {
		return err
	}
	rec, err := e.Record(e.Pre)
	if err != nil {
		return err
	}
	return s.Record(ctx, rec, false)
}

// flush creates the batch's Secret.
func (s *Secrets) flush(ctx context.Context, b *batchSecret) error {
	data, err := b.data()
	if err == nil {
		err = s.create(ctx, b.name, data)
	}
	if err != nil {
		return fmt.Errorf("keep the pre-images of %d writes in Secret %s/%s: %w", len(b.bodies), s.Namespace, b.name, err)
	}
	return nil
}

// batchSecret is a batch Secret being filled: its bodies, and its records gzipped as they come,
// flushed after each so that its size is known exactly.
type batchSecret struct {
	name    string
	kept    string // where, as a record says: one string for the batch's thousands of records
	bodies  map[string][]byte
	size    int // of the bodies
	records bytes.Buffer
	gz      *gzip.Writer
}

func newBatchSecret(namespace, name string) *batchSecret {
	b := &batchSecret{name: name, kept: "secret:" + namespace + "/" + name, bodies: map[string][]byte{}}
	b.gz = gzip.NewWriter(&b.records)
	return b
}

// recordRoom is what a record takes at most, gzipped, in the accounting of what fits: a record
// is a finding with its evidence and signature.
const recordRoom = 4 << 10

// fits says whether a body of n bytes and its record fit in the batch.
func (b *batchSecret) fits(n int) bool {
	return b.size+n+b.records.Len()+recordRoom <= batchLimit
}

func (b *batchSecret) add(entry string, body []byte, rec report.BackupRecord) error {
	b.bodies[batchBodyPrefix+entry] = bytes.Clone(body)
	b.size += len(body)
	if err := json.NewEncoder(b.gz).Encode(rec); err != nil {
		return err
	}
	return b.gz.Flush()
}

func (b *batchSecret) data() (map[string][]byte, error) {
	if err := b.gz.Close(); err != nil {
		return nil, err
	}
	data := b.bodies
	data[batchRecordsKey] = b.records.Bytes()
	return data, nil
}

// isBatch says whether a pre-image Secret's name is a batch's, <prefix><run ID>-b<NNNNNN>.
func isBatch(name string) bool {
	rest, ok := strings.CutPrefix(name, SecretPrefix)
	i := strings.LastIndexByte(rest, '-')
	if !ok || i < 0 || len(rest)-i-1 != 7 || rest[i+1] != 'b' {
		return false
	}
	return strings.Trim(rest[i+2:], "0123456789") == ""
}

// batchRecords reads the records a batch Secret keeps.
func batchRecords(secret *unstructured.Unstructured) ([]report.BackupRecord, error) {
	data, ok, err := secretData(secret, batchRecordsKey)
	if err != nil || !ok {
		return nil, fmt.Errorf("the Secret %s holds no records: %v", secret.GetName(), err)
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("the records of Secret %s: %w", secret.GetName(), err)
	}
	var records []report.BackupRecord
	dec := json.NewDecoder(bufio.NewReader(gz))
	for {
		var rec report.BackupRecord
		err := dec.Decode(&rec)
		if errors.Is(err, io.EOF) {
			return records, nil
		}
		if err != nil || rec.Kind != report.BackupKind {
			return nil, fmt.Errorf("the Secret %s holds a record that is not a %s: %v", secret.GetName(), report.BackupKind, err)
		}
		records = append(records, rec)
	}
}

// openBatchBody opens a body kept in a batch Secret.
func openBatchBody(secret *unstructured.Unstructured, pre *report.PreImage) (*Body, error) {
	data, ok, err := secretData(secret, batchBodyPrefix+pre.Entry)
	if err != nil || !ok {
		return nil, fmt.Errorf("the Secret %s holds no pre-image %s: %v", secret.GetName(), pre.Entry, err)
	}
	reader, err := report.NewBodyReader(bytes.NewReader(data), pre.SHA256)
	if err != nil {
		return nil, err
	}
	return &Body{BodyReader: reader, close: func() error { return nil }}, nil
}
