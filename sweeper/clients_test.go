package sweeper

import (
	"context"
	"encoding/pem"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/operator-sweeper/operator-sweeper/input"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(file, []byte(content), 0o600))
	return file
}

// kubeconfigFile writes a kubeconfig for server, changed by mutate, and returns its path.
func kubeconfigFile(t *testing.T, server string, caData []byte, mutate func(*clientcmdapi.Config)) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	if mutate != nil {
		mutate(cfg)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

func TestLoadRESTConfigErrors(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	dir := t.TempDir()
	tests := []struct {
		name       string
		kubeconfig string
		wantErr    string
	}{
		{"not a kubeconfig", writeFile(t, "apiVersion: v1\nkind: Config\n"), "defines no cluster: is it a kubeconfig file?"},
		{"no current-context", kubeconfigFile(t, "https://127.0.0.1:1", nil, func(c *clientcmdapi.Config) { c.CurrentContext = "" }),
			"has no current-context: set it, or pass --context"},
		{"certificate-authority a directory", kubeconfigFile(t, "https://127.0.0.1:1", nil, func(c *clientcmdapi.Config) {
			c.Clusters["c"].CertificateAuthority = dir
		}), "kubeconfig: certificate-authority " + dir + ": read " + dir + ": is a directory"},
		{"certificate-authority not PEM", kubeconfigFile(t, "https://127.0.0.1:1", []byte("junk"), nil),
			"kubeconfig: certificate-authority (data) holds no PEM certificate"},
		{"client certificate not PEM", kubeconfigFile(t, "https://127.0.0.1:1", nil, func(c *clientcmdapi.Config) {
			c.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("junk"), ClientKeyData: []byte("junk")}
		}), "kubeconfig: client-certificate and client-key: tls: failed to find any PEM data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := LoadRESTConfig(tt.kubeconfig, "")
			var inputErr *input.Error
			require.True(t, errors.As(err, &inputErr), "want an input.Error, got %v", err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}

	t.Setenv("KUBECONFIG", filepath.Join(dir, "a")+string(filepath.ListSeparator)+filepath.Join(dir, "b"))
	_, _, err := LoadRESTConfig("", "")
	require.Error(t, err)
	assert.Equal(t, "$KUBECONFIG "+os.Getenv("KUBECONFIG")+" defines no cluster: its files are missing or empty", err.Error())
}

// TestPingSaysWhatToFix: each way the first request fails points at the part of the kubeconfig
// to change.
func TestPingSaysWhatToFix(t *testing.T) {
	unauthorized := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`))
	}))
	defer unauthorized.Close()
	caData := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: unauthorized.Certificate().Raw})
	// httptest's certificate is for 127.0.0.1 and example.com, not for localhost.
	misnamed := strings.Replace(unauthorized.URL, "127.0.0.1", "localhost", 1)
	tests := []struct {
		name       string
		kubeconfig string
		wantErr    string
	}{
		{"rejected credentials", kubeconfigFile(t, unauthorized.URL, caData, nil), "the API server at " + unauthorized.URL + " rejected the kubeconfig's credentials"},
		{"a certificate for another name", kubeconfigFile(t, misnamed, caData, nil),
			"the kubeconfig's certificate-authority does not vouch for the API server at " + misnamed},
		{"nothing listens", kubeconfigFile(t, "https://127.0.0.1:1", caData, nil), "cannot reach the API server at https://127.0.0.1:1"},
		{"credentials plugin fails", kubeconfigFile(t, unauthorized.URL, caData, func(c *clientcmdapi.Config) {
			c.AuthInfos["u"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
				APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/false", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
		}), "kubeconfig: no request could be sent to the API server at " + unauthorized.URL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := LoadRESTConfig(tt.kubeconfig, "")
			require.NoError(t, err)
			clients, err := NewClients(cfg, ClientConfig{QPS: 1000, Burst: 2000, RequestTimeout: time.Minute}, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			err = clients.Ping(context.Background(), cfg.Host)
			var inputErr *input.Error
			require.True(t, errors.As(err, &inputErr), "want an input.Error, got %v", err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}
