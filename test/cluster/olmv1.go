package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// OLM v1's CRDs come from the published module of operator-controller, pinned: v1.2.0 is the
// newest version the module proxy serves here (later ones are refused). It has ClusterExtension and
// ClusterCatalog; ClusterObjectSet came later.
const (
	OLMv1Module  = "github.com/operator-framework/operator-controller"
	OLMv1Version = "v1.2.0"
)

// InstallOLMv1CRDs installs OLM v1's ClusterExtension and ClusterCatalog CRDs, from the module
// downloaded into the Go module cache (outside the repository), unless they are installed.
func (c *Cluster) InstallOLMv1CRDs(ctx context.Context) error {
	dir, err := moduleDir(ctx, OLMv1Module+"@"+OLMv1Version)
	if err != nil {
		return err
	}
	return c.installCRDFiles(ctx, []string{
		filepath.Join(dir, "config/base/operator-controller/crd/bases/olm.operatorframework.io_clusterextensions.yaml"),
		filepath.Join(dir, "config/base/catalogd/crd/bases/olm.operatorframework.io_clustercatalogs.yaml"),
	})
}

// moduleDir downloads a module at an exact version into the module cache, and returns its
// directory. It runs outside any module, so that no go.mod changes.
func moduleDir(ctx context.Context, module string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %v %s %s", module, runErr, info.Error, stderr.String())
	}
	return info.Dir, nil
}
