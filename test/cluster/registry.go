package cluster

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"sigs.k8s.io/yaml"
)

// The demo operator the test catalog serves: one bundle, whose image is "" so that OLM installs
// it from the objects in the catalog rather than from an unpack Job that would pull an image.
const (
	DemoPackage = "sweeper-demo"
	DemoChannel = "stable"
	DemoCSV     = "sweeper-demo.v0.1.0"
	// DemoCRD is the CRD the demo operator owns.
	DemoCRD = "gadgets.demo.operator-sweeper.io"
)

// demoCSV is the demo operator's ClusterServiceVersion: a Deployment (its pod runs on a kwok
// node), namespaced and cluster-wide permissions (OLM makes Roles and ClusterRoles for them, the
// latter labelled olm.owner), and the CRD it owns.
const demoCSV = `
apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: sweeper-demo.v0.1.0
  annotations: {capabilities: Basic Install, alm-examples: "[]"}
spec:
  displayName: Sweeper demo
  description: The operator operator-sweeper's tests install with OLM.
  version: 0.1.0
  provider: {name: operator-sweeper}
  maturity: alpha
  installModes:
  - {type: OwnNamespace, supported: true}
  - {type: SingleNamespace, supported: true}
  - {type: MultiNamespace, supported: false}
  - {type: AllNamespaces, supported: true}
  customresourcedefinitions:
    owned:
    - {name: gadgets.demo.operator-sweeper.io, version: v1, kind: Gadget, displayName: Gadget, description: A gadget.}
  install:
    strategy: deployment
    spec:
      permissions:
      - serviceAccountName: sweeper-demo
        rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list, watch]}]
      clusterPermissions:
      - serviceAccountName: sweeper-demo
        rules: [{apiGroups: [demo.operator-sweeper.io], resources: [gadgets, gadgets/status], verbs: ["*"]}]
      deployments:
      - name: sweeper-demo
        spec:
          replicas: 1
          selector: {matchLabels: {app: sweeper-demo}}
          template:
            metadata: {labels: {app: sweeper-demo}}
            spec:
              serviceAccountName: sweeper-demo
              containers: [{name: manager, image: "quay.io/operator-sweeper/sweeper-demo:0.1.0"}]
`

const demoCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.demo.operator-sweeper.io}
spec:
  group: demo.operator-sweeper.io
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`

// demoCatalog is the file-based catalog (FBC) of the demo operator.
func demoCatalog() ([]byte, error) {
	object := func(manifest string) (map[string]any, error) {
		data, err := yaml.YAMLToJSON([]byte(manifest))
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "olm.bundle.object", "value": map[string]any{"data": base64.StdEncoding.EncodeToString(data)}}, nil
	}
	csv, err := object(demoCSV)
	if err != nil {
		return nil, err
	}
	crd, err := object(demoCRD)
	if err != nil {
		return nil, err
	}
	blobs := []map[string]any{
		{"schema": "olm.package", "name": DemoPackage, "defaultChannel": DemoChannel},
		{"schema": "olm.channel", "package": DemoPackage, "name": DemoChannel, "entries": []any{map[string]any{"name": DemoCSV}}},
		{"schema": "olm.bundle", "package": DemoPackage, "name": DemoCSV, "image": "", "properties": []any{
			map[string]any{"type": "olm.package", "value": map[string]any{"packageName": DemoPackage, "version": "0.1.0"}},
			map[string]any{"type": "olm.gvk", "value": map[string]any{"group": "demo.operator-sweeper.io", "kind": "Gadget", "version": "v1"}},
			csv, crd,
		}},
	}
	var out []byte
	for _, blob := range blobs {
		data, err := json.Marshal(blob)
		if err != nil {
			return nil, err
		}
		out = append(append(out, data...), '\n')
	}
	return out, nil
}

// StartRegistry serves the demo operator's catalog with opm on a free loopback port, and returns
// the address a CatalogSource's spec.address names.
func (c *Cluster) StartRegistry() (string, error) {
	dir := filepath.Join(c.dir, "catalog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	catalog, err := demoCatalog()
	if err != nil {
		return "", fmt.Errorf("the demo catalog: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog.json"), catalog, 0o600); err != nil {
		return "", err
	}
	port, err := freePort()
	if err != nil {
		return "", err
	}
	if _, err := c.startProcess("registry", "opm", false, nil,
		"serve", dir, "--port="+strconv.Itoa(port), "--pprof-addr=127.0.0.1:0", "--termination-log="+filepath.Join(c.dir, "registry.termination")); err != nil {
		return "", err
	}
	address := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if conn, err := net.Dial("tcp", address); err == nil {
			conn.Close()
			return address, nil
		}
	}
	return "", fmt.Errorf("the registry does not listen on %s; see %s", address, filepath.Join(c.LogDir, "registry.log"))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
