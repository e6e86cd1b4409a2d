package report

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestBodyRoundTrip: a body reads back as the images of what was written, numbers typed as the
// API server's objects are (so that a pre-image compares equal to a live object), and a body
// changed in any way is refused once read.
func TestBodyRoundTrip(t *testing.T) {
	objs := []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "uid": "u1", "resourceVersion": "7"},
			"data": map[string]any{"k": "v"}}},
		{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Thing", "metadata": map[string]any{"name": "b"},
			"spec": map[string]any{"size": int64(3), "ratio": 0.5}, "status": map[string]any{"ready": true}}},
	}
	var buf bytes.Buffer
	w := NewBodyWriter(&buf)
	for _, obj := range objs {
		require.NoError(t, w.Write(obj))
	}
	require.NoError(t, w.Close())
	assert.Equal(t, 2, w.Objects())

	read := func(data []byte, sum string) ([]*unstructured.Unstructured, error) {
		r, err := NewBodyReader(bytes.NewReader(data), sum)
		if err != nil {
			return nil, err
		}
		var out []*unstructured.Unstructured
		for {
			obj, err := r.Next()
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if err != nil {
				return out, err
			}
			out = append(out, obj)
		}
	}
	got, err := read(buf.Bytes(), w.Sum())
	require.NoError(t, err)
	require.Len(t, got, 2)
	for i := range objs {
		assert.Equal(t, Image(objs[i]).Object, got[i].Object)
	}

	_, err = read(buf.Bytes(), "0"+w.Sum()[1:])
	assert.ErrorContains(t, err, "the pre-image's body was changed")

	var other bytes.Buffer
	w2 := NewBodyWriter(&other)
	require.NoError(t, w2.Write(objs[0]))
	require.NoError(t, w2.Close())
	_, err = read(other.Bytes(), w.Sum())
	assert.ErrorContains(t, err, "the pre-image's body was changed", "a shorter body, of the same objects")
}
