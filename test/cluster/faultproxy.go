package cluster

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Fault is what the FaultProxy did to a request instead of forwarding it as it came.
type Fault string

// The faults a FaultProxy injects.
const (
	// FaultUnavailable: a read answered 503 ServiceUnavailable with Retry-After, not forwarded.
	FaultUnavailable Fault = "unavailable"
	// FaultThrottled: a read answered 429 TooManyRequests with Retry-After, as API Priority and
	// Fairness does, not forwarded.
	FaultThrottled Fault = "throttled"
	// FaultExpired: a list's next page answered 410 Gone, reason Expired, as the API server
	// answers a continue token that fell out of etcd's compaction window; not forwarded.
	FaultExpired Fault = "expired"
	// FaultStalled: held before being forwarded; not forwarded if the client gave up first.
	FaultStalled Fault = "stalled"
	// FaultReset: forwarded and answered by the API server, whose answer was dropped and the
	// client's connection reset: the write happened, and the client cannot know it.
	FaultReset Fault = "reset"
)

// Faults are what a FaultProxy injects. Paths are regular expressions matched against a request's
// URL path (not its query), such as "/namespaces/NS/widgets$" for one list; an empty one matches
// nothing. Every fault but the random ones is deterministic, so that a test can tell which
// resource had which.
type Faults struct {
	// ReadFaultRate is the fraction of GET requests (discovery, lists, gets) answered without
	// being forwarded, 503 and 429 in turn, each with Retry-After: 1 and a Status body, as an
	// overloaded API server answers. /version is spared: the sweeper's first request, the ping
	// that tells a bad kubeconfig from a reachable server, is not what these faults test.
	ReadFaultRate float64
	// Seed seeds the draws of ReadFaultRate. Concurrent requests arrive in no fixed order, so the
	// same seed gives the same sequence of draws, not the same faulted requests.
	Seed uint64

	// ExpireSecondPage: the first GET matching it that carries a continue token, a list's second
	// page or later, is answered 410 Expired, once.
	ExpireSecondPage string

	// Stall: GET requests matching it are held for StallFor, or until the client gives up,
	// before being forwarded. Every matching request is held, retries too.
	Stall    string
	StallFor time.Duration

	// ResetAfterWrite: the first request matching it whose method is one of ResetMethods (PATCH
	// if empty) is forwarded, the API server's answer read in full, and then the client's
	// connection reset without an answer, once.
	ResetAfterWrite string
	ResetMethods    []string
}

// ProxyRequest is one request the FaultProxy received, and what became of it.
type ProxyRequest struct {
	// Seq orders the requests by arrival.
	Seq    int
	Method string
	Path   string
	Query  url.Values
	// Fault is the fault injected, empty if the request was forwarded as it came.
	Fault Fault
	// Forwarded says the request was sent on to the API server.
	Forwarded bool
	// DryRun says the request asked not to be persisted: dryRun=All in its query, or, for a
	// DELETE, in the DeleteOptions of its body, where client-go puts it.
	DryRun bool
	// Status is the API server's answer, or the one injected; for a reset request, the API
	// server's answer the client never got. 0 while there is none, and for a stalled request the
	// client gave up on.
	Status int
}

func (r ProxyRequest) String() string {
	s := fmt.Sprintf("#%d %s %s", r.Seq, r.Method, r.Path)
	if len(r.Query) > 0 {
		s += "?" + r.Query.Encode()
	}
	s += fmt.Sprintf(" → %d", r.Status)
	if r.Fault != "" {
		s += fmt.Sprintf(" (%s, forwarded: %t)", r.Fault, r.Forwarded)
	}
	return s
}

// ProxyCounts count the requests a FaultProxy received.
type ProxyCounts struct {
	ByMethod map[string]int
	ByFault  map[Fault]int
}

// FaultProxy is a TLS reverse proxy to the API server that injects faults (see Faults) between a
// client and the server: what a sweeper meets on a loaded control plane and a flaky network. It
// talks to the API server as the admin config it is given; its clients need no credentials. It
// records every request it receives.
type FaultProxy struct {
	// URL is the proxy's address: https://127.0.0.1:<port>.
	URL string

	faults    Faults
	expire    *regexp.Regexp
	stall     *regexp.Regexp
	reset     *regexp.Regexp
	upstream  *url.URL
	transport http.RoundTripper
	proxy     *httputil.ReverseProxy
	server    *http.Server
	caPEM     []byte

	mu         sync.Mutex
	rng        *mathrand.Rand
	readFaults int            // injected so far, to alternate 503 and 429
	expired    bool           // ExpireSecondPage done
	wasReset   bool           // ResetAfterWrite done
	requests   []ProxyRequest // by arrival
}

// StartFaultProxy starts a FaultProxy in front of the cluster's API server.
func (c *Cluster) StartFaultProxy(faults Faults) (*FaultProxy, error) {
	return NewFaultProxy(c.Config, faults)
}

// NewFaultProxy starts a FaultProxy in front of the API server of upstream, an admin config. Close
// it when done.
func NewFaultProxy(upstream *rest.Config, faults Faults) (*FaultProxy, error) {
	p := &FaultProxy{faults: faults, rng: mathrand.New(mathrand.NewPCG(faults.Seed, faults.Seed))}
	if len(p.faults.ResetMethods) == 0 {
		p.faults.ResetMethods = []string{http.MethodPatch}
	}
	if faults.Stall != "" && faults.StallFor <= 0 {
		return nil, errors.New("fault proxy: Stall needs a positive StallFor")
	}
	var err error
	for _, m := range []struct {
		re   **regexp.Regexp
		expr string
	}{{&p.expire, faults.ExpireSecondPage}, {&p.stall, faults.Stall}, {&p.reset, faults.ResetAfterWrite}} {
		if m.expr == "" {
			continue
		}
		if *m.re, err = regexp.Compile(m.expr); err != nil {
			return nil, fmt.Errorf("fault proxy: %w", err)
		}
	}

	if p.upstream, _, err = rest.DefaultServerUrlFor(upstream); err != nil {
		return nil, fmt.Errorf("fault proxy: upstream: %w", err)
	}
	if p.transport, err = rest.TransportFor(upstream); err != nil {
		return nil, fmt.Errorf("fault proxy: upstream transport: %w", err)
	}
	quiet := log.New(io.Discard, "", 0) // handshake errors and clients that give up are the point
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(p.upstream)
			// The transport authenticates as admin, but not over credentials the request
			// already carries.
			r.Out.Header.Del("Authorization")
		},
		Transport:     p.transport,
		FlushInterval: -1, // stream as the API server answers (watches)
		ErrorLog:      quiet,
	}

	cert, caPEM, err := SelfSignedServingCert("127.0.0.1")
	if err != nil {
		return nil, fmt.Errorf("fault proxy: %w", err)
	}
	p.caPEM = caPEM
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fault proxy: %w", err)
	}
	p.URL = "https://" + ln.Addr().String()
	p.server = &http.Server{
		Handler: p,
		// HTTP/1.1 only: a connection cannot be reset under one request of an HTTP/2 connection
		// (no http.Hijacker), and clients then open one connection per concurrent request, as
		// they do with many real proxies.
		TLSConfig:    &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}},
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ErrorLog:     quiet,
	}
	go func() { _ = p.server.ServeTLS(ln, "", "") }() // returns when Close closes ln
	return p, nil
}

// Close stops the proxy and drops its connections; requests it holds see their client gone.
func (p *FaultProxy) Close() error {
	err := p.server.Close()
	utilnet.CloseIdleConnectionsFor(p.transport)
	return err
}

// RESTConfig is a client config for the proxy, without credentials.
func (p *FaultProxy) RESTConfig() *rest.Config {
	return &rest.Config{Host: p.URL, TLSClientConfig: rest.TLSClientConfig{CAData: p.caPEM}}
}

// Kubeconfig writes a kubeconfig for the proxy into dir, without credentials, its context named
// fault-proxy, and returns its path.
func (p *FaultProxy) Kubeconfig(dir string) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["fault-proxy"] = &clientcmdapi.Cluster{Server: p.URL, CertificateAuthorityData: p.caPEM}
	cfg.AuthInfos["fault-proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["fault-proxy"] = &clientcmdapi.Context{Cluster: "fault-proxy", AuthInfo: "fault-proxy"}
	cfg.CurrentContext = "fault-proxy"
	path := filepath.Join(dir, "fault-proxy.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("write the fault proxy's kubeconfig: %w", err)
	}
	return path, nil
}

// Requests returns every request received so far, in order of arrival, as far as each went: a
// request's entry is up to date before its client sees anything of the answer.
func (p *FaultProxy) Requests() []ProxyRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requests)
}

// Injected returns the requests that had a fault injected, in order of arrival.
func (p *FaultProxy) Injected() []ProxyRequest {
	return slices.DeleteFunc(p.Requests(), func(r ProxyRequest) bool { return r.Fault == "" })
}

// Counts counts the requests received so far by method and by fault injected.
func (p *FaultProxy) Counts() ProxyCounts {
	counts := ProxyCounts{ByMethod: map[string]int{}, ByFault: map[Fault]int{}}
	for _, r := range p.Requests() {
		counts.ByMethod[r.Method]++
		if r.Fault != "" {
			counts.ByFault[r.Fault]++
		}
	}
	return counts
}

// ServeHTTP records the request, decides its fault, if any, and carries it out.
func (p *FaultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i, fault := p.arrive(r)
	switch fault {
	case FaultUnavailable:
		p.answer(i, w, apierrors.NewServiceUnavailable("the fault proxy answers for an overloaded API server"), true)
	case FaultThrottled:
		p.answer(i, w, apierrors.NewTooManyRequests("too many requests, please try again later (the fault proxy)", 1), true)
	case FaultExpired:
		// The API server's own words for a continue token past etcd's compaction.
		p.answer(i, w, apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."), false)
	case FaultStalled:
		select {
		case <-time.After(p.faults.StallFor):
			p.forward(i, w, r)
		case <-r.Context().Done():
			// The client gave up: nothing is forwarded, and nothing answered. Returning would
			// answer 200 with no body, which a client may still read as it hangs up.
			panic(http.ErrAbortHandler)
		}
	case FaultReset:
		p.forwardAndReset(i, w, r)
	default:
		p.forward(i, w, r)
	}
}

// arrive records the request, picks its fault and returns its index in the log. The
// deterministic faults come first; a request none of them takes may draw a random one.
func (p *FaultProxy) arrive(r *http.Request) (int, Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var fault Fault
	get := r.Method == http.MethodGet
	switch {
	case get && p.expire != nil && !p.expired && r.URL.Query().Get("continue") != "" && p.expire.MatchString(r.URL.Path):
		p.expired = true
		fault = FaultExpired
	case get && p.stall != nil && p.stall.MatchString(r.URL.Path):
		fault = FaultStalled
	case p.reset != nil && !p.wasReset && slices.Contains(p.faults.ResetMethods, r.Method) && p.reset.MatchString(r.URL.Path):
		p.wasReset = true
		fault = FaultReset
	case get && r.URL.Path != "/version" && p.faults.ReadFaultRate > 0 && p.rng.Float64() < p.faults.ReadFaultRate:
		p.readFaults++
		fault = FaultUnavailable
		if p.readFaults%2 == 0 {
			fault = FaultThrottled
		}
	}
	p.requests = append(p.requests, ProxyRequest{Seq: len(p.requests) + 1, Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), DryRun: dryRun(r), Fault: fault})
	return len(p.requests) - 1, fault
}

// dryRun says whether r asks not to be persisted. A DELETE's body is read and put back.
func dryRun(r *http.Request) bool {
	if slices.Contains(r.URL.Query()["dryRun"], metav1.DryRunAll) {
		return true
	}
	if r.Method != http.MethodDelete || r.Body == nil {
		return false
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var options metav1.DeleteOptions
	return err == nil && json.Unmarshal(body, &options) == nil && slices.Contains(options.DryRun, metav1.DryRunAll)
}

// update changes the log's entry i.
func (p *FaultProxy) update(i int, change func(*ProxyRequest)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	change(&p.requests[i])
}

// forward sends request i to the API server and its answer back.
func (p *FaultProxy) forward(i int, w http.ResponseWriter, r *http.Request) {
	p.update(i, func(r *ProxyRequest) { r.Forwarded = true })
	p.proxy.ServeHTTP(&statusWriter{ResponseWriter: w, status: func(code int) {
		p.update(i, func(r *ProxyRequest) { r.Status = code })
	}}, r)
}

// forwardAndReset sends request i to the API server, reads its answer in full, so that the write
// is done, and resets the client's connection instead of answering: the client cannot tell
// whether its write happened.
func (p *FaultProxy) forwardAndReset(i int, w http.ResponseWriter, r *http.Request) {
	out := r.Clone(r.Context())
	out.RequestURI = "" // a client request must not have one
	out.Host = ""
	u := *p.upstream
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
	out.URL = &u
	out.Header.Del("Authorization")
	p.update(i, func(r *ProxyRequest) { r.Forwarded = true })
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		p.update(i, func(r *ProxyRequest) { r.Status = http.StatusBadGateway })
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	p.update(i, func(r *ProxyRequest) { r.Status = resp.StatusCode })

	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil { // cannot happen on HTTP/1.1; the 500 tells the test
		p.update(i, func(r *ProxyRequest) { r.Status = http.StatusInternalServerError })
		http.Error(w, "fault proxy: cannot reset the connection: "+err.Error(), http.StatusInternalServerError)
		return
	}
	// A TCP reset (linger 0) rather than a TLS close_notify: the client sees "connection reset by
	// peer", as when a load balancer or a node in between goes away.
	if tlsConn, ok := conn.(*tls.Conn); ok {
		if tcp, ok := tlsConn.NetConn().(*net.TCPConn); ok {
			_ = tcp.SetLinger(0)
			_ = tcp.Close()
			return
		}
	}
	_ = conn.Close()
}

// answer answers request i with err's Status, without forwarding it.
func (p *FaultProxy) answer(i int, w http.ResponseWriter, err *apierrors.StatusError, retry bool) {
	p.update(i, func(r *ProxyRequest) { r.Status = int(err.ErrStatus.Code) })
	writeStatus(w, err, retry)
}

// writeStatus answers with err's Status as the API server does: JSON, kind Status, and
// Retry-After: 1 if retry.
func writeStatus(w http.ResponseWriter, err *apierrors.StatusError, retry bool) {
	status := err.ErrStatus
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	if retry {
		if status.Details == nil {
			status.Details = &metav1.StatusDetails{}
		}
		status.Details.RetryAfterSeconds = 1
		w.Header().Set("Retry-After", "1")
	}
	body, _ := json.Marshal(status) // a Status always marshals
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(status.Code))
	_, _ = w.Write(body)
}

// statusWriter tells status the answer's status before the client can see it.
type statusWriter struct {
	http.ResponseWriter
	status      func(int)
	wroteHeader bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wroteHeader && code >= 200 { // 1xx are informational: the answer is still to come
		w.wroteHeader = true
		w.status(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController flush through to the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
