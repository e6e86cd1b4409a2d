// Command image assembles the operator-sweeper container image without a container engine: one
// layer on an empty base, laid out as gcr.io/distroless/static-debian12:nonroot is (the static
// binary, CA certificates, /etc/passwd and /etc/group with root and nonroot, /home/nonroot, /tmp,
// no shell), written as an OCI image layout directory and as a tarball `docker load` reads.
//
//	go run ./hack/image --binary bin/operator-sweeper --out bin/image --version v0.1.0
//
// The build is reproducible: every timestamp is $SOURCE_DATE_EPOCH (0 when unset), the tar
// entries are sorted and their owners set, so the same binary and CA bundle give the same digest.
// The Dockerfile gives the same paths, user and entrypoint on the distroless base
// (test/e2e/image_test.go checks both).
package main

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image is: the Dockerfile says the same (USER, ENTRYPOINT, COPY destination).
const (
	// Binary is where the binary is in the image.
	Binary = "/operator-sweeper"
	// User is the image's user: distroless' nonroot, by number so that Kubernetes'
	// runAsNonRoot can check it without /etc/passwd.
	User = "65532:65532"
	// CABundle is where the CA certificates are, as on Debian and distroless.
	CABundle = "/etc/ssl/certs/ca-certificates.crt"
	// Repository is the image's repository, tagged with the version in the tarball.
	Repository = "ghcr.io/operator-sweeper/operator-sweeper"
	// Source is the image's org.opencontainers.image.source.
	Source = "https://github.com/operator-sweeper/operator-sweeper"
)

// The users and groups of distroless (rules_distroless passwd and group of
// GoogleContainerTools/distroless common/BUILD.bazel).
const (
	rootID    = 0
	nonrootID = 65532
	passwd    = `root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
`
	group = `root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
`
	// nsswitch makes the C library's order explicit, as distroless does; Go's resolver reads it.
	nsswitch = "hosts: files dns\n"
)

// Options are the flags.
type Options struct {
	// Binary is the static linux binary to put at /operator-sweeper (make build's).
	Binary string
	// Out is the OCI image layout directory to write; the tarball goes to Out + ".tar".
	Out string
	// Version is the image's version label and the tarball's tag.
	Version string
	// Revision is the commit, the org.opencontainers.image.revision label; optional.
	Revision string
	// Arch is the image's architecture, a GOARCH, which the binary must be built for.
	Arch string
	// CABundle is the build machine's CA bundle to copy (Debian's ca-certificates).
	CABundle string
}

func main() {
	var o Options
	flag.StringVar(&o.Binary, "binary", "bin/operator-sweeper", "the static linux binary make build wrote")
	flag.StringVar(&o.Out, "out", "bin/image", "the OCI image layout directory to write; the docker load tarball goes to <out>.tar")
	flag.StringVar(&o.Version, "version", "", "the image version: its org.opencontainers.image.version label and tag (required)")
	flag.StringVar(&o.Revision, "revision", "", "the commit, the org.opencontainers.image.revision label (optional)")
	flag.StringVar(&o.Arch, "arch", runtime.GOARCH, "the image architecture (GOARCH); the binary must be built for it")
	flag.StringVar(&o.CABundle, "ca-bundle", CABundle, "the CA certificates to copy, a PEM bundle (Debian: apt-get install ca-certificates)")
	flag.Parse()
	digest, err := Build(o, sourceDateEpoch)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %s@%s (%s.tar: %s:%s)\n", o.Out, Repository, digest, o.Out, Repository, o.Version)
}

// sourceDateEpoch is the time of every file and of the image: $SOURCE_DATE_EPOCH, the
// reproducible-builds convention, or the Unix epoch.
func sourceDateEpoch() (time.Time, error) {
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	seconds, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want Unix seconds: %w", epoch, err)
	}
	return time.Unix(seconds, 0).UTC(), nil
}

// Build writes the image and returns its digest.
func Build(o Options, now func() (time.Time, error)) (v1.Hash, error) {
	if o.Version == "" {
		return v1.Hash{}, errors.New("--version is required")
	}
	tag, err := name.NewTag(Repository + ":" + o.Version)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("--version %q is not a valid tag: %w", o.Version, err)
	}
	created, err := now()
	if err != nil {
		return v1.Hash{}, err
	}
	binary, err := readBinary(o.Binary, o.Arch)
	if err != nil {
		return v1.Hash{}, err
	}
	certs, err := readCABundle(o.CABundle)
	if err != nil {
		return v1.Hash{}, err
	}
	img, err := Image(binary, certs, o, created)
	if err != nil {
		return v1.Hash{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	if err := writeLayout(o.Out, img, o); err != nil {
		return v1.Hash{}, err
	}
	if err := tarball.WriteToFile(o.Out+".tar", tag, img); err != nil {
		return v1.Hash{}, fmt.Errorf("write %s.tar: %w", o.Out, err)
	}
	return digest, nil
}

// elfArch maps an ELF machine to its GOARCH, for the architectures Go builds linux binaries for.
var elfArch = map[elf.Machine]string{
	elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64", elf.EM_386: "386", elf.EM_ARM: "arm",
	elf.EM_PPC64: "ppc64le", elf.EM_S390: "s390x", elf.EM_RISCV: "riscv64", elf.EM_LOONGARCH: "loong64",
}

// readBinary reads the binary, after checking it runs in the image: a linux binary of the image's
// architecture, statically linked (the image has no C library).
func readBinary(path, arch string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the binary: %w (run make build)", err)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s is not a linux binary: %w (build it with GOOS=linux)", path, err)
	}
	defer f.Close()
	if got := elfArch[f.Machine]; got != arch {
		return nil, fmt.Errorf("%s is built for %s (%s), not %s: pass --arch %s or build with GOARCH=%s", path, got, f.Machine, arch, got, arch)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return nil, fmt.Errorf("%s is dynamically linked, and the image has no C library: build it with make build (CGO_ENABLED=0)", path)
		}
	}
	return data, nil
}

// readCABundle reads the CA certificates of the build machine.
func readCABundle(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no CA certificates at %s: install Debian's ca-certificates (apt-get install ca-certificates) or pass --ca-bundle", path)
	}
	if err != nil {
		return nil, fmt.Errorf("read the CA certificates: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no PEM certificate: pass --ca-bundle with Debian's %s", path, CABundle)
	}
	return data, nil
}

// file is an entry of the image's only layer.
type file struct {
	path     string // without the leading /; a directory's ends in /
	mode     int64
	uid, gid int
	data     []byte
}

// files is the image's file system, as distroless static-debian12:nonroot has it but for
// tzdata, netbase and os-release, which the sweeper does not read.
func files(binary, certs []byte) []file {
	dir := func(path string, mode int64, id int) file {
		return file{path: path, mode: mode, uid: id, gid: id}
	}
	reg := func(path string, mode int64, data []byte) file {
		return file{path: path, mode: mode, uid: rootID, gid: rootID, data: data}
	}
	return []file{
		dir("etc/", 0o755, rootID),
		reg("etc/group", 0o644, []byte(group)),
		reg("etc/nsswitch.conf", 0o644, []byte(nsswitch)),
		reg("etc/passwd", 0o644, []byte(passwd)),
		dir("etc/ssl/", 0o755, rootID),
		dir("etc/ssl/certs/", 0o755, rootID),
		reg(CABundle[1:], 0o644, certs),
		dir("home/", 0o755, rootID),
		dir("home/nonroot/", 0o700, nonrootID),
		reg(Binary[1:], 0o755, binary),
		dir("root/", 0o700, rootID),
		dir("tmp/", 0o1777, rootID),
	}
}

// layerTar is the layer's tar: entries sorted by path, every one with its owner and the same time.
func layerTar(entries []file, mtime time.Time) ([]byte, error) {
	entries = slices.Clone(entries)
	// A path sorts before the longer ones it prefixes: a directory before what it holds.
	slices.SortFunc(entries, func(a, b file) int { return strings.Compare(a.path, b.path) })
	names := map[int]string{rootID: "root", nonrootID: "nonroot"}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{
			Name: e.path, Mode: e.mode, Uid: e.uid, Gid: e.gid, Uname: names[e.uid], Gname: names[e.gid],
			ModTime: mtime, Format: tar.FormatPAX,
		}
		if e.path[len(e.path)-1] == '/' {
			hdr.Typeflag = tar.TypeDir
		} else {
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.path, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Image is the image of the binary and CA bundle, created at created.
func Image(binary, certs []byte, o Options, created time.Time) (v1.Image, error) {
	data, err := layerTar(files(binary, certs), created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, MediaType: types.OCILayer, History: v1.History{
		Created:   v1.Time{Time: created},
		CreatedBy: "hack/image: " + Binary + ", CA certificates, passwd, group, /home/nonroot, /tmp",
	}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Created = v1.Time{Time: created}
	cfg.OS, cfg.Architecture = "linux", o.Arch
	labels := map[string]string{
		"org.opencontainers.image.title":   "operator-sweeper",
		"org.opencontainers.image.version": o.Version,
		"org.opencontainers.image.source":  Source,
	}
	if o.Revision != "" {
		labels["org.opencontainers.image.revision"] = o.Revision
	}
	cfg.Config = v1.Config{
		User:       User,
		Entrypoint: []string{Binary},
		// As distroless nonroot: its home, PATH and SSL_CERT_FILE for what reads no default.
		WorkingDir: "/home/nonroot",
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=" + CABundle},
		Labels:     labels,
	}
	return mutate.ConfigFile(img, cfg)
}

// writeLayout writes the image as an OCI image layout at dir, replacing the layout there, if any.
func writeLayout(dir string, img v1.Image, o Options) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
			return fmt.Errorf("--out %s is a directory that is not an OCI image layout: remove it or choose another", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	index := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
		Platform:    &v1.Platform{OS: "linux", Architecture: o.Arch},
		Annotations: map[string]string{"org.opencontainers.image.ref.name": o.Version},
	}})
	if _, err := layout.Write(dir, index); err != nil {
		return fmt.Errorf("write %s: %w", dir, err)
	}
	return nil
}
