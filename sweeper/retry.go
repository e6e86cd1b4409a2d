package sweeper

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// retryingTransport bounds every attempt of a request to the API server by a timeout, and tries
// reads again when they fail in a way that says nothing about the object: throttling (429), a
// server error (5xx), a connection reset, an attempt that timed out. It waits what Retry-After
// says, or backs off, and never past the request's deadline (the run's --timeout).
//
// Writes are sent once: one that fails on the way may or may not have reached the server, and
// only a re-read can say (see Applier.apply). client-go's own retries are narrower: a GET is
// tried again only on a connection reset, or on a 429 or 5xx that carries Retry-After.
type retryingTransport struct {
	next http.RoundTripper
	// attemptTimeout bounds each attempt, reading the body included.
	attemptTimeout time.Duration
	backoff        wait.Backoff
	logger         *slog.Logger
}

// readRetries is how many times a read is tried again: at 10% of requests failing, a read still
// fails once in a million.
const readRetries = 5

func newRetryingTransport(next http.RoundTripper, attemptTimeout time.Duration, logger *slog.Logger) *retryingTransport {
	return &retryingTransport{
		next:           next,
		attemptTimeout: attemptTimeout,
		backoff:        wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: readRetries, Cap: 5 * time.Second},
		logger:         logger,
	}
}

func (t *retryingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.Body != nil && req.Body != http.NoBody || req.Context().Value(singleAttempt{}) != nil {
		return t.attempt(req)
	}
	backoff := t.backoff
	for {
		resp, err := t.attempt(req)
		wait, retry := t.retryable(req, resp, err)
		if !retry || backoff.Steps == 0 {
			return resp, err
		}
		if step := backoff.Step(); wait == 0 {
			wait = step
		}
		if deadline, ok := req.Context().Deadline(); ok && time.Until(deadline) < wait {
			return resp, err // no time left to try again: the failure is the answer
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			_ = resp.Body.Close()
		}
		t.logger.DebugContext(req.Context(), "read failed; trying again", "url", req.URL.Path, "query", req.URL.RawQuery,
			"status", status(resp), "error", err, "wait", wait.String())
		timer := time.NewTimer(wait)
		select {
		case <-req.Context().Done():
			timer.Stop()
			return nil, req.Context().Err()
		case <-timer.C:
		}
	}
}

// singleAttempt marks the context of a read that is tried once: the first contact with the
// server, where a refused connection is a wrong address to report at once, not a blip to wait out.
type singleAttempt struct{}

func withSingleAttempt(ctx context.Context) context.Context {
	return context.WithValue(ctx, singleAttempt{}, true)
}

// attempt sends req once, bounded by the attempt timeout, which keeps running while the body is
// read: it ends when the body is closed.
func (t *retryingTransport) attempt(req *http.Request) (*http.Response, error) {
	if t.attemptTimeout <= 0 {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.attemptTimeout)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		if ctx.Err() != nil && req.Context().Err() == nil { // before cancel, which sets ctx.Err
			err = &attemptTimeoutError{timeout: t.attemptTimeout, err: err}
		}
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// retryable says whether a read that got resp or err is tried again, and after how long the
// server asked to wait (0: back off).
func (t *retryingTransport) retryable(req *http.Request, resp *http.Response, err error) (time.Duration, bool) {
	if req.Context().Err() != nil {
		return 0, false
	}
	if err != nil {
		// A certificate the client does not trust will not be trusted the next time either.
		var unknownAuthority x509.UnknownAuthorityError
		var invalid x509.CertificateInvalidError
		var hostname x509.HostnameError
		var verification *tls.CertificateVerificationError
		return 0, !errors.As(err, &unknownAuthority) && !errors.As(err, &invalid) && !errors.As(err, &hostname) && !errors.As(err, &verification)
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented:
	default:
		return 0, false
	}
	if seconds, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && seconds >= 0 {
		return time.Duration(seconds) * time.Second, true
	}
	return 0, true
}

func status(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// attemptTimeoutError is an attempt that ran out of --request-timeout.
type attemptTimeoutError struct {
	timeout time.Duration
	err     error
}

func (e *attemptTimeoutError) Error() string {
	return "no answer within --request-timeout=" + e.timeout.String() + ": " + e.err.Error()
}

func (e *attemptTimeoutError) Unwrap() error { return e.err }

// Timeout makes the error a timeout to net.Error checks, as the deadline it stands for.
func (e *attemptTimeoutError) Timeout() bool { return true }

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
