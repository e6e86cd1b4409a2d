package integration

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// TestBadInput runs the binary on bad input of every kind (issue 14): each case exits 2 with one
// line on standard error that names the problem and the flag, config key, variable or kubeconfig
// field to change, prints nothing on standard output, and reads nothing from the cluster.
//
// Every case runs with $KUBECONFIG pointing at a recording proxy in front of the test cluster, so
// that input that slipped through validation would be seen listing; the kubeconfig cases pass
// their own --kubeconfig.
func TestBadInput(t *testing.T) {
	proxy := startFaultProxy(t, cluster.Faults{})
	dir := t.TempDir()
	file := func(name, content string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	config := func(name, content string) []string { return []string{"--config", file(name+".yaml", content)} }
	// The Pushgateway's flags are checked only with a Pushgateway to push to; nothing listens here.
	const pushgateway = "--pushgateway-url=http://127.0.0.1:9"

	// Kubeconfigs: the proxy's with one thing wrong, one for each way client-go can fail.
	kubeconfig := func(name string, mutate func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)) []string {
		t.Helper()
		caseDir := filepath.Join(dir, name)
		require.NoError(t, os.Mkdir(caseDir, 0o700))
		path, err := proxy.Kubeconfig(caseDir)
		require.NoError(t, err)
		cfg, err := clientcmd.LoadFromFile(path)
		require.NoError(t, err)
		current := cfg.Contexts[cfg.CurrentContext]
		mutate(cfg.Clusters[current.Cluster], cfg.AuthInfos[current.AuthInfo])
		require.NoError(t, clientcmd.WriteToFile(*cfg, path))
		return []string{"--kubeconfig", path}
	}
	expired := clusterClientCert(t, -48*time.Hour, -24*time.Hour)
	// Signed by the API server's client CA and valid: what expired is, but for the dates, so that
	// the 401 below is the expiry's and not a CA's the server never trusted.
	requireAccepted(t, clusterClientCert(t, -time.Hour, time.Hour))
	now := time.Now()
	strangerCert, strangerKey, strangerCA, err := cluster.UntrustedClientCertificate("bad-input", []string{"system:masters"}, now.Add(-time.Hour), now.Add(time.Hour))
	require.NoError(t, err)
	// The client certificate cases talk to the API server itself: the proxy ends TLS, and with it
	// the client's certificate. A server that answers 401 lists nothing to anyone.
	toAPIServer := func(cert, key []byte) func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo) {
		return func(cluster *clientcmdapi.Cluster, user *clientcmdapi.AuthInfo) {
			cluster.Server, cluster.CertificateAuthorityData = testCluster.Config.Host, testCluster.Config.CAData
			user.ClientCertificateData, user.ClientKeyData = cert, key
		}
	}

	tests := []struct {
		name string
		args []string
		env  []string // KEY=value, on top of the proxy's $KUBECONFIG
		// want are parts of the one line: the problem, and what names it (flag, key, file).
		want []string
	}{
		// Flags, each with a value of the right type but out of range, or of the wrong type.
		{"dry-run", []string{"--dry-run=bogus"}, nil, []string{`--dry-run "bogus" is invalid`, "use client, server or none"}},
		{"output", []string{"-o", "xml"}, nil, []string{`--output "xml" is invalid`}},
		{"concurrency zero", []string{"--concurrency=0"}, nil, []string{"--concurrency 0 is invalid", "at least 1"}},
		{"concurrency not a number", []string{"--concurrency=abc"}, nil, []string{`invalid argument "abc" for "--concurrency" flag`}},
		{"page-size", []string{"--page-size=-1"}, nil, []string{"--page-size -1 is invalid"}},
		{"qps", []string{"--qps=0"}, nil, []string{"--qps 0 is invalid", "positive"}},
		{"burst", []string{"--burst=0"}, nil, []string{"--burst 0 is invalid"}},
		{"max-actions", []string{"--max-actions=-1"}, nil, []string{"--max-actions -1 is invalid"}},
		{"min-age not a duration", []string{"--min-age=abc"}, nil, []string{`invalid argument "abc" for "--min-age" flag`, "invalid duration"}},
		{"min-age negative", []string{"--min-age=-1h"}, nil, []string{"--min-age -1h0m0s is invalid", "must not be negative"}},
		{"min-terminating-age", []string{"--min-terminating-age=x"}, nil, []string{`invalid argument "x" for "--min-terminating-age" flag`}},
		{"timeout", []string{"--timeout=-1s"}, nil, []string{"--timeout -1s is invalid"}},
		{"request-timeout", []string{"--request-timeout=0s"}, nil, []string{"--request-timeout 0s is invalid", "positive"}},
		{"log-level", []string{"--log-level=loud"}, nil, []string{`--log-level "loud" is invalid`}},
		{"log-format", []string{"--log-format=xml"}, nil, []string{`--log-format "xml" is invalid`}},
		{"include-resources", []string{"--include-resources=["}, nil, []string{`--include-resources: pattern "[" is invalid`}},
		{"exclude-namespaces", []string{"--exclude-namespaces=["}, nil, []string{`--exclude-namespaces: pattern "[" is invalid`}},
		{"protected-namespaces empty", []string{"--protected-namespaces="}, nil, []string{"--protected-namespaces is empty"}},
		{"rules", []string{"--rules=nonexistent"}, nil, []string{`--rules: unknown rule "nonexistent"`}},
		{"push-grouping", []string{pushgateway, "--push-grouping=bad"}, nil, []string{`--push-grouping "bad" is invalid`, "label=value"}},
		{"pushgateway-url", []string{"--pushgateway-url=ftp://x"}, nil, []string{`--pushgateway-url "ftp://x" is invalid`}},
		{"pushgateway-timeout", []string{pushgateway, "--pushgateway-timeout=0s"}, nil, []string{"--pushgateway-timeout 0s is invalid"}},
		{"pushgateway-username without password", []string{pushgateway, "--pushgateway-username=sweeper"}, nil,
			[]string{"--pushgateway-username and --pushgateway-password-file go together"}},
		{"pushgateway-ca-file", []string{pushgateway, "--pushgateway-ca-file=/nonexistent/ca.crt"}, nil,
			[]string{"--pushgateway-ca-file", "/nonexistent/ca.crt: no such file"}},
		{"notify-url", []string{"--notify-url=ftp://x/services/XXXX"}, nil, []string{"--notify-url is invalid: ftp://x/…: use an http:// or https:// URL"}},
		{"notify-url and notify-url-file", []string{"--notify-url=http://127.0.0.1:9/hook", "--notify-url-file=" + file("notify-url", "http://127.0.0.1:9/hook\n")}, nil,
			[]string{"use either --notify-url or --notify-url-file, not both"}},
		{"notify-url-file missing", []string{"--notify-url-file=/nonexistent/notify-url"}, nil, []string{"--notify-url-file", "/nonexistent/notify-url: no such file"}},
		{"notify-url-file content", []string{"--notify-url-file=" + file("notify-url-ftp", "ftp://x/services/XXXX\n")}, nil,
			[]string{"--notify-url-file", "holds an invalid URL: ftp://x/…"}},
		{"notify-format", []string{"--notify-url=http://127.0.0.1:9/hook", "--notify-format=xml"}, nil, []string{`--notify-format "xml" is invalid`, "use json or slack"}},
		{"notify-on", []string{"--notify-url=http://127.0.0.1:9/hook", "--notify-on=sometimes"}, nil, []string{`--notify-on "sometimes" is invalid`, "actions, findings, failure or always"}},
		{"notify-timeout", []string{"--notify-url=http://127.0.0.1:9/hook", "--notify-timeout=0s"}, nil, []string{"--notify-timeout 0s is invalid"}},
		{"require-notify without url", []string{"--require-notify"}, nil, []string{"--require-notify needs --notify-url or --notify-url-file"}},
		{"report-file", []string{"--report-file=/nonexistent-dir/r.json"}, nil, []string{"--report-file /nonexistent-dir/r.json: its directory does not exist"}},
		{"unhealthy-zone-threshold", []string{"--unhealthy-zone-threshold=2"}, nil, []string{"--unhealthy-zone-threshold 2 is invalid"}},
		{"backup-dir", []string{"--backup-dir=/nonexistent-dir"}, nil, []string{"--backup-dir /nonexistent-dir is not a directory"}},
		{"backup-retention", []string{"--backup-retention=soon"}, nil, []string{`invalid argument "soon" for "--backup-retention" flag`, "use a duration such as 30d"}},
		{"restore without --from", []string{"restore"}, nil, []string{"restore needs --from"}},
		{"restore --from missing", []string{"restore", "--from", filepath.Join(dir, "no-report.json")}, nil, []string{"restore --from", "no-report.json: no such file"}},
		{"restore --from not a report", []string{"restore", "--from", file("not-a-report.json", `{"kind": "ConfigMap"}`)}, nil, []string{"holds no SweepReport"}},
		{"restore --only", []string{"restore", "--from", file("empty-report.json", `{"apiVersion": "sweeper.operator-sweeper.io/v1alpha1", "kind": "SweepReport"}`), "--only", "clusterrole"}, nil,
			[]string{`restore --only "clusterrole": give an object as TYPE/NAME`}},
		{"unknown flag", []string{"--dryrun=none"}, nil, []string{"unknown flag: --dryrun"}},
		{"positional argument", []string{"sweep"}, nil, []string{`unexpected argument "sweep"`}},

		// The environment.
		{"SWEEPER_PUSHGATEWAY_URL", nil, []string{"SWEEPER_PUSHGATEWAY_URL=://bad"}, []string{`SWEEPER_PUSHGATEWAY_URL is invalid (missing protocol scheme; not shown`, "http(s)://host:port"}},
		{"KUBECONFIG of missing files", nil, []string{"KUBECONFIG=" + filepath.Join(dir, "nowhere")}, []string{"$KUBECONFIG", "defines no cluster"}},

		// The config file.
		{"config wrong type", config("type", "concurrency: eight\n"), nil, []string{"type.yaml: concurrency: got a string, want a whole number"}},
		{"config unknown key", config("unknown", "max-action: 3\n"), nil, []string{`unknown field "max-action"`}},
		{"config unknown rule setting", config("rulekey", "rules:\n  stuck-terminating:\n    min-age: 1h\n"), nil,
			[]string{`unknown field "rules.stuck-terminating.min-age"`}},
		{"config unknown rule", config("rule", "rules:\n  nonexistent: {}\n"), nil, []string{`unknown field "rules.nonexistent"`}},
		{"config duplicate key", config("duplicate", "qps: 1\nqps: 2\n"), nil, []string{`key "qps" already set`}},
		{"config bad glob", config("glob", "exclude-namespaces: ['[']\n"), nil, []string{`exclude-namespaces: pattern "[" is invalid`}},
		{"config bad rule selector", config("selector", "rules:\n  catalog-pods:\n    selector: 'a in (b'\n"), nil, []string{`rules.catalog-pods.selector "a in (b"`}},
		{"config bad rule toggle", config("toggle", "rules:\n  catalog-pods:\n    enabled: maybe\n"), nil, []string{"rules.catalog-pods.enabled"}},
		{"config bad duration", config("duration", "min-age: 10 minutes\n"), nil, []string{"duration.yaml: min-age:", `unknown unit " minutes"`}},
		{"config finalizers without controllers", config("finalizers", "finalizers:\n- pattern: '*.acme.io/finalizer'\n"), nil,
			[]string{"finalizers[0] (*.acme.io/finalizer) has neither controllers nor a consequence"}},
		{"config empty protected-namespaces", config("protected", "protected-namespaces: []\n"), nil, []string{"--protected-namespaces is empty"}},
		{"config notify-format", config("notify", "notify-url: https://hooks.example.com/XXXX\nnotify-format: teams\n"), nil, []string{`--notify-format "teams" is invalid`}},
		{"config directory", []string{"--config", dir}, nil, []string{"--config " + dir + " is a directory"}},
		{"config missing", []string{"--config", filepath.Join(dir, "missing.yaml")}, nil, []string{"--config", "missing.yaml: no such file"}},
		{"config empty", config("empty", ""), nil, []string{"empty.yaml is empty"}},
		{"config comments only", config("comments", "# dry-run: none\n"), nil, []string{"comments.yaml is empty"}},
		{"config huge", config("huge", strings.Repeat("# a comment, over and over\n", 20<<20/27)), nil,
			[]string{"huge.yaml is larger than the limit of 1 MiB"}},
		{"config not YAML", config("syntax", "qps: [1\n"), nil, []string{"syntax.yaml: yaml: line"}},
		{"config a list", config("list", "- dry-run: none\n"), nil, []string{"list.yaml: got a list, want a mapping of options"}},
		{"config apiVersion", config("apiversion", "apiVersion: sweeper.operator-sweeper.io/v2\n"), nil,
			[]string{`apiVersion "sweeper.operator-sweeper.io/v2" is not supported`}},
		{"config kind", config("kind", "kind: ConfigMap\n"), nil, []string{`kind "ConfigMap" is not supported`}},

		// The kubeconfig.
		{"kubeconfig missing", []string{"--kubeconfig", filepath.Join(dir, "no-kubeconfig")}, nil, []string{"kubeconfig", "no-kubeconfig: no such file"}},
		{"kubeconfig not YAML", []string{"--kubeconfig", file("kubeconfig-syntax", "clusters: [\n")}, nil, []string{"kubeconfig", "kubeconfig-syntax", "yaml: line 1"}},
		{"kubeconfig without clusters", []string{"--kubeconfig", file("kubeconfig-empty", "apiVersion: v1\nkind: Config\n")}, nil,
			[]string{"--kubeconfig", "kubeconfig-empty defines no cluster"}},
		{"kubeconfig context", []string{"--context", "nonexistent"}, nil, []string{"kubeconfig", `context "nonexistent" does not exist`}},
		{"kubeconfig certificate-authority missing", kubeconfig("ca-missing", func(cluster *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			cluster.CertificateAuthorityData, cluster.CertificateAuthority = nil, "/nonexistent/ca.crt"
		}), nil, []string{"kubeconfig", "certificate-authority /nonexistent/ca.crt", "no such file"}},
		{"kubeconfig certificate-authority unreadable", kubeconfig("ca-unreadable", func(cluster *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			// A directory: as root, which tests may run as, a file without read permission is read all the same.
			cluster.CertificateAuthorityData, cluster.CertificateAuthority = nil, dir
		}), nil, []string{"kubeconfig: certificate-authority " + dir, "is a directory"}},
		{"kubeconfig certificate-authority not PEM", kubeconfig("ca-garbage", func(cluster *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			cluster.CertificateAuthorityData, cluster.CertificateAuthority = nil, file("garbage.crt", "not a certificate\n")
		}), nil, []string{"kubeconfig: certificate-authority", "garbage.crt holds no PEM certificate"}},
		{"kubeconfig client certificate not PEM", kubeconfig("cert-garbage", func(_ *clientcmdapi.Cluster, user *clientcmdapi.AuthInfo) {
			user.ClientCertificateData, user.ClientKeyData = []byte("not a certificate"), []byte("not a key")
		}), nil, []string{"kubeconfig: client-certificate and client-key", "PEM"}},
		{"kubeconfig client certificate expired", kubeconfig("expired", toAPIServer(expired.cert, expired.key)), nil,
			[]string{"rejected the kubeconfig's credentials"}},
		{"kubeconfig client certificate of an unknown CA", kubeconfig("stranger", toAPIServer(strangerCert, strangerKey)), nil,
			[]string{"rejected the kubeconfig's credentials"}},
		{"kubeconfig tokenFile missing", kubeconfig("token", func(_ *clientcmdapi.Cluster, user *clientcmdapi.AuthInfo) {
			user.TokenFile = "/nonexistent/token"
		}), nil, []string{"kubeconfig", "/nonexistent/token: no such file"}},
		{"kubeconfig exec plugin fails", kubeconfig("exec", func(_ *clientcmdapi.Cluster, user *clientcmdapi.AuthInfo) {
			user.Exec = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/false", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
		}), nil, []string{"kubeconfig", "getting credentials", "/bin/false failed"}},
		{"server unreachable", kubeconfig("unreachable", func(cluster *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			cluster.Server = "https://127.0.0.1:1"
		}), nil, []string{"cannot reach the API server at https://127.0.0.1:1", "connection refused"}},
		{"server of another CA", kubeconfig("wrong-ca", func(cluster *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			cluster.CertificateAuthorityData = strangerCA
		}), nil, []string{"the kubeconfig's certificate-authority does not vouch for the API server at " + proxy.URL, "unknown authority"}},
	}
	require.GreaterOrEqual(t, len(tests), 40, "issue 14 asks for at least 40 cases")

	// The proxy must see what the binary reads, or "nothing listed" below proves nothing.
	stdout, stderr, code := runSweeperWith(t, proxy, nil, "--include-resources=namespaces", "--rules=stuck-terminating", "-o", "json")
	require.Equal(t, 0, code, stderr)
	require.NotEmpty(t, stdout)
	require.NotEmpty(t, beyondDiscovery(proxy.Requests()), "a sweep through the proxy lists namespaces")

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(proxy.Requests())
			stdout, stderr, code := runSweeperWith(t, proxy, tt.env, tt.args...)
			t.Log(strings.TrimSpace(stderr)) // for -v: the messages, read as a user does

			assert.Equal(t, 2, code, "exit code; stderr: %s", stderr)
			assert.Empty(t, stdout)
			line, ok := strings.CutSuffix(stderr, "\n")
			assert.True(t, ok, "stderr ends its line: %q", stderr)
			assert.NotContains(t, line, "\n", "one line")
			assert.True(t, strings.HasPrefix(line, "error: "), line)
			for _, want := range tt.want {
				assert.Contains(t, line, want)
			}
			assert.NotContains(t, stderr, "panic")
			assert.NotContains(t, stderr, "goroutine ")
			assert.Empty(t, beyondDiscovery(proxy.Requests()[before:]), "bad input must not get past the version check")
		})
	}
}

// runSweeperWith runs the binary with $KUBECONFIG pointing at proxy, and env on top; nothing else
// of the test's environment tells it where a cluster is.
func runSweeperWith(t *testing.T, proxy *cluster.FaultProxy, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var base []string
	for _, kv := range os.Environ() {
		switch key, _, _ := strings.Cut(kv, "="); key {
		case "KUBECONFIG", "HOME", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "SWEEPER_PUSHGATEWAY_URL":
		default:
			base = append(base, kv)
		}
	}
	kubeconfig, err := proxy.Kubeconfig(t.TempDir())
	require.NoError(t, err)
	base = append(base, "KUBECONFIG="+kubeconfig, "HOME="+t.TempDir())
	return sweeperBinary.RunIn(t, append(base, env...), nil, args...) // later values win
}

// beyondDiscovery returns the requests other than a GET of the version or of discovery (/api,
// /api/v1, /apis, /apis/apps, /apis/apps/v1): lists, gets and writes of objects.
func beyondDiscovery(requests []cluster.ProxyRequest) []cluster.ProxyRequest {
	var out []cluster.ProxyRequest
	for _, req := range requests {
		parts := strings.Split(strings.Trim(req.Path, "/"), "/")
		discovery := req.Path == "/version" || (parts[0] == "api" && len(parts) <= 2) || (parts[0] == "apis" && len(parts) <= 3)
		if req.Method != http.MethodGet || !discovery {
			out = append(out, req)
		}
	}
	return out
}

// clusterClientCert returns a client certificate of an admin (group system:masters) signed by
// the API server's client CA, valid from now+from to now+to.
func clusterClientCert(t *testing.T, from, to time.Duration) certPair {
	t.Helper()
	now := time.Now()
	cert, key, err := testCluster.ClientCertificate("bad-input", []string{"system:masters"}, now.Add(from), now.Add(to))
	require.NoError(t, err)
	return certPair{cert: cert, key: key}
}

// requireAccepted fails t unless the API server authenticates cert as an admin.
func requireAccepted(t *testing.T, cert certPair) {
	t.Helper()
	cfg := rest.CopyConfig(testCluster.Config)
	cfg.CertData, cfg.KeyData, cfg.CertFile, cfg.KeyFile = cert.cert, cert.key, "", ""
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
	require.NoError(t, err, "a valid certificate of the client CA is an admin's")
}

// certPair is a PEM certificate and its PEM key.
type certPair struct{ cert, key []byte }
