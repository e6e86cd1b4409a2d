package preflight

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/operator-sweeper/operator-sweeper/input"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// Helm v3 keeps each revision of a release as a Secret (the default driver) or a ConfigMap,
// labelled owner=helm, name=<release>, status=<status>, version=<revision>, its data.release the
// release as JSON, gzipped and base64-encoded (helm pkg/storage/driver/util.go). The decoding is
// those few lines rather than Helm's SDK, which would bring Helm's whole dependency tree for it.

// helmRelease is what a preflight reads of a release record.
type helmRelease struct {
	// Manifest is the rendered templates, YAML documents each after "# Source: …".
	Manifest string `json:"manifest"`
	Chart    struct {
		// Files are the chart's files besides its templates: its crds/ directory among them,
		// whose CRDs Helm installs but never upgrades or deletes.
		Files []struct {
			Name string `json:"name"`
			Data []byte `json:"data"`
		} `json:"files"`
	} `json:"chart"`
}

// resolveRelease reads the latest revision of Helm release namespace/name, in Secrets
// and ConfigMaps, and what its manifest and its chart's crds/ install.
func resolveRelease(ctx context.Context, clients *sweeper.Clients, namespace, name string) (rules.Uninstall, error) {
	title := fmt.Sprintf("Helm release %s/%s", namespace, name)
	// helm uninstall deletes what the latest revision holds, whatever its status (failed and
	// pending-* revisions have live objects too): pkg/action/uninstall.go.
	var latest *unstructured.Unstructured
	latestRevision := int64(-1)
	for _, r := range []rules.Resource{rules.Secrets, rules.ConfigMaps} {
		list, err := clients.Dynamic.Resource(r.GroupVersionResource).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"owner": "helm", "name": name}).String()})
		if err != nil {
			return rules.Uninstall{}, fmt.Errorf("read the records of %s in %s: %w", title, r.GroupResource(), err)
		}
		for i := range list.Items {
			record := &list.Items[i]
			if revision, _ := strconv.ParseInt(record.GetLabels()["version"], 10, 64); revision > latestRevision {
				latest, latestRevision = record, revision
			}
		}
	}
	if latest == nil {
		return rules.Uninstall{}, input.Errorf("preflight: %s not found: no Secret or ConfigMap in %s labelled owner=helm, name=%s (a release kept in SQL cannot be read)", title, namespace, name)
	}
	if status := latest.GetLabels()["status"]; status == "uninstalled" || status == "uninstalling" {
		return rules.Uninstall{}, input.Errorf("preflight: %s is %s already: its latest revision, %s %s, says so", title, status, latest.GetKind(), latest.GetName())
	}
	release, err := decodeRelease(latest)
	if err != nil {
		return rules.Uninstall{}, fmt.Errorf("%s, %s %s: %w", title, latest.GetKind(), latest.GetName(), err)
	}
	u := rules.Uninstall{Target: title}
	if err := addManifest(&u, namespace, release.Manifest, true); err != nil {
		return rules.Uninstall{}, fmt.Errorf("%s, %s %s: manifest: %w", title, latest.GetKind(), latest.GetName(), err)
	}
	for _, file := range release.Chart.Files {
		// Helm installs the YAML and JSON files of crds/ only (chart.CRDObjects).
		if ext := path.Ext(file.Name); strings.HasPrefix(file.Name, "crds/") && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
			if err := addManifest(&u, namespace, string(file.Data), false); err != nil {
				return rules.Uninstall{}, fmt.Errorf("%s: chart file %s: %w", title, file.Name, err)
			}
		}
	}
	return u, nil
}

// decodeRelease decodes a release record's data.release: base64 once more in a Secret, whose data
// the API serves base64-encoded; then base64, and gzip if it starts with gzip's magic bytes.
func decodeRelease(record *unstructured.Unstructured) (*helmRelease, error) {
	data, _, _ := unstructured.NestedString(record.Object, "data", "release")
	if data == "" {
		return nil, errors.New("no data.release")
	}
	encoded := []byte(data)
	if record.GetKind() == rules.Secrets.Kind {
		var err error
		if encoded, err = base64.StdEncoding.DecodeString(data); err != nil {
			return nil, fmt.Errorf("data.release: %w", err)
		}
	}
	raw, err := base64.StdEncoding.DecodeString(string(encoded))
	if err != nil {
		return nil, fmt.Errorf("data.release: %w", err)
	}
	if bytes.HasPrefix(raw, []byte{0x1f, 0x8b, 0x08}) {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("data.release: %w", err)
		}
		if raw, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("data.release: %w", err)
		}
	}
	var release helmRelease
	if err := json.Unmarshal(raw, &release); err != nil {
		return nil, fmt.Errorf("data.release: %w", err)
	}
	return &release, nil
}

// addManifest adds to u what a manifest's documents install, of the kinds a preflight asks
// about; namespaced objects without a namespace are the release's. deletes says the uninstall
// deletes its CRDs.
func addManifest(u *rules.Uninstall, namespace, manifest string, deletes bool) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var obj struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name        string            `json:"name"`
				Namespace   string            `json:"namespace"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return err
		}
		r, ok := resourceOf(obj.APIVersion, obj.Kind)
		if !ok || obj.Metadata.Name == "" {
			continue
		}
		ns := ""
		if r.Namespaced {
			ns = obj.Metadata.Namespace
			if ns == "" {
				ns = namespace
			}
		}
		name := obj.Metadata.Name
		switch r.GroupResource() {
		case rules.Deployments.GroupResource(), rules.StatefulSets.GroupResource(), rules.DaemonSets.GroupResource():
			u.Workloads = append(u.Workloads, key(r, ns, name))
		case rules.Services.GroupResource():
			u.Services = append(u.Services, key(r, ns, name))
		case rules.CustomResourceDefinitions.GroupResource():
			u.CRDs = append(u.CRDs, name)
			// A template annotated helm.sh/resource-policy: keep outlives the uninstall.
			if deletes && obj.Metadata.Annotations["helm.sh/resource-policy"] != "keep" {
				u.DeletedCRDs = append(u.DeletedCRDs, name)
			}
		case rules.APIServices.GroupResource():
			u.APIServices = append(u.APIServices, name)
		default:
			u.WebhookConfigurations = append(u.WebhookConfigurations, key(r, "", name))
		}
	}
}
