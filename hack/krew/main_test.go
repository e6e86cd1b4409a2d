package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestShippedManifest: plugins/sweeper.yaml has every field krew requires, no other, names an
// archive per platform as make dist names them, and is of the version the manifests deploy.
func TestShippedManifest(t *testing.T) {
	data, err := os.ReadFile("../../plugins/sweeper.yaml")
	require.NoError(t, err)
	var plugin Plugin
	require.NoError(t, yaml.UnmarshalStrict(data, &plugin), "only fields krew knows")
	require.NoError(t, validate(&plugin))

	platforms := map[string]bool{}
	for _, p := range plugin.Spec.Platforms {
		os, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		platforms[os+"/"+arch] = true
		assert.Equal(t, releases+"/"+plugin.Spec.Version+"/kubectl-sweeper_"+plugin.Spec.Version+"_"+os+"_"+arch+".tar.gz", p.URI)
	}
	assert.Equal(t, map[string]bool{"linux/amd64": true, "linux/arm64": true, "darwin/amd64": true, "darwin/arm64": true}, platforms)

	kustomization, err := os.ReadFile("../../manifests/base/kustomization.yaml")
	require.NoError(t, err)
	tag := regexp.MustCompile(`(?m)^\s+newTag:\s*(\S+)$`).FindSubmatch(kustomization)
	require.NotNil(t, tag)
	assert.Equal(t, string(tag[1]), plugin.Spec.Version, "the plugin and the image are released together")
}

// TestManifestOfArchives: the manifest lists each archive of the version with its sha256, and
// nothing else; without archives it is an error.
func TestManifestOfArchives(t *testing.T) {
	dist := t.TempDir()
	files := map[string][]byte{
		"kubectl-sweeper_v1.2.3_linux_amd64.tar.gz":  []byte("linux archive"),
		"kubectl-sweeper_v1.2.3_darwin_arm64.tar.gz": []byte("darwin archive"),
		"kubectl-sweeper_v1.2.2_linux_amd64.tar.gz":  []byte("an older release"),
		"linux_amd64":   nil, // the build directory make dist leaves
		"checksums.txt": []byte("not an archive"),
	}
	for name, content := range files {
		if content == nil {
			require.NoError(t, os.Mkdir(filepath.Join(dist, name), 0o755))
			continue
		}
		require.NoError(t, os.WriteFile(filepath.Join(dist, name), content, 0o644))
	}

	plugin, err := manifest("v1.2.3", dist)
	require.NoError(t, err)
	require.Len(t, plugin.Spec.Platforms, 2)
	for _, p := range plugin.Spec.Platforms {
		name := filepath.Base(p.URI)
		sum := sha256.Sum256(files[name])
		assert.Equal(t, hex.EncodeToString(sum[:]), p.Sha256, name)
		assert.Equal(t, "kubectl-sweeper", p.Bin)
	}
	assert.Equal(t, "darwin", plugin.Spec.Platforms[0].Selector.MatchLabels["os"], "sorted")

	_, err = manifest("v9.9.9", dist)
	assert.ErrorContains(t, err, "no archive of v9.9.9")
}

func TestValidateNamesEachProblem(t *testing.T) {
	err := validate(&Plugin{APIVersion: "v1", Kind: "Plugin", Metadata: Metadata{Name: "Sweeper"}, Spec: Spec{Version: "1.0",
		Platforms: []Platform{{URI: "http://example.com/a.tar.gz", Sha256: "abc", Bin: "sweeper"}}}})
	for _, want := range []string{`apiVersion "v1"`, `metadata.name "Sweeper"`, `spec.version "1.0"`, "spec.shortDescription", "spec.homepage",
		"selector matches every platform", "is not https", "is not a sha256", `bin "sweeper"`} {
		assert.ErrorContains(t, err, want)
	}
}
