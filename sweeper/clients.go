package sweeper

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/operator-sweeper/operator-sweeper/backup"
	"github.com/operator-sweeper/operator-sweeper/input"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	typedeventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
)

// Clients are the API clients of one run, all built from one rest.Config.
type Clients struct {
	Discovery discovery.DiscoveryInterfaceWithContext
	Metadata  metadata.Interface
	Dynamic   dynamic.Interface
	// Events writes the Events of what was done (events.k8s.io/v1).
	Events typedeventsv1.EventsV1Interface

	serverClock *serverClock
}

// Clock is the API server's clock, as the Date headers of its answers tell it: what rules
// measure ages against, since timestamps in objects are the server's.
func (c *Clients) Clock() clock.PassiveClock {
	if c.serverClock == nil {
		return clock.RealClock{}
	}
	return c.serverClock
}

// serverClock is the local clock set to the server's: the first answer's Date header says how far
// the server's clock is from this one; a later answer changes that only when it says the
// difference changed by more than a second, the header's resolution, so that the clock does not
// jitter from answer to answer.
type serverClock struct {
	clock.RealClock
	offset atomic.Int64 // nanoseconds
	set    atomic.Bool
}

func (c *serverClock) Now() time.Time { return c.RealClock.Now().Add(time.Duration(c.offset.Load())) }

func (c *serverClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *serverClock) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil {
			if date, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
				// The header is truncated to the second: its middle is the best guess.
				offset := date.Add(500 * time.Millisecond).Sub(c.RealClock.Now()).Round(time.Second)
				if !c.set.Swap(true) || (offset-time.Duration(c.offset.Load())).Abs() > time.Second {
					c.offset.Store(int64(offset))
				}
			}
		}
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// ClientConfig is how the clients talk to the API server.
type ClientConfig struct {
	// QPS and Burst bound the request rate.
	QPS   float32
	Burst int
	// RequestTimeout bounds each attempt of a request; a read that times out is tried again.
	RequestTimeout time.Duration
	// Version is the sweeper's, for the User-Agent.
	Version string
}

// NewClients builds the clients from a copy of config, set to cc's QPS and Burst and the
// User-Agent operator-sweeper/<version>. Each request is bounded by cc.RequestTimeout, and reads
// are tried again on transient failures (see retryingTransport). API warnings (deprecated
// versions, …) go to the logger at debug level instead of cluttering standard error. The answers
// set the server's Clock.
func NewClients(config *rest.Config, cc ClientConfig, logger *slog.Logger) (*Clients, error) {
	cfg := rest.CopyConfig(config)
	cfg.QPS = cc.QPS
	cfg.Burst = cc.Burst
	cfg.UserAgent = "operator-sweeper/" + cc.Version
	cfg.WarningHandlerWithContext = warningLogger{logger}
	serverClock := &serverClock{}
	cfg.Wrap(serverClock.wrap)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return newRetryingTransport(rt, cc.RequestTimeout, logger)
	})

	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client for %s: %w", cfg.Host, err)
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("metadata client for %s: %w", cfg.Host, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client for %s: %w", cfg.Host, err)
	}
	ev, err := typedeventsv1.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("events client for %s: %w", cfg.Host, err)
	}
	return &Clients{Discovery: dc, Metadata: mc, Dynamic: dyn, Events: ev, serverClock: serverClock}, nil
}

// ClusterUID is the UID of the cluster's kube-system namespace: which cluster it is, whatever a
// kubeconfig calls it. It is read with a list, as the walk reads: that is all the RBAC it needs.
func (c *Clients) ClusterUID(ctx context.Context) (types.UID, error) {
	list, err := c.Metadata.Resource(rules.Namespaces.GroupVersionResource).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", metav1.NamespaceSystem).String(),
	})
	switch {
	case err != nil:
		return "", fmt.Errorf("read namespace %s: %w", metav1.NamespaceSystem, err)
	case len(list.Items) != 1:
		return "", fmt.Errorf("namespace %s not found", metav1.NamespaceSystem)
	}
	return list.Items[0].UID, nil
}

// Backup is how the Secrets of pre-images are read: their metadata, and one's data when needed.
func (c *Clients) Backup() backup.Client {
	return backup.Client{Dynamic: c.Dynamic, Metadata: c.Metadata}
}

// Writer is the writer of these clients, sending in mode, as fieldManager.
func (c *Clients) Writer(mode report.DryRunMode, fieldManager string) Writer {
	return Writer{Metadata: c.Metadata, Dynamic: c.Dynamic, Mode: mode, FieldManager: fieldManager}
}

// Ping asks the server for its version, so that a wrong address or rejected credentials are
// reported once, as bad input, before any work is done. Any answer from the server counts as
// reachable. The error says which part of the kubeconfig to look at: its credentials (rejected, or
// not to be had), its certificate-authority, or its server.
func (c *Clients) Ping(ctx context.Context, host string) error {
	ctx, cancel := context.WithTimeout(withSingleAttempt(ctx), 30*time.Second)
	defer cancel()
	_, err := c.Discovery.RESTClient().Get().AbsPath("/version").DoRaw(ctx)
	var status apierrors.APIStatus
	var untrusted *tls.CertificateVerificationError
	switch {
	case err == nil:
		return nil
	case apierrors.IsUnauthorized(err):
		return input.Errorf("the API server at %s rejected the kubeconfig's credentials: %w", host, err)
	case errors.As(err, &status):
		return nil
	case errors.As(err, &untrusted):
		return input.Errorf("the kubeconfig's certificate-authority does not vouch for the API server at %s: %w", host, err)
	case unreachable(err):
		return input.Errorf("cannot reach the API server at %s: %w", host, err)
	default:
		// Neither an answer nor a network failure: the request was never sent, for want of
		// something the kubeconfig gives, such as the credentials of its exec plugin.
		return input.Errorf("kubeconfig: no request could be sent to the API server at %s: %w", host, err)
	}
}

// unreachable says whether err is the network's: no connection, a broken one, or no answer in
// time.
func unreachable(err error) bool {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err // itself a net.Error, whatever its cause
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded)
}

type warningLogger struct{ logger *slog.Logger }

func (w warningLogger) HandleWarningHeaderWithContext(ctx context.Context, code int, _ string, text string) {
	if code == 299 && text != "" {
		w.logger.DebugContext(ctx, "API warning", "warning", text)
	}
}

// Contexts are the kubeconfig's contexts that patterns (names or globs) select, or all of them,
// sorted. A pattern that selects none is an input.Error.
func Contexts(kubeconfig string, patterns []string, all bool) ([]string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	raw, err := rules.Load()
	if err != nil {
		return nil, input.Errorf("kubeconfig: %w", err)
	}
	names := slices.Sorted(maps.Keys(raw.Contexts))
	if all {
		if len(names) == 0 {
			return nil, input.Errorf("--all-contexts: the kubeconfig has no context")
		}
		return names, nil
	}
	var chosen []string
	for _, pattern := range patterns {
		matched := false
		for _, name := range names {
			if ok, _ := path.Match(pattern, name); ok { // validated
				matched = true
				if !slices.Contains(chosen, name) {
					chosen = append(chosen, name)
				}
			}
		}
		if !matched {
			return nil, input.Errorf("--contexts: no context %q in the kubeconfig; its contexts are %s", pattern, strings.Join(names, ", "))
		}
	}
	slices.Sort(chosen)
	return chosen, nil
}

// LoadRESTConfig finds the cluster to talk to and the name to give it in the report. In order:
// --kubeconfig or --context if given, then $KUBECONFIG, then the in-cluster service account, then
// ~/.kube/config. An explicit $KUBECONFIG wins over in-cluster so that a run inside a pod can be
// pointed elsewhere on purpose. Every failure is an input.Error.
func LoadRESTConfig(kubeconfig, kubeContext string) (*rest.Config, string, error) {
	if kubeconfig == "" && kubeContext == "" && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		cfg, err := rest.InClusterConfig()
		switch {
		case err == nil:
			return cfg, "in-cluster", nil
		case !errors.Is(err, rest.ErrNotInCluster):
			return nil, "", input.Errorf("in-cluster config: %w", err)
		}
	}

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, "", input.Errorf("kubeconfig: %w", err)
	}
	cfg, err := loader.ClientConfig()
	switch {
	// clientcmd's own message for an empty config sends the user to KUBERNETES_MASTER; say
	// instead which file, or which $KUBECONFIG (whose missing files clientcmd skips), has nothing.
	case clientcmd.IsEmptyConfig(err) && kubeconfig != "" && len(raw.Clusters) > 0:
		return nil, "", input.Errorf("--kubeconfig %s has no current-context: set it, or pass --context", kubeconfig)
	case clientcmd.IsEmptyConfig(err) && kubeconfig != "":
		return nil, "", input.Errorf("--kubeconfig %s defines no cluster: is it a kubeconfig file?", kubeconfig)
	case clientcmd.IsEmptyConfig(err) && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "":
		return nil, "", input.Errorf("$%s %s defines no cluster: its files are missing or empty", clientcmd.RecommendedConfigPathEnvVar,
			os.Getenv(clientcmd.RecommendedConfigPathEnvVar))
	case clientcmd.IsEmptyConfig(err):
		return nil, "", input.Errorf("no kubeconfig found and not running in a cluster: pass --kubeconfig or set KUBECONFIG")
	case err != nil:
		return nil, "", input.Errorf("kubeconfig: %w", err)
	}
	if err := checkTLSFiles(cfg); err != nil {
		return nil, "", err
	}
	name := raw.CurrentContext
	if kubeContext != "" {
		name = kubeContext
	}
	return cfg, name, nil
}

// checkTLSFiles reads the kubeconfig's certificates as client-go will. clientcmd checks only that
// the files exist: a directory, or a file that holds no certificate, would otherwise fail later,
// in client-go, without the name of the kubeconfig field to change.
func checkTLSFiles(cfg *rest.Config) error {
	read := func(field, file string, data []byte) ([]byte, error) {
		if len(data) > 0 || file == "" {
			return data, nil
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, input.Errorf("kubeconfig: %s %s: %w", field, file, err)
		}
		return data, nil
	}
	ca, err := read("certificate-authority", cfg.CAFile, cfg.CAData)
	if err != nil {
		return err
	}
	if len(ca) > 0 && !x509.NewCertPool().AppendCertsFromPEM(ca) {
		return input.Errorf("kubeconfig: certificate-authority %s holds no PEM certificate", cmp.Or(cfg.CAFile, "(data)"))
	}
	cert, err := read("client-certificate", cfg.CertFile, cfg.CertData)
	if err != nil {
		return err
	}
	key, err := read("client-key", cfg.KeyFile, cfg.KeyData)
	if err != nil {
		return err
	}
	if len(cert) > 0 || len(key) > 0 {
		if _, err := tls.X509KeyPair(cert, key); err != nil {
			return input.Errorf("kubeconfig: client-certificate and client-key: %w", err)
		}
	}
	return nil
}
