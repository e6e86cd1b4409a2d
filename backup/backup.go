// Package backup keeps what undoing a sweep's writes needs, where access is controlled and it
// outlives the pod, and finds it again for restore: before each write, the signed record of the
// write and the body of its object's pre-image. The shipped default keeps them in Secrets in the
// sweeper's own namespace, the way Helm keeps releases (Secrets); --backup-dir keeps them in files
// on a volume (Dir). Either way they are pruned after --backup-retention, and nothing of a body
// ever reaches a report or a log.
package backup

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-sweeper/operator-sweeper/report"
)

// Store keeps the records and bodies of a run's writes.
type Store interface {
	// Body keeps the body of a pre-image, which write streams to it, under name (unique in the
	// run), durably, and says where in pre (Kept, Parts, SHA256).
	Body(ctx context.Context, name string, pre *report.PreImage, write func(*report.BodyWriter) error) error
	// Record keeps the signed record of a write whose body is kept where its finding's before
	// says, durably, before the write is sent; kept again once its outcome is known, it replaces
	// the first where the store can (a file), and is dropped where it cannot (a Secret, which is
	// never changed once kept: the report has the outcome).
	Record(ctx context.Context, rec report.BackupRecord, outcome bool) error
	// Batch keeps the pre-images and records of many writes, durably, before any of them is
	// sent: each entry's body is placed (its Pre says where), then its record made and kept.
	Batch(ctx context.Context, entries []Entry) error
}

// Entry is one write's pre-image, kept in a Batch: its object as read right before the write, and
// its signed record, which can only be made once the body is placed (the record names where).
type Entry struct {
	// Name names the object in a file (FileSafe).
	Name   string
	Object *unstructured.Unstructured
	Pre    *report.PreImage
	Record func(pre *report.PreImage) (report.BackupRecord, error)
}

// NewRunID names a run: its start, and a random suffix for the runs of the same second (the
// shards of an Indexed Job), in the characters an object's name may hold.
func NewRunID(start time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail
	return strings.ToLower(start.UTC().Format("20060102T150405Z")) + "-" + hex.EncodeToString(b[:])
}

// Sign is the signature of a finding of a run in a cluster, with key.
func Sign(key []byte, f report.FindingResult, clusterUID, runID string) (string, error) {
	payload, err := report.SigningPayload(f, clusterUID, runID)
	if err != nil {
		return "", fmt.Errorf("sign the finding about %s: %w", f.Object, err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(payload)
	return hex.EncodeToString(mac.Sum(nil)), nil
}

// Verify checks a finding's signature, with key.
func Verify(key []byte, f report.FindingResult, clusterUID, runID string) error {
	if f.Signature == "" {
		return errors.New("it carries no signature: it was not signed by the sweeper")
	}
	want, err := Sign(key, f, clusterUID, runID)
	if err != nil {
		return err
	}
	if !hmac.Equal([]byte(want), []byte(f.Signature)) {
		return errors.New("its signature does not match: it was changed after the sweeper signed it, or signed with another key")
	}
	return nil
}

// Body is a pre-image's body, being read: the object, then a CustomResourceDefinition's custom
// resources (Next); Close lets go of where it is kept.
type Body struct {
	*report.BodyReader
	close func() error
}

// Close ends the reading.
func (b *Body) Close() error { return b.close() }
