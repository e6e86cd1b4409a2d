package e2e

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// imageRepository is the repository make image tags the docker load tarball with.
const imageRepository = "ghcr.io/operator-sweeper/operator-sweeper"

// buildImage runs hack/image, as make image does, on the binary make build built, into dir/image
// (and dir/image.tar), with env added to this process' environment but SOURCE_DATE_EPOCH.
func buildImage(t *testing.T, dir string, env ...string) string {
	t.Helper()
	out := filepath.Join(dir, "image")
	cmd := exec.Command("go", "run", "./hack/image", "--binary", mustAbs(t, string(sweeperBinary)), "--out", out,
		"--version", cluster.ReleaseStamp.Version, "--revision", cluster.ReleaseStamp.Commit)
	cmd.Dir = cluster.RepoRoot
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "SOURCE_DATE_EPOCH=") }), env...)
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, string(output))
	return out
}

// layoutImage is the only image of an OCI image layout, after checking its index entry.
func layoutImage(t *testing.T, dir string) v1.Image {
	t.Helper()
	index, err := layout.ImageIndexFromPath(dir)
	require.NoError(t, err)
	manifest, err := index.IndexManifest()
	require.NoError(t, err)
	require.Len(t, manifest.Manifests, 1)
	desc := manifest.Manifests[0]
	assert.Equal(t, &v1.Platform{OS: "linux", Architecture: "amd64"}, desc.Platform)
	assert.Equal(t, cluster.ReleaseStamp.Version, desc.Annotations["org.opencontainers.image.ref.name"])
	img, err := index.Image(desc.Digest)
	require.NoError(t, err)
	return img
}

// imageFile is a file of the image's flattened file system.
type imageFile struct {
	header *tar.Header
	data   []byte
}

// flatten reads the image's file system, by path without the leading /.
func flatten(t *testing.T, img v1.Image) map[string]imageFile {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]imageFile{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[strings.TrimSuffix(path.Clean(strings.TrimPrefix(hdr.Name, "/")), "/")] = imageFile{hdr, data}
	}
	return files
}

// TestImage: make image's image (hack/image) runs the binary make build built, as nonroot, with
// the CA certificates to reach the API server and a Pushgateway, and nothing else: no shell.
func TestImage(t *testing.T) {
	dir := t.TempDir()
	img := layoutImage(t, buildImage(t, dir))

	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "linux", cfg.OS)
	assert.Equal(t, "amd64", cfg.Architecture)
	assert.Equal(t, "65532:65532", cfg.Config.User, "nonroot, by number, so that runAsNonRoot can check it")
	assert.Equal(t, []string{"/operator-sweeper"}, cfg.Config.Entrypoint)
	assert.Empty(t, cfg.Config.Cmd)
	assert.Equal(t, "/home/nonroot", cfg.Config.WorkingDir, "as distroless nonroot")
	assert.Contains(t, cfg.Config.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", "as distroless")
	assert.Equal(t, map[string]string{
		"org.opencontainers.image.title":    "operator-sweeper",
		"org.opencontainers.image.version":  cluster.ReleaseStamp.Version,
		"org.opencontainers.image.revision": cluster.ReleaseStamp.Commit,
		"org.opencontainers.image.source":   "https://github.com/operator-sweeper/operator-sweeper",
	}, cfg.Config.Labels)
	assert.True(t, cfg.Created.Equal(time.Unix(0, 0)), "without SOURCE_DATE_EPOCH, the epoch: %s", cfg.Created)
	layers, err := img.Layers()
	require.NoError(t, err)
	assert.Len(t, layers, 1, "on an empty base")

	files := flatten(t, img)
	for name, f := range files {
		assert.False(t, name == "bin" || name == "usr/bin" || strings.HasPrefix(name, "bin/") || strings.HasPrefix(name, "usr/bin/"), "no /%s: nothing under /bin or /usr/bin", name)
		assert.NotContains(t, []string{"sh", "bash", "dash", "ash", "busybox"}, path.Base(name), "no shell: /%s", name)
		assert.True(t, f.header.ModTime.Equal(time.Unix(0, 0)), "/%s: the epoch, not the build time: %s", name, f.header.ModTime)
	}
	for _, name := range []string{"bin/sh", "usr/bin/env"} {
		assert.NotContains(t, files, name)
	}

	passwd := string(files["etc/passwd"].data)
	assert.Contains(t, passwd, "\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")
	assert.True(t, strings.HasPrefix(passwd, "root:x:0:0:"), passwd)
	assert.Contains(t, string(files["etc/group"].data), "\nnonroot:x:65532:\n")

	home := files["home/nonroot"].header
	if assert.NotNil(t, home, "/home/nonroot") {
		assert.Equal(t, byte(tar.TypeDir), home.Typeflag)
		assert.Equal(t, []int{65532, 65532}, []int{home.Uid, home.Gid}, "nonroot's home is nonroot's")
	}
	tmp := files["tmp"].header
	if assert.NotNil(t, tmp, "/tmp") {
		assert.Equal(t, byte(tar.TypeDir), tmp.Typeflag)
		assert.Equal(t, int64(0o1777), tmp.Mode&0o7777, "/tmp is writable by all, sticky")
	}

	// The CA bundle: PEM certificates, every one of them parses.
	bundle := files["etc/ssl/certs/ca-certificates.crt"]
	require.NotNil(t, bundle.header, "/etc/ssl/certs/ca-certificates.crt")
	assert.True(t, x509.NewCertPool().AppendCertsFromPEM(bundle.data))
	certs := 0
	for rest := bundle.data; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		require.Equal(t, "CERTIFICATE", block.Type)
		_, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err, "certificate %d", certs)
		certs++
	}
	assert.Greater(t, certs, 10, "a CA bundle, not a single certificate")

	// The binary: make build's, executable, and it runs.
	binary := files["operator-sweeper"]
	require.NotNil(t, binary.header, "/operator-sweeper")
	assert.Equal(t, byte(tar.TypeReg), binary.header.Typeflag)
	assert.Equal(t, int64(0o755), binary.header.Mode&0o7777)
	assert.Equal(t, []int{0, 0}, []int{binary.header.Uid, binary.header.Gid}, "owned by root: nonroot cannot replace it")
	built, err := os.ReadFile(string(sweeperBinary))
	require.NoError(t, err)
	assert.Equal(t, sha256.Sum256(built), sha256.Sum256(binary.data), "the binary make build built")
	extracted := filepath.Join(dir, "operator-sweeper")
	require.NoError(t, os.WriteFile(extracted, binary.data, os.FileMode(binary.header.Mode)&os.ModePerm))
	stdout, stderr, code := cluster.Binary(extracted).Run(t, "--version")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "operator-sweeper "+cluster.ReleaseStamp.Version+" (commit "+cluster.ReleaseStamp.Commit+")\n", stdout+stderr, "all it prints")

	// The docker load tarball: the same config and layer, tagged with the version.
	tarPath := filepath.Join(dir, "image.tar")
	loaded, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(tarPath) })
	require.NoError(t, err)
	require.Len(t, loaded, 1)
	assert.Equal(t, []string{imageRepository + ":" + cluster.ReleaseStamp.Version}, loaded[0].RepoTags)
	fromTar, err := tarball.ImageFromPath(tarPath, nil)
	require.NoError(t, err)
	for _, digest := range []func(v1.Image) (v1.Hash, error){v1.Image.ConfigName, func(img v1.Image) (v1.Hash, error) {
		layers, err := img.Layers()
		if err != nil {
			return v1.Hash{}, err
		}
		return layers[0].DiffID()
	}} {
		want, err := digest(img)
		require.NoError(t, err)
		got, err := digest(fromTar)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}

// TestImageReproducible: the same binary gives the same image, digest and tarball, whenever it is
// built; SOURCE_DATE_EPOCH sets its time.
func TestImageReproducible(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	digest := func(dir string) v1.Hash {
		d, err := layoutImage(t, filepath.Join(dir, "image")).Digest()
		require.NoError(t, err)
		return d
	}
	buildImage(t, first)
	time.Sleep(time.Second) // a timestamp taken from the clock would differ
	buildImage(t, second)
	assert.Equal(t, digest(first), digest(second))
	tar1, err := os.ReadFile(filepath.Join(first, "image.tar"))
	require.NoError(t, err)
	tar2, err := os.ReadFile(filepath.Join(second, "image.tar"))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(tar1, tar2), "the docker load tarballs are the same bytes")

	dated := t.TempDir()
	img := layoutImage(t, buildImage(t, dated, "SOURCE_DATE_EPOCH=1700000000"))
	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	assert.True(t, cfg.Created.Equal(time.Unix(1700000000, 0)), "%s", cfg.Created)
	assert.NotEqual(t, digest(first), digest(dated))
}

// TestImageRefusesWhatWouldNotRun: hack/image fails, and says what to do, without a CA bundle or
// with a binary of another architecture.
func TestImageRefusesWhatWouldNotRun(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--ca-bundle", filepath.Join(t.TempDir(), "missing.crt")}, "install Debian's ca-certificates"},
		{[]string{"--arch", "arm64"}, "is built for amd64"},
		{[]string{"--version", "not a tag"}, "not a valid tag"},
	} {
		args := append([]string{"run", "./hack/image", "--binary", mustAbs(t, string(sweeperBinary)), "--out", filepath.Join(t.TempDir(), "image"), "--version", cluster.ReleaseStamp.Version}, tt.args...)
		cmd := exec.Command("go", args...)
		cmd.Dir = cluster.RepoRoot
		out, err := cmd.CombinedOutput()
		assert.Error(t, err, "%v", tt.args)
		assert.Contains(t, string(out), tt.want, "%v", tt.args)
	}
}

// dockerfileStage is the instructions of the Dockerfile's last stage, the image: each
// instruction keyword with its arguments, continuation lines joined, comments dropped.
func dockerfileStage(t *testing.T) (from string, instructions [][2]string) {
	t.Helper()
	f, err := os.Open(filepath.Join(cluster.RepoRoot, "Dockerfile"))
	require.NoError(t, err)
	defer f.Close()
	var lines []string
	var continued string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if strings.HasPrefix(line, "#") || (line == "" && continued == "") {
			continue
		}
		if body, ok := strings.CutSuffix(line, `\`); ok {
			continued += body + " "
			continue
		}
		lines, continued = append(lines, continued+line), ""
	}
	require.NoError(t, scanner.Err())
	for _, line := range lines {
		keyword, args, _ := strings.Cut(line, " ")
		keyword, args = strings.ToUpper(keyword), strings.TrimSpace(args)
		if keyword == "FROM" {
			from, instructions = strings.Fields(args)[0], nil
			continue
		}
		instructions = append(instructions, [2]string{keyword, args})
	}
	return from, instructions
}

// dockerfileLabel is a key=value of a LABEL instruction.
var dockerfileLabel = regexp.MustCompile(`([\w.-]+)=("[^"]*"|\S+)`)

// TestDockerfileMatchesImage: a daemon build (make image-docker) gives the image make image
// assembles: the same binary path, user, entrypoint and label keys, on distroless nonroot, which
// has the same files (passwd and group with nonroot, the CA bundle, /home/nonroot, /tmp).
func TestDockerfileMatchesImage(t *testing.T) {
	cfg, err := layoutImage(t, buildImage(t, t.TempDir())).ConfigFile()
	require.NoError(t, err)

	from, instructions := dockerfileStage(t)
	assert.Equal(t, "gcr.io/distroless/static-debian12:nonroot", from, "the base whose layout hack/image reproduces")
	got := map[string][]string{}
	labels := map[string]bool{}
	for _, in := range instructions {
		keyword, args := in[0], in[1]
		got[keyword] = append(got[keyword], args)
		switch keyword {
		case "COPY":
			fields := strings.Fields(args)
			assert.Contains(t, fields, "--from=build", "the binary of the build stage: %s", args)
			assert.Equal(t, cfg.Config.Entrypoint[0], fields[len(fields)-1], "COPY puts the binary where the entrypoint runs it")
		case "ENTRYPOINT":
			var entrypoint []string
			require.NoError(t, json.Unmarshal([]byte(args), &entrypoint), "ENTRYPOINT in exec form: %s", args)
			assert.Equal(t, cfg.Config.Entrypoint, entrypoint)
		case "USER":
			assert.Equal(t, cfg.Config.User, args)
		case "LABEL":
			for _, m := range dockerfileLabel.FindAllStringSubmatch(args, -1) {
				labels[m[1]] = true
			}
		}
	}
	for _, keyword := range []string{"COPY", "ENTRYPOINT", "USER"} {
		assert.Len(t, got[keyword], 1, "one %s in the image stage", keyword)
	}
	assert.Empty(t, got["CMD"], "no CMD: the CronJob passes the arguments")
	assert.Empty(t, got["RUN"], "nothing to run in a shell-less image")
	assert.Equal(t, slices.Sorted(maps.Keys(cfg.Config.Labels)), slices.Sorted(maps.Keys(labels)), "the same labels")
}
