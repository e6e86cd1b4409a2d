package sweeper

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flaky answers the first failures requests with status (and Retry-After, if set), then 200;
// stall makes the first attempt hang until the client gives up.
type flaky struct {
	failures   int32
	status     int
	retryAfter string
	stall      bool
	calls      atomic.Int32
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.calls.Add(1)
	switch {
	case f.stall && n == 1:
		<-r.Context().Done()
	case n <= f.failures:
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		w.WriteHeader(f.status)
	default:
		_, _ = io.WriteString(w, "ok")
	}
}

func TestRetryingTransport(t *testing.T) {
	tests := []struct {
		name      string
		server    *flaky
		method    string
		wantCalls int32
		wantCode  int
		wantErr   string
	}{
		{name: "a 503 without Retry-After is tried again", server: &flaky{failures: 2, status: 503}, method: "GET", wantCalls: 3, wantCode: 200},
		{name: "a 429 waits what Retry-After says", server: &flaky{failures: 1, status: 429, retryAfter: "1"}, method: "GET", wantCalls: 2, wantCode: 200},
		{name: "a read that keeps failing ends with its last answer", server: &flaky{failures: 100, status: 500}, method: "GET", wantCalls: readRetries + 1, wantCode: 500},
		{name: "a 404 is an answer", server: &flaky{failures: 1, status: 404}, method: "GET", wantCalls: 1, wantCode: 404},
		{name: "a 501 is an answer", server: &flaky{failures: 1, status: 501}, method: "GET", wantCalls: 1, wantCode: 501},
		{name: "a write is sent once", server: &flaky{failures: 1, status: 503}, method: "PATCH", wantCalls: 1, wantCode: 503},
		{name: "an attempt that times out is tried again", server: &flaky{stall: true}, method: "GET", wantCalls: 2, wantCode: 200},
		{name: "a write that times out is not", server: &flaky{stall: true}, method: "DELETE", wantCalls: 1, wantErr: "no answer within --request-timeout=200ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := httptest.NewServer(tt.server)
			defer server.Close()
			rt := newRetryingTransport(http.DefaultTransport, 200*time.Millisecond, slog.New(slog.DiscardHandler))
			rt.backoff.Duration = time.Millisecond

			req, err := http.NewRequest(tt.method, server.URL, nil)
			require.NoError(t, err)
			resp, err := rt.RoundTrip(req)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
			} else {
				require.NoError(t, err)
				body, rerr := io.ReadAll(resp.Body)
				require.NoError(t, rerr, "the attempt's timeout does not cut the body it answered")
				require.NoError(t, resp.Body.Close())
				assert.Equal(t, tt.wantCode, resp.StatusCode)
				if tt.wantCode == 200 {
					assert.Equal(t, "ok", string(body))
				}
			}
			assert.Equal(t, tt.wantCalls, tt.server.calls.Load())
		})
	}
}

// TestRetryingTransportStopsAtTheDeadline: a Retry-After beyond the run's deadline is not waited
// for; the failure is the answer.
func TestRetryingTransportStopsAtTheDeadline(t *testing.T) {
	server := &flaky{failures: 100, status: 429, retryAfter: "30"}
	ts := httptest.NewServer(server)
	defer ts.Close()
	rt := newRetryingTransport(http.DefaultTransport, time.Second, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", ts.URL, nil)
	require.NoError(t, err)

	start := time.Now()
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 429, resp.StatusCode)
	assert.Equal(t, int32(1), server.calls.Load())
	assert.Less(t, time.Since(start), time.Second, "did not wait")
}

// TestRetryingTransportDoesNotRetryAnUntrustedCertificate: a certificate error is bad input, not
// a transient failure.
func TestRetryingTransportDoesNotRetryAnUntrustedCertificate(t *testing.T) {
	server := &flaky{}
	ts := httptest.NewUnstartedServer(server)
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake the client refuses
	ts.StartTLS()
	defer ts.Close()
	rt := newRetryingTransport(http.DefaultTransport, time.Second, slog.New(slog.DiscardHandler))
	req, err := http.NewRequest("GET", ts.URL, nil)
	require.NoError(t, err)

	_, err = rt.RoundTrip(req)
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "certificate"), err.Error())
	assert.Equal(t, int32(0), server.calls.Load())
}

// TestRetryingTransportPingsOnce: the first contact is tried once, so that a wrong address is
// reported at once.
func TestRetryingTransportPingsOnce(t *testing.T) {
	server := &flaky{failures: 1, status: 503}
	ts := httptest.NewServer(server)
	defer ts.Close()
	rt := newRetryingTransport(http.DefaultTransport, time.Second, slog.New(slog.DiscardHandler))
	req, err := http.NewRequestWithContext(withSingleAttempt(context.Background()), "GET", ts.URL, nil)
	require.NoError(t, err)

	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, int32(1), server.calls.Load())
}

// TestRetryingTransportNamesOnlyRealTimeouts: a refused connection is not blamed on
// --request-timeout.
func TestRetryingTransportNamesOnlyRealTimeouts(t *testing.T) {
	ts := httptest.NewServer(&flaky{})
	addr := ts.URL
	ts.Close() // nothing listens there any more
	rt := newRetryingTransport(http.DefaultTransport, time.Minute, slog.New(slog.DiscardHandler))
	req, err := http.NewRequestWithContext(withSingleAttempt(context.Background()), "GET", addr, nil)
	require.NoError(t, err)

	_, err = rt.RoundTrip(req)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "request-timeout")
	assert.Contains(t, err.Error(), "refused")
}
