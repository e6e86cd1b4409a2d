package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGeneratedFilesAreUpToDate: the ClusterRoles' rules, the admission policy's guarded
// finalizers and docs/catalog.md on disk are what make generate (and make manifests) writes from
// the walk's and the rules' declarations and the catalog.
func TestGeneratedFilesAreUpToDate(t *testing.T) {
	files, err := generate("../..")
	require.NoError(t, err)
	require.Len(t, files, 5)
	for _, f := range files {
		disk, err := os.ReadFile(filepath.Join("../..", f.path))
		require.NoError(t, err)
		assert.Equal(t, string(f.content), string(disk), "%s is stale: run make generate", f.path)
	}
}

// TestGlobRegexp: a glob becomes the regular expression that matches what path.Match matches.
func TestGlobRegexp(t *testing.T) {
	for glob, names := range map[string]map[string]bool{
		"karpenter.sh/termination":        {"karpenter.sh/termination": true, "karpenterxsh/termination": false, "karpenter.sh/termination2": false},
		"*.ceph.rook.io":                  {"cephcluster.ceph.rook.io": true, "a/b.ceph.rook.io": false, "ceph.rook.io": false},
		"finalizers.*.services.k8s.aws/*": {"finalizers.s3.services.k8s.aws/Bucket": true, "finalizers.s3.services.k8s.aws/a/b": false},
		"a?c":                             {"abc": true, "a/c": false},
	} {
		re := regexp.MustCompile("^" + globRegexp(glob) + "$")
		for name, want := range names {
			assert.Equal(t, want, re.MatchString(name), "%s ~ %s", glob, name)
		}
	}
}

// TestReplaceRegion keeps what is outside the markers, and refuses a file without them.
func TestReplaceRegion(t *testing.T) {
	out, err := replaceRegion([]byte("a\n# BEGIN generated x (why)\nold\n# END generated x\nb\n"), "x", "new\n")
	require.NoError(t, err)
	assert.Equal(t, "a\n# BEGIN generated x (why)\nnew\n# END generated x\nb\n", string(out))
	_, err = replaceRegion([]byte("a\n"), "x", "new\n")
	assert.ErrorContains(t, err, `no region "# BEGIN generated x"`)
	assert.True(t, strings.HasPrefix(string(out), "a\n"))
}
