package rules

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestReadsAnnotation checks that objects keep every annotation a rule reads: each use of
// Annotations in the rules must be a lookup of a key, a literal or a constant, that
// ReadsAnnotation keeps. A rule that ranges over annotations would see only the kept ones.
func TestReadsAnnotation(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	consts := map[string]string{}
	var parsed []*ast.File
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "object.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		parsed = append(parsed, f)
		ast.Inspect(f, func(n ast.Node) bool {
			if spec, ok := n.(*ast.ValueSpec); ok {
				for i, id := range spec.Names {
					if i < len(spec.Values) {
						if lit, ok := spec.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[id.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
			return true
		})
	}
	found := 0
	for _, f := range parsed {
		lookups := map[ast.Expr]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.IndexExpr:
				if sel, ok := n.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Annotations" {
					lookups[sel] = true
					key, ok := annotationKey(n.Index, consts)
					if assert.True(t, ok, "%s: look annotations up by a literal or constant key", fset.Position(n.Pos())) {
						assert.True(t, ReadsAnnotation(key), "%s: objects drop annotation %s: add its family to readAnnotationPrefixes", fset.Position(n.Pos()), key)
						found++
					}
				}
			case *ast.SelectorExpr:
				if n.Sel.Name == "Annotations" && !lookups[n] {
					assert.Fail(t, "annotations used other than by key", "%s: objects keep only the annotations rules look up", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
	assert.Positive(t, found, "the rules read some annotations")
	assert.False(t, ReadsAnnotation("kubectl.kubernetes.io/last-applied-configuration"))
}

func annotationKey(index ast.Expr, consts map[string]string) (string, bool) {
	switch index := index.(type) {
	case *ast.BasicLit:
		if index.Kind == token.STRING {
			key, err := strconv.Unquote(index.Value)
			return key, err == nil
		}
	case *ast.Ident:
		key, ok := consts[index.Name]
		return key, ok
	}
	return "", false
}

func TestMetaOf(t *testing.T) {
	deleted := metav1.NewTime(testNow)
	meta := metav1.ObjectMeta{
		Namespace: "shop", Name: "a", UID: "u", ResourceVersion: "7", Generation: 3, GenerateName: "a-",
		CreationTimestamp: metav1.NewTime(testNow.Add(-1)), DeletionTimestamp: &deleted, DeletionGracePeriodSeconds: ptr.To[int64](30),
		Labels: map[string]string{"app": "shop"},
		Annotations: map[string]string{
			"meta.helm.sh/release-name": "shop", "kubectl.kubernetes.io/last-applied-configuration": "{}",
		},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "o"}},
		Finalizers:      []string{"example.com/f"},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
	}
	assert.Equal(t, Meta{
		Namespace: "shop", Name: "a", UID: "u", ResourceVersion: "7",
		CreationTimestamp: meta.CreationTimestamp, DeletionTimestamp: &deleted, DeletionGracePeriodSeconds: ptr.To[int64](30),
		Labels:          map[string]string{"app": "shop"},
		Annotations:     map[string]string{"meta.helm.sh/release-name": "shop"},
		OwnerReferences: meta.OwnerReferences,
		Finalizers:      []string{"example.com/f"},
	}, MetaOf(&meta))
	assert.Len(t, meta.Annotations, 2, "meta is left as it was")

	assert.Nil(t, MetaOf(&metav1.ObjectMeta{Annotations: map[string]string{"description": "x"}}).Annotations)
}

func TestControllerRef(t *testing.T) {
	obj := object(Pods, "shop", "p")
	assert.Nil(t, obj.ControllerRef())
	obj.OwnerReferences = []metav1.OwnerReference{
		{Kind: "ConfigMap", Name: "c", UID: "c", Controller: ptr.To(false)},
		{Kind: "ReplicaSet", Name: "rs", UID: "rs", Controller: ptr.To(true)},
	}
	assert.Same(t, &obj.OwnerReferences[1], obj.ControllerRef())
}
