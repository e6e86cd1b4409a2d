// Command krew writes the krew plugin manifest of kubectl-sweeper (plugins/sweeper.yaml) for the
// archives `make dist` built: one platform per archive, with its download URL and sha256.
//
//	go run ./hack/krew --version v0.1.0 --dist bin/dist > plugins/sweeper.yaml
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// The release download location of the archives.
const releases = "https://github.com/operator-sweeper/operator-sweeper/releases/download"

// Plugin is krew's plugin manifest, krew.googlecontainertools.github.com/v1alpha2 (the fields
// krew's index reads; sigs.k8s.io/krew/pkg/index).
type Plugin struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       Spec     `json:"spec"`
}

// Metadata names the plugin: `kubectl krew install <name>`, `kubectl <name>`.
type Metadata struct {
	Name string `json:"name"`
}

// Spec is what krew installs.
type Spec struct {
	Version          string     `json:"version"`
	Homepage         string     `json:"homepage"`
	ShortDescription string     `json:"shortDescription"`
	Description      string     `json:"description"`
	Caveats          string     `json:"caveats,omitempty"`
	Platforms        []Platform `json:"platforms"`
}

// Platform is one archive, for the os and arch its selector matches.
type Platform struct {
	Selector Selector `json:"selector"`
	URI      string   `json:"uri"`
	Sha256   string   `json:"sha256"`
	Bin      string   `json:"bin"`
	Files    []File   `json:"files,omitempty"`
}

// Selector is the label selector krew matches against os and arch.
type Selector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// File is what krew copies out of the archive.
type File struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// archiveName is how `make dist` names an archive: kubectl-sweeper_<version>_<os>_<arch>.tar.gz.
var archiveName = regexp.MustCompile(`^kubectl-sweeper_(v[^_]+)_([a-z0-9]+)_([a-z0-9]+)\.tar\.gz$`)

func main() {
	version := flag.String("version", "", "the release version, vX.Y.Z")
	dist := flag.String("dist", "bin/dist", "the directory of the archives make dist built")
	flag.Parse()
	plugin, err := manifest(*version, *dist)
	if err == nil {
		var data []byte
		if data, err = yaml.Marshal(plugin); err == nil {
			_, err = os.Stdout.Write(data)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hack/krew:", err)
		os.Exit(1)
	}
}

// manifest describes the archives of version in dist.
func manifest(version, dist string) (*Plugin, error) {
	entries, err := os.ReadDir(dist)
	if err != nil {
		return nil, err
	}
	plugin := &Plugin{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   Metadata{Name: "sweeper"},
		Spec: Spec{
			Version:          version,
			Homepage:         "https://github.com/operator-sweeper/operator-sweeper",
			ShortDescription: "Find and clean up what uninstalled operators left behind",
			Description: "Finds what uninstalled or broken operators (OLM or Helm) leave in a cluster: custom\n" +
				"resources stuck Terminating on a finalizer nobody will remove, InstallPlans that lost their\n" +
				"Subscription, CatalogSource pods on lost nodes, leftovers of deleted Subscriptions, dead\n" +
				"APIServices and webhooks. Explains each with evidence; writes nothing unless --dry-run=none.\n" +
				"`kubectl sweeper explain namespace/<name>` says why a namespace is stuck.\n",
			Caveats: "kubectl sweeper only reads with the default --dry-run=client. With --dry-run=none it needs\n" +
				"the rights to patch and delete what it cleans up; keep `restore --from` in mind.\n",
		},
	}
	for _, e := range entries {
		m := archiveName.FindStringSubmatch(e.Name())
		if m == nil || m[1] != version {
			continue
		}
		sum, err := fileSHA256(filepath.Join(dist, e.Name()))
		if err != nil {
			return nil, err
		}
		plugin.Spec.Platforms = append(plugin.Spec.Platforms, Platform{
			Selector: Selector{MatchLabels: map[string]string{"os": m[2], "arch": m[3]}},
			URI:      releases + "/" + version + "/" + e.Name(),
			Sha256:   sum,
			Bin:      "kubectl-sweeper",
			Files:    []File{{From: "kubectl-sweeper", To: "."}},
		})
	}
	if len(plugin.Spec.Platforms) == 0 {
		return nil, fmt.Errorf("no archive of %s in %s: run make dist VERSION=%s first", version, dist, version)
	}
	slices.SortFunc(plugin.Spec.Platforms, func(a, b Platform) int { return strings.Compare(a.URI, b.URI) })
	return plugin, validate(plugin)
}

func fileSHA256(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

var (
	semver    = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	hexSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)
	// pluginName is what krew accepts as a plugin name.
	pluginName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
)

// validate checks what krew checks of a manifest before it installs it (krew's
// internal/index/validation): the identity, a semantic version with "v", a short description,
// and for every platform a selector, an https URI, a sha256 and the binary.
func validate(p *Plugin) error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(p.APIVersion == "krew.googlecontainertools.github.com/v1alpha2", "apiVersion %q: krew reads krew.googlecontainertools.github.com/v1alpha2", p.APIVersion)
	check(p.Kind == "Plugin", "kind %q: want Plugin", p.Kind)
	check(pluginName.MatchString(p.Metadata.Name), "metadata.name %q is not a plugin name", p.Metadata.Name)
	check(semver.MatchString(p.Spec.Version), "spec.version %q is not a semantic version with a leading v", p.Spec.Version)
	check(p.Spec.ShortDescription != "" && len(p.Spec.ShortDescription) <= 80, "spec.shortDescription must be 1 to 80 characters")
	check(p.Spec.Homepage != "", "spec.homepage is empty")
	check(len(p.Spec.Platforms) > 0, "spec.platforms is empty")
	for i, pl := range p.Spec.Platforms {
		check(len(pl.Selector.MatchLabels) > 0, "spec.platforms[%d].selector matches every platform", i)
		check(strings.HasPrefix(pl.URI, "https://"), "spec.platforms[%d].uri %q is not https", i, pl.URI)
		check(hexSHA256.MatchString(pl.Sha256), "spec.platforms[%d].sha256 %q is not a sha256", i, pl.Sha256)
		check(pl.Bin == "kubectl-"+p.Metadata.Name, "spec.platforms[%d].bin %q: want kubectl-%s", i, pl.Bin, p.Metadata.Name)
		for j, f := range pl.Files {
			check(f.From != "" && f.To != "", "spec.platforms[%d].files[%d] needs from and to", i, j)
		}
	}
	return errors.Join(errs...)
}
