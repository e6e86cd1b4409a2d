package cluster

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// upstream stands for the API server: it answers 200 with the method and path, and records what
// it received and with which credentials.
type upstream struct {
	*httptest.Server
	mu       sync.Mutex
	received []string // "METHOD path?query body"
	auth     []string
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.received = append(u.received, strings.TrimSuffix(r.Method+" "+r.URL.RequestURI()+" "+string(body), " "))
		u.auth = append(u.auth, r.Header.Get("Authorization"))
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Success","code":200}`)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.received...)
}

// config is an admin config for the upstream: a bearer token the proxy must send.
func (u *upstream) config() *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: u.Certificate().Raw})
	return &rest.Config{Host: u.URL, BearerToken: "admin-token", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

// startProxy starts a proxy for faults in front of up, and returns it with an HTTP client of
// its kubeconfig.
func startProxy(t *testing.T, up *upstream, faults Faults) (*FaultProxy, *http.Client) {
	t.Helper()
	p, err := NewFaultProxy(up.config(), faults)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	path, err := p.Kubeconfig(t.TempDir())
	require.NoError(t, err)
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	client, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	return p, client
}

func send(t *testing.T, client *http.Client, method, path string) (*http.Response, error) {
	t.Helper()
	var body io.Reader
	if method != http.MethodGet {
		body = strings.NewReader(`[{"op":"remove","path":"/metadata/finalizers/0"}]`)
	}
	req, err := http.NewRequest(method, path, body)
	require.NoError(t, err)
	resp, err := client.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	return resp, err
}

func TestFaultProxyForwardsAsAdminOverHTTP1(t *testing.T) {
	up := newUpstream(t)
	p, client := startProxy(t, up, Faults{})

	resp, err := send(t, client, http.MethodGet, p.URL+"/api/v1/namespaces?limit=5")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, 1, resp.ProtoMajor, "HTTP/1.1, so that a connection can be reset")
	resp, err = send(t, client, http.MethodPatch, p.URL+"/api/v1/namespaces/a/configmaps/b")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	assert.Equal(t, []string{"GET /api/v1/namespaces?limit=5", `PATCH /api/v1/namespaces/a/configmaps/b [{"op":"remove","path":"/metadata/finalizers/0"}]`}, up.requests())
	assert.Equal(t, []string{"Bearer admin-token", "Bearer admin-token"}, up.auth)
	got := p.Requests()
	require.Len(t, got, 2)
	assert.Equal(t, ProxyRequest{Seq: 1, Method: "GET", Path: "/api/v1/namespaces", Query: map[string][]string{"limit": {"5"}}, Forwarded: true, Status: 200}, got[0])
	assert.Empty(t, p.Injected())
}

func TestFaultProxyReadFaults(t *testing.T) {
	up := newUpstream(t)
	p, client := startProxy(t, up, Faults{ReadFaultRate: 1})

	for _, want := range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		req, err := http.NewRequest(http.MethodGet, p.URL+"/apis/logging.banzaicloud.io/v1beta1/loggings", nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode)
		assert.Equal(t, "1", resp.Header.Get("Retry-After"))
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		var status metav1.Status
		require.NoError(t, json.Unmarshal(body, &status), string(body))
		assert.Equal(t, "Status", status.Kind)
		assert.Equal(t, metav1.StatusFailure, status.Status)
		assert.EqualValues(t, want, status.Code)
		assert.Equal(t, map[int]metav1.StatusReason{503: metav1.StatusReasonServiceUnavailable, 429: metav1.StatusReasonTooManyRequests}[want], status.Reason)
		require.NotNil(t, status.Details)
		assert.EqualValues(t, 1, status.Details.RetryAfterSeconds)
	}
	for _, req := range [][2]string{{"GET", "/version"}, {"PATCH", "/api/v1/namespaces/a/configmaps/b"}, {"DELETE", "/api/v1/namespaces/a/configmaps/b"}} {
		resp, err := send(t, client, req[0], p.URL+req[1])
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode, "%s %s is not a read fault's", req[0], req[1])
	}
	assert.Len(t, up.requests(), 3, "faulted reads are not forwarded")
	assert.Equal(t, ProxyCounts{
		ByMethod: map[string]int{"GET": 4, "PATCH": 1, "DELETE": 1},
		ByFault:  map[Fault]int{FaultUnavailable: 2, FaultThrottled: 1},
	}, p.Counts())
}

func TestFaultProxyReadFaultRateIsSeeded(t *testing.T) {
	up := newUpstream(t)
	faulted := func(seed uint64) []int {
		p, client := startProxy(t, up, Faults{ReadFaultRate: 0.1, Seed: seed})
		for range 300 {
			_, err := send(t, client, http.MethodGet, p.URL+"/api/v1/pods")
			require.NoError(t, err)
		}
		var seqs []int
		for _, r := range p.Injected() {
			seqs = append(seqs, r.Seq)
		}
		return seqs
	}
	first := faulted(7)
	assert.InDelta(t, 30, len(first), 18, "about 10%% of 300")
	assert.Equal(t, first, faulted(7), "the same seed, the same draws")
	assert.NotEqual(t, first, faulted(8))
}

func TestFaultProxyExpiresOneSecondPage(t *testing.T) {
	up := newUpstream(t)
	list := "/apis/logging.banzaicloud.io/v1beta1/namespaces/a/syslogngconfigs"
	p, client := startProxy(t, up, Faults{ExpireSecondPage: "/namespaces/a/syslogngconfigs$"})

	for _, tt := range []struct {
		query string
		want  int
	}{
		{"?limit=5", 200},
		{"?limit=5&continue=abc", 410},
		{"?limit=5", 200},
		{"?limit=5&continue=abc", 200},
	} {
		req, err := http.NewRequest(http.MethodGet, p.URL+list+tt.query, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, tt.want, resp.StatusCode, tt.query)
		if tt.want == http.StatusGone {
			var status metav1.Status
			require.NoError(t, json.Unmarshal(body, &status))
			assert.Equal(t, metav1.StatusReasonExpired, status.Reason)
			assert.EqualValues(t, http.StatusGone, status.Code)
			assert.Empty(t, resp.Header.Get("Retry-After"))
		}
	}
	injected := p.Injected()
	require.Len(t, injected, 1)
	assert.Equal(t, FaultExpired, injected[0].Fault)
	assert.Equal(t, 2, injected[0].Seq)
	assert.Equal(t, "abc", injected[0].Query.Get("continue"))
	assert.Len(t, up.requests(), 3)
}

func TestFaultProxyStallHonoursTheClient(t *testing.T) {
	up := newUpstream(t)
	list := "/apis/logging.banzaicloud.io/v1beta1/namespaces/a/fluentdconfigs"
	p, client := startProxy(t, up, Faults{Stall: "/fluentdconfigs$", StallFor: time.Second})

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+list, nil)
	require.NoError(t, err)
	start := time.Now()
	_, err = client.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 900*time.Millisecond)
	_, err = send(t, client, http.MethodGet, p.URL+list+"/one")
	require.NoError(t, err, "a get of one object is not the list")

	time.Sleep(1200 * time.Millisecond) // past the stall
	assert.Equal(t, []string{"GET " + list + "/one"}, up.requests(), "what the client gave up on is never forwarded")
	require.Len(t, p.Injected(), 1)
	stalled := p.Injected()[0]
	assert.Equal(t, FaultStalled, stalled.Fault)
	assert.False(t, stalled.Forwarded)
	assert.Zero(t, stalled.Status)

	start = time.Now()
	resp, err := send(t, client, http.MethodGet, p.URL+list)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.GreaterOrEqual(t, time.Since(start), time.Second)
	assert.Equal(t, ProxyRequest{Seq: 3, Method: "GET", Path: list, Query: map[string][]string{}, Fault: FaultStalled, Forwarded: true, Status: 200}, p.Requests()[2])
}

func TestFaultProxyResetsAfterTheWrite(t *testing.T) {
	up := newUpstream(t)
	object := "/apis/logging.banzaicloud.io/v1beta1/namespaces/a/syslogngconfigs/one"
	p, client := startProxy(t, up, Faults{ResetAfterWrite: "/syslogngconfigs/"})

	resp, err := send(t, client, http.MethodDelete, p.URL+object)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "PATCH only by default")
	_, err = send(t, client, http.MethodPatch, p.URL+object)
	require.Error(t, err, "no answer")
	assert.Contains(t, err.Error(), "connection reset by peer")
	resp, err = send(t, client, http.MethodPatch, p.URL+object)
	require.NoError(t, err, "once")
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	assert.Len(t, up.requests(), 3, "the reset PATCH reached the server")
	assert.Equal(t, `PATCH `+object+` [{"op":"remove","path":"/metadata/finalizers/0"}]`, up.requests()[1], "with its body")
	injected := p.Injected()
	require.Len(t, injected, 1)
	assert.Equal(t, ProxyRequest{Seq: 2, Method: "PATCH", Path: object, Query: map[string][]string{}, Fault: FaultReset, Forwarded: true, Status: 200}, injected[0])

	p, client = startProxy(t, up, Faults{ResetAfterWrite: "/syslogngconfigs/", ResetMethods: []string{http.MethodDelete}})
	_, err = send(t, client, http.MethodDelete, p.URL+object)
	require.Error(t, err)
	assert.Equal(t, FaultReset, p.Injected()[0].Fault)
}

func TestFaultProxyRejectsBadFaults(t *testing.T) {
	up := newUpstream(t)
	_, err := NewFaultProxy(up.config(), Faults{Stall: "/x$"})
	assert.ErrorContains(t, err, "StallFor")
	_, err = NewFaultProxy(up.config(), Faults{ResetAfterWrite: "("})
	assert.ErrorContains(t, err, "missing closing )")
}
