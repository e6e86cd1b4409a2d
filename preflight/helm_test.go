package preflight

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// releaseManifest is the manifest of Helm release acme/acme, as `helm get manifest` shows it:
// documents each after "# Source: …", of kinds a preflight asks about and not.
const releaseManifest = `---
# Source: acme/templates/serviceaccount.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: acme-operator
  labels:
    app.kubernetes.io/name: acme-operator
---
# Source: acme/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: acme-config
data:
  config.yaml: |
    # a comment in a block scalar
    key: value
---
# Source: acme/templates/crds/gizmos.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.example.com
  annotations:
    meta.helm.sh/release-name: acme
spec:
  group: example.com
  names:
    plural: gizmos
    kind: Gizmo
---
# Source: acme/templates/crds/backups.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: backups.example.com
  annotations:
    helm.sh/resource-policy: keep
spec:
  group: example.com
---
# Source: acme/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: acme-webhook
spec:
  selector:
    app: acme-operator
---
# Source: acme/templates/metrics-service.yaml
apiVersion: v1
kind: Service
metadata:
  name: acme-metrics
  namespace: monitoring
---
# Source: acme/templates/empty.yaml
---
# Source: acme/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: acme-operator
  labels:
    app.kubernetes.io/name: acme-operator
spec:
  replicas: 1
  template:
    metadata:
      labels:
        app: acme-operator
---
# Source: acme/templates/statefulset.yaml
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: acme-store
---

---
# Source: acme/templates/daemonset.yaml
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: acme-agent
  namespace: acme-agents
---
# Source: acme/templates/webhooks.yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: acme-validating
  namespace: acme
webhooks:
- name: validate.acme.io
  clientConfig:
    service:
      namespace: acme
      name: acme-webhook
---
# Source: acme/templates/webhooks.yaml
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: acme-mutating
---
# Source: acme/templates/apiservice.yaml
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1.widgets.example.com
spec:
  group: widgets.example.com
  version: v1
  service:
    namespace: acme
    name: acme-api
---
# Source: acme/templates/legacy.yaml
apiVersion: extensions/v1beta1
kind: Deployment
metadata:
  name: acme-legacy
---
# Source: acme/templates/unnamed.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  generateName: acme-
`

// chartCRD is the crds/ file of the chart: Helm installs it, and never deletes it.
const chartCRD = `# a CRD of the chart's crds/ directory
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: sprockets.example.com
`

func TestAddManifest(t *testing.T) {
	key := func(r rules.Resource, namespace, name string) rules.ObjectKey {
		return rules.ObjectKey{Resource: r.GroupResource(), Namespace: namespace, Name: name}
	}
	released := rules.Uninstall{
		Workloads: []rules.ObjectKey{
			key(rules.Deployments, "acme", "acme-operator"),
			key(rules.StatefulSets, "acme", "acme-store"),
			key(rules.DaemonSets, "acme-agents", "acme-agent"),
		},
		Services:    []rules.ObjectKey{key(rules.Services, "acme", "acme-webhook"), key(rules.Services, "monitoring", "acme-metrics")},
		CRDs:        []string{"gizmos.example.com", "backups.example.com"},
		DeletedCRDs: []string{"gizmos.example.com"},
		WebhookConfigurations: []rules.ObjectKey{
			key(rules.ValidatingWebhookConfigurations, "", "acme-validating"),
			key(rules.MutatingWebhookConfigurations, "", "acme-mutating"),
		},
		APIServices: []string{"v1.widgets.example.com"},
	}
	tests := []struct {
		name     string
		start    rules.Uninstall
		manifest string
		deletes  bool
		want     rules.Uninstall
		wantErr  string
	}{
		{
			name:     "a release's manifest: what the uninstall deletes",
			start:    rules.Uninstall{Target: "Helm release acme/acme"},
			manifest: releaseManifest,
			deletes:  true,
			want:     func() rules.Uninstall { u := released; u.Target = "Helm release acme/acme"; return u }(),
		},
		{
			name:     "the chart's crds/: installed, never deleted",
			manifest: chartCRD,
			want:     rules.Uninstall{CRDs: []string{"widgets.example.com", "sprockets.example.com"}},
		},
		{
			name:     "added to what is there",
			start:    rules.Uninstall{CRDs: []string{"gizmos.example.com", "backups.example.com"}, DeletedCRDs: []string{"gizmos.example.com"}},
			manifest: chartCRD,
			deletes:  false,
			want: rules.Uninstall{
				CRDs:        []string{"gizmos.example.com", "backups.example.com", "widgets.example.com", "sprockets.example.com"},
				DeletedCRDs: []string{"gizmos.example.com"},
			},
		},
		{
			name:     "without --- at the start, or at all",
			manifest: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: solo\n",
			deletes:  true,
			want:     rules.Uninstall{Workloads: []rules.ObjectKey{key(rules.Deployments, "acme", "solo")}},
		},
		{
			name:     "a separator followed by a comment",
			manifest: "--- # Source: acme/templates/a.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: a\n--- # Source: acme/templates/b.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: b\n",
			deletes:  true,
			want:     rules.Uninstall{Services: []rules.ObjectKey{key(rules.Services, "acme", "a"), key(rules.Services, "acme", "b")}},
		},
		{
			name:     "an empty manifest: nothing",
			manifest: "",
			deletes:  true,
		},
		{
			name:     "only comments and separators: nothing",
			manifest: "---\n# Source: acme/templates/empty.yaml\n---\n\n---\n",
			deletes:  true,
		},
		{
			name:     "a document that is not YAML",
			manifest: "---\napiVersion: v1\nkind: [Service\n",
			deletes:  true,
			wantErr:  "yaml",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := tt.start
			err := addManifest(&u, "acme", tt.manifest, tt.deletes)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, u)
		})
	}
}

// helmRecord is a release record as Helm's secret or configmap driver stores it: data.release is
// the release as JSON, gzipped unless plain, base64-encoded (helm pkg/storage/driver/util.go), and a
// Secret's data is served base64-encoded once more.
func helmRecord(t *testing.T, r rules.Resource, name string, revision int, status string, release map[string]any, plain bool) *unstructured.Unstructured {
	t.Helper()
	raw, err := json.Marshal(release)
	require.NoError(t, err)
	if !plain {
		var buf bytes.Buffer
		w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		require.NoError(t, err)
		_, err = w.Write(raw)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		raw = buf.Bytes()
	}
	data := base64.StdEncoding.EncodeToString(raw)
	if r == rules.Secrets {
		data = base64.StdEncoding.EncodeToString([]byte(data))
	}
	record := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       r.Kind,
		"metadata": map[string]any{
			"name":      fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, revision),
			"namespace": "acme",
			"labels":    map[string]any{"owner": "helm", "name": name, "status": status, "version": fmt.Sprint(revision)},
		},
		"data": map[string]any{"release": data},
	}}
	if r == rules.Secrets {
		record.Object["type"] = "helm.sh/release.v1"
	}
	return record
}

// releaseOf is a release as Helm marshals it (pkg/release), its chart's files among it, of
// which []byte data marshal as base64.
func releaseOf(manifest string, files map[string]string) map[string]any {
	var chartFiles []any
	for name, data := range files {
		chartFiles = append(chartFiles, map[string]any{"name": name, "data": []byte(data)})
	}
	return map[string]any{
		"name":      "acme",
		"namespace": "acme",
		"version":   3,
		"info":      map[string]any{"status": "deployed", "description": "Install complete"},
		"chart": map[string]any{
			"metadata":  map[string]any{"name": "acme", "version": "1.2.3", "apiVersion": "v2"},
			"templates": []any{map[string]any{"name": "templates/deployment.yaml", "data": []byte("{{ .Values }}")}},
			"values":    map[string]any{"replicas": 1},
			"files":     chartFiles,
		},
		"config":   map[string]any{},
		"manifest": manifest,
	}
}

func TestDecodeRelease(t *testing.T) {
	release := releaseOf(releaseManifest, map[string]string{"crds/widgets.yaml": chartCRD})
	corrupt := func(r rules.Resource, data string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": r.Kind, "data": map[string]any{"release": data}}}
	}
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	tests := []struct {
		name    string
		record  *unstructured.Unstructured
		wantErr string // "" for none
	}{
		{name: "a Secret, as Helm's secret driver stores it", record: helmRecord(t, rules.Secrets, "acme", 3, "deployed", release, false)},
		{name: "a ConfigMap, as Helm's configmap driver stores it", record: helmRecord(t, rules.ConfigMaps, "acme", 3, "deployed", release, false)},
		{name: "a ConfigMap of plain JSON, from before Helm gzipped", record: helmRecord(t, rules.ConfigMaps, "acme", 3, "deployed", release, true)},
		{name: "a Secret of plain JSON", record: helmRecord(t, rules.Secrets, "acme", 3, "deployed", release, true)},
		{name: "no data.release", record: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret"}}, wantErr: "no data.release"},
		{name: "not base64", record: corrupt(rules.ConfigMaps, "not base64!"), wantErr: "data.release: illegal base64"},
		{name: "a Secret base64-encoded only once", record: corrupt(rules.Secrets, b64([]byte{0x1f, 0x8b, 0x08, 0, 0, 0})), wantErr: "data.release: illegal base64"},
		{name: "gzip's magic bytes, then garbage", record: corrupt(rules.ConfigMaps, b64([]byte{0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0, 'x', 'y'})), wantErr: "data.release: "},
		{name: "gzipped, truncated", record: func() *unstructured.Unstructured {
			record := helmRecord(t, rules.ConfigMaps, "acme", 3, "deployed", release, false)
			data, _, _ := unstructured.NestedString(record.Object, "data", "release")
			raw, err := base64.StdEncoding.DecodeString(data)
			require.NoError(t, err)
			return corrupt(rules.ConfigMaps, b64(raw[:len(raw)/2]))
		}(), wantErr: "data.release: unexpected EOF"},
		{name: "not JSON", record: corrupt(rules.ConfigMaps, b64([]byte("manifest: yaml"))), wantErr: "data.release: invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeRelease(tt.record)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, releaseManifest, got.Manifest)
			require.Len(t, got.Chart.Files, 1)
			assert.Equal(t, "crds/widgets.yaml", got.Chart.Files[0].Name)
			assert.Equal(t, chartCRD, string(got.Chart.Files[0].Data))
		})
	}
}
