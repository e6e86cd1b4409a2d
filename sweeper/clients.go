package sweeper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
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

// NewClients builds the clients from a copy of config, set to the options' QPS, Burst and the
// User-Agent operator-sweeper/<version>. API warnings (deprecated versions, …) go to the logger
// at debug level instead of cluttering standard error. The answers set the server's Clock.
func NewClients(config *rest.Config, opts Options, logger *slog.Logger) (*Clients, error) {
	cfg := rest.CopyConfig(config)
	cfg.QPS = opts.QPS
	cfg.Burst = opts.Burst
	cfg.UserAgent = "operator-sweeper/" + opts.Version
	cfg.WarningHandlerWithContext = warningLogger{logger}
	serverClock := &serverClock{}
	cfg.Wrap(serverClock.wrap)

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
	return &Clients{Discovery: dc, Metadata: mc, Dynamic: dyn, serverClock: serverClock}, nil
}

// Ping asks the server for its version, so that a wrong address or rejected credentials are
// reported once, as bad input, before any work is done. Any answer from the server counts as
// reachable.
func (c *Clients) Ping(ctx context.Context, host string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := c.Discovery.RESTClient().Get().AbsPath("/version").DoRaw(ctx)
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return nil
	case apierrors.IsUnauthorized(err):
		return inputErrorf("the API server at %s rejected the kubeconfig's credentials: %w", host, err)
	case errors.As(err, &status):
		return nil
	default:
		return inputErrorf("cannot reach the API server at %s: %w", host, err)
	}
}

type warningLogger struct{ logger *slog.Logger }

func (w warningLogger) HandleWarningHeaderWithContext(ctx context.Context, code int, _ string, text string) {
	if code == 299 && text != "" {
		w.logger.DebugContext(ctx, "API warning", "warning", text)
	}
}

// LoadRESTConfig finds the cluster to talk to and the name to give it in the report. In order:
// --kubeconfig or --context if given, then $KUBECONFIG, then the in-cluster service account, then
// ~/.kube/config. An explicit $KUBECONFIG wins over in-cluster so that a run inside a pod can be
// pointed elsewhere on purpose. Every failure is an InputError.
func LoadRESTConfig(kubeconfig, kubeContext string) (*rest.Config, string, error) {
	if kubeconfig == "" && kubeContext == "" && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		cfg, err := rest.InClusterConfig()
		switch {
		case err == nil:
			return cfg, "in-cluster", nil
		case !errors.Is(err, rest.ErrNotInCluster):
			return nil, "", inputErrorf("in-cluster config: %w", err)
		}
	}

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, "", inputErrorf("kubeconfig: %w", err)
	}
	cfg, err := loader.ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err):
		return nil, "", inputErrorf("no kubeconfig found and not running in a cluster: pass --kubeconfig or set KUBECONFIG")
	case err != nil:
		return nil, "", inputErrorf("kubeconfig: %w", err)
	}
	name := raw.CurrentContext
	if kubeContext != "" {
		name = kubeContext
	}
	return cfg, name, nil
}
