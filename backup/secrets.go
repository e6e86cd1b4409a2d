package backup

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/operator-sweeper/operator-sweeper/report"
)

// The labels, type and data keys of the Secrets that keep pre-images.
const (
	// PreImageLabel marks every Secret of a pre-image, record or body part: what is pruned, and
	// what the admission policy lets the sweeper create and delete.
	PreImageLabel = "operator-sweeper.io/pre-image"
	// RunLabel names the run whose write the Secret is of.
	RunLabel = "operator-sweeper.io/run"
	// SecretType is their type.
	SecretType = "operator-sweeper.io/pre-image"
	// SecretPrefix starts their names: <prefix><run ID>-<NNNNNN>[-<part>].
	SecretPrefix = "operator-sweeper-pre-image-"
	recordKey    = "record.json"
	bodyKey      = "body"
	managedBy    = "app.kubernetes.io/managed-by"
)

// partSize is the most a body part holds: a Secret's data is bounded by 1 MiB, and the rest of the
// Secret needs room too.
const partSize = 900 << 10

// secretsResource is the Secrets' resource.
var secretsResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// Secrets keeps a run's records and bodies in immutable Secrets of Namespace, the sweeper's: a
// record in <prefix><run ID>-<NNNNNN>, its body, gzipped, in as many parts <…>-0, <…>-1 as it needs,
// each created as it fills, so that a body is never held whole: a CustomResourceDefinition's custom
// resources are streamed into them page by page.
type Secrets struct {
	Client    dynamic.Interface
	Namespace string
	RunID     string
	writes    int
	batches   int
}

// Body implements Store.
func (s *Secrets) Body(ctx context.Context, _ string, pre *report.PreImage, write func(*report.BodyWriter) error) error {
	s.writes++
	base := fmt.Sprintf("%s%s-%06d", SecretPrefix, s.RunID, s.writes)
	parts := &partWriter{ctx: ctx, store: s, base: base}
	body := report.NewBodyWriter(parts)
	if err := errors.Join(write(body), body.Close(), parts.flush(true)); err != nil {
		return fmt.Errorf("keep the pre-image in Secrets %s/%s-*: %w", s.Namespace, base, err)
	}
	pre.Kept, pre.Parts, pre.SHA256 = "secret:"+s.Namespace+"/"+base, parts.parts, body.Sum()
	return nil
}

// Record implements Store: the record of a write goes to its Secret before the write; its outcome
// is the report's.
func (s *Secrets) Record(ctx context.Context, rec report.BackupRecord, outcome bool) error {
	if outcome {
		return nil
	}
	namespace, name, ok := secretOf(rec.Finding.Before)
	if !ok || namespace != s.Namespace {
		return fmt.Errorf("the record of %s names no body kept in Secrets of %s", rec.Finding.Object, s.Namespace)
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := s.create(ctx, name, map[string][]byte{recordKey: data}); err != nil {
		return fmt.Errorf("keep the record of %s in Secret %s/%s: %w", rec.Finding.Object, s.Namespace, name, err)
	}
	return nil
}

// create creates an immutable Secret of the run.
func (s *Secrets) create(ctx context.Context, name string, data map[string][]byte) error {
	encoded := map[string]any{}
	for k, v := range data {
		encoded[k] = base64.StdEncoding.EncodeToString(v)
	}
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata": map[string]any{
			"name":      name,
			"namespace": s.Namespace,
			"labels":    map[string]any{PreImageLabel: "true", RunLabel: s.RunID, managedBy: "operator-sweeper"},
		},
		"type":      SecretType,
		"immutable": true,
		"data":      encoded,
	}}
	_, err := s.Client.Resource(secretsResource).Namespace(s.Namespace).Create(ctx, secret, metav1.CreateOptions{})
	return err
}

// partWriter cuts a body into parts of partSize, each kept in a Secret as it fills.
type partWriter struct {
	ctx   context.Context
	store *Secrets
	base  string
	buf   bytes.Buffer
	parts int
}

func (p *partWriter) Write(b []byte) (int, error) {
	p.buf.Write(b)
	for p.buf.Len() >= partSize {
		if err := p.flush(false); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// flush keeps a full part, or, at the end, what is left (at least one part in all).
func (p *partWriter) flush(last bool) error {
	n := min(p.buf.Len(), partSize)
	if last && n == 0 && p.parts > 0 {
		return nil
	}
	part := slices.Clone(p.buf.Next(n))
	if err := p.store.create(p.ctx, fmt.Sprintf("%s-%d", p.base, p.parts), map[string][]byte{bodyKey: part}); err != nil {
		return err
	}
	p.parts++
	return nil
}

// secretOf is the namespace and name of the record's Secret a pre-image names.
func secretOf(pre *report.PreImage) (namespace, name string, ok bool) {
	if pre == nil {
		return "", "", false
	}
	ref, ok := strings.CutPrefix(pre.Kept, "secret:")
	namespace, name, found := strings.Cut(ref, "/")
	return namespace, name, ok && found && strings.HasPrefix(name, SecretPrefix) && !strings.Contains(name, "/")
}

// LoadRun reads the records a run kept in Secrets of namespace: the run's Secrets are listed by
// their metadata, page by page, and only its records read, one at a time; the parts of its bodies,
// up to 900 KiB each, are read only when a body is opened.
func LoadRun(ctx context.Context, client Client, namespace, runID string) ([]report.BackupRecord, error) {
	var records []report.BackupRecord
	err := eachSecret(ctx, client, namespace, PreImageLabel+"=true,"+RunLabel+"="+runID, func(meta metav1.PartialObjectMetadata) error {
		batch := isBatch(meta.Name)
		if !batch && !isRecord(meta.Name) {
			return nil // a body's part
		}
		secret, err := client.Dynamic.Resource(secretsResource).Namespace(namespace).Get(ctx, meta.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read the record %s/%s: %w", namespace, meta.Name, err)
		}
		if batch {
			kept, err := batchRecords(secret)
			records = append(records, kept...)
			return err
		}
		data, ok, err := secretData(secret, recordKey)
		if err != nil || !ok {
			return fmt.Errorf("the Secret %s/%s holds no record: %v", namespace, meta.Name, err)
		}
		var rec report.BackupRecord
		if err := json.Unmarshal(data, &rec); err != nil || rec.Kind != report.BackupKind {
			return fmt.Errorf("the Secret %s/%s is not a %s record: %v", namespace, meta.Name, report.BackupKind, err)
		}
		records = append(records, rec)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the Secrets of run %s in %s: %w", runID, namespace, err)
	}
	slices.SortFunc(records, func(a, b report.BackupRecord) int {
		return cmp.Or(strings.Compare(a.Finding.Before.Kept, b.Finding.Before.Kept), strings.Compare(a.Finding.Before.Entry, b.Finding.Before.Entry))
	})
	return records, nil
}

// isRecord says whether a pre-image Secret's name is a record's, <prefix><run ID>-<NNNNNN>,
// rather than a body part's, <…>-<part>.
func isRecord(name string) bool {
	rest, ok := strings.CutPrefix(name, SecretPrefix)
	i := strings.LastIndexByte(rest, '-')
	if !ok || i < 0 || len(rest)-i-1 != 6 {
		return false
	}
	return strings.Trim(rest[i+1:], "0123456789") == ""
}

// Client is how the Secrets of pre-images are read: their metadata by the metadata client, page by
// page, so that listing many never holds their data; the data of one, when needed, by the dynamic
// client.
type Client struct {
	Dynamic  dynamic.Interface
	Metadata metadata.Interface
}

// listPageSize bounds a page of a list of pre-image Secrets' metadata.
const listPageSize = 500

// eachSecret hands fn the metadata of every Secret of namespace that selector selects, page by
// page.
func eachSecret(ctx context.Context, client Client, namespace, selector string, fn func(metav1.PartialObjectMetadata) error) error {
	opts := metav1.ListOptions{LabelSelector: selector, Limit: listPageSize}
	for {
		page, err := client.Metadata.Resource(secretsResource).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return err
		}
		for _, item := range page.Items {
			if err := fn(item); err != nil {
				return err
			}
		}
		if opts.Continue = page.Continue; opts.Continue == "" {
			return nil
		}
	}
}

// OpenSecrets opens the body a record kept in Secrets names; it reads its parts one at a time.
func OpenSecrets(ctx context.Context, client dynamic.Interface, pre *report.PreImage) (*Body, error) {
	return (&SecretsReader{Client: client}).Open(ctx, pre)
}

// SecretsReader opens the bodies records kept in Secrets name. It holds the batch Secret it read
// last: restore opens a batch's bodies one after another, and a batch Secret is up to 900 KiB,
// read once rather than once per body. Kept Secrets are immutable; one deleted and created again
// meanwhile would fail the SHA-256 each body is checked against.
type SecretsReader struct {
	Client dynamic.Interface
	batch  *unstructured.Unstructured
}

// Open opens the body pre names.
func (r *SecretsReader) Open(ctx context.Context, pre *report.PreImage) (*Body, error) {
	namespace, name, ok := secretOf(pre)
	if ok && pre.Entry != "" && isBatch(name) {
		if r.batch == nil || r.batch.GetNamespace() != namespace || r.batch.GetName() != name {
			secret, err := r.Client.Resource(secretsResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("read the pre-image: %w", err)
			}
			r.batch = secret
		}
		return openBatchBody(r.batch, pre)
	}
	client := r.Client
	if !ok || pre.Parts < 1 {
		return nil, fmt.Errorf("the record names no body kept in Secrets (%q)", pre.Kept)
	}
	parts := &partReader{ctx: ctx, client: client.Resource(secretsResource).Namespace(namespace), base: name, parts: pre.Parts}
	reader, err := report.NewBodyReader(parts, pre.SHA256)
	if err != nil {
		return nil, err
	}
	return &Body{BodyReader: reader, close: func() error { return nil }}, nil
}

// partReader reads a body's parts in order, one Secret at a time.
type partReader struct {
	ctx         context.Context
	client      dynamic.ResourceInterface
	base        string
	next, parts int
	current     *bytes.Reader
}

func (p *partReader) Read(b []byte) (int, error) {
	for p.current == nil || p.current.Len() == 0 {
		if p.next == p.parts {
			return 0, io.EOF
		}
		name := fmt.Sprintf("%s-%d", p.base, p.next)
		secret, err := p.client.Get(p.ctx, name, metav1.GetOptions{})
		if err != nil {
			return 0, fmt.Errorf("read the part %d of the pre-image: %w", p.next, err)
		}
		data, ok, err := secretData(secret, bodyKey)
		if err != nil || !ok {
			return 0, fmt.Errorf("the Secret %s holds no part of a pre-image: %v", name, err)
		}
		p.current, p.next = bytes.NewReader(data), p.next+1
	}
	return p.current.Read(b)
}

// secretData decodes a key of a Secret's data.
func secretData(secret *unstructured.Unstructured, key string) ([]byte, bool, error) {
	encoded, ok, err := unstructured.NestedString(secret.Object, "data", key)
	if err != nil || !ok {
		return nil, false, err
	}
	data, err := base64.StdEncoding.DecodeString(encoded)
	return data, true, err
}

// PruneSecrets deletes the Secrets of pre-images in namespace created before cutoff, each with its
// UID and resourceVersion as preconditions. They are listed by their metadata, page by page: their data is never read.
func PruneSecrets(ctx context.Context, client Client, namespace string, cutoff time.Time) (removed int, err error) {
	secrets := client.Metadata.Resource(secretsResource).Namespace(namespace)
	var errs []error
	err = eachSecret(ctx, client, namespace, PreImageLabel+"=true", func(secret metav1.PartialObjectMetadata) error {
		if !secret.CreationTimestamp.Time.Before(cutoff) {
			return nil
		}
		uid, resourceVersion := secret.UID, secret.ResourceVersion
		err := secrets.Delete(ctx, secret.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &resourceVersion}})
		switch {
		case err == nil:
			removed++
		case !apierrors.IsNotFound(err):
			errs = append(errs, err)
		}
		return nil
	})
	return removed, errors.Join(append(errs, err)...)
}

// KeySecret names the Secret in the sweeper's namespace that holds the key it signs its records
// with; restore verifies them with it.
const KeySecret = "operator-sweeper-signing-key"

// Key returns the signing key of namespace; with create, it creates it on first use (32 random
// bytes), and a run that loses the race to create it reads the winner's.
func Key(ctx context.Context, client dynamic.Interface, namespace string, create bool) ([]byte, error) {
	secrets := client.Resource(secretsResource).Namespace(namespace)
	for range 2 {
		secret, err := secrets.Get(ctx, KeySecret, metav1.GetOptions{})
		if err == nil {
			key, ok, err := secretData(secret, "key")
			if err != nil || !ok || len(key) < 32 {
				return nil, fmt.Errorf("the Secret %s/%s holds no signing key of 32 bytes or more", namespace, KeySecret)
			}
			return key, nil
		}
		if !apierrors.IsNotFound(err) || !create {
			return nil, fmt.Errorf("read the signing key %s/%s: %w", namespace, KeySecret, err)
		}
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		secret = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1",
			"kind":       "Secret",
			"metadata":   map[string]any{"name": KeySecret, "namespace": namespace, "labels": map[string]any{managedBy: "operator-sweeper"}},
			"type":       "Opaque",
			"immutable":  true,
			"data":       map[string]any{"key": base64.StdEncoding.EncodeToString(key)},
		}}
		_, err = secrets.Create(ctx, secret, metav1.CreateOptions{})
		switch {
		case err == nil:
			return key, nil
		case apierrors.IsNotFound(err):
			return nil, fmt.Errorf("create the signing key %s/%s: namespace %s does not exist: create it, or name the sweeper's namespace with --sweeper-namespace", namespace, KeySecret, namespace)
		case !apierrors.IsAlreadyExists(err):
			return nil, fmt.Errorf("create the signing key %s/%s: %w", namespace, KeySecret, err)
		}
	}
	return nil, fmt.Errorf("the signing key %s/%s was created and is gone", namespace, KeySecret)
}
