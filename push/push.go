// Package push pushes a finished run's metrics to a Prometheus Pushgateway: a fresh registry per
// run, grouped by cluster (and shard), with the gateway's credentials read afresh each time.
package push

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/push"

	"github.com/operator-sweeper/operator-sweeper/redact"
	"github.com/operator-sweeper/operator-sweeper/report"
)

// Job is the job label of the pushed metrics.
const Job = "operator-sweeper"

// Config says where and how a run's metrics are pushed.
type Config struct {
	// URL is the Pushgateway's.
	URL string
	// Timeout bounds the push.
	Timeout time.Duration
	// Username and PasswordFile are basic-auth credentials.
	Username, PasswordFile string
	// BearerTokenFile holds a bearer token, instead of basic auth.
	BearerTokenFile string
	// CAFile is the CA bundle that signs an HTTPS Pushgateway's certificate.
	CAFile string
	// InsecureSkipVerify does not verify an HTTPS Pushgateway's certificate.
	InsecureSkipVerify bool
	// Grouping are key=value grouping labels added to job, cluster and shard.
	Grouping []string
}

// Push pushes the metrics of a finished run, whose rules were enabled and which went through
// stages. A successful run replaces the whole group (PUT), so that no series of an earlier run
// lingers. A failed run replaces only the families it pushes (POST) and leaves out the last success
// timestamp, which so survives. The push has a deadline of its own: a run that was interrupted or
// ran out of time still says so.
func Push(ctx context.Context, cfg Config, r *report.Report, enabled []Rule, stages []string) error {
	succeeded := !r.Failed()
	pusher, err := cfg.newPusher(r.Metadata)
	if err != nil {
		return err
	}
	pusher = pusher.Gatherer(Registry(r, enabled, stages, succeeded))
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Timeout)
	defer cancel()
	if succeeded {
		err = pusher.PushContext(ctx)
	} else {
		err = pusher.AddContext(ctx)
	}
	if err != nil {
		// The client's errors quote the URL it pushed to, credentials included.
		return errors.New(redact.CredentialsIn(fmt.Sprintf("push metrics to %s: %v", cfg.URL, err), cfg.URL))
	}
	return nil
}

// newPusher sets up the Pushgateway client: grouping (cluster, and shard when the sweep is split,
// so that the shards of a cluster do not replace each other's metrics), credentials, TLS. Files
// are read here, on every run, so that rotated secrets are picked up.
func (cfg Config) newPusher(meta report.Metadata) (*push.Pusher, error) {
	tlsConfig := &tls.Config{InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // opt-in, for test gateways
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("the Pushgateway's CA file: %w", err)
		}
		tlsConfig.RootCAs = x509.NewCertPool()
		if !tlsConfig.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the Pushgateway's CA file %s holds no PEM certificate", cfg.CAFile)
		}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	pusher := push.New(cfg.URL, Job).
		Client(&http.Client{Transport: transport, Timeout: cfg.Timeout}).
		Grouping("cluster", meta.Cluster)
	if index, count, ok := strings.Cut(meta.Shard, "/"); ok && count != "1" {
		pusher = pusher.Grouping("shard", index)
	}
	for _, kv := range cfg.Grouping {
		key, value, _ := strings.Cut(kv, "=")
		pusher = pusher.Grouping(key, value)
	}
	switch {
	case cfg.Username != "":
		password, err := readSecret(cfg.PasswordFile, "password")
		if err != nil {
			return nil, err
		}
		pusher = pusher.BasicAuth(cfg.Username, password)
	case cfg.BearerTokenFile != "":
		token, err := readSecret(cfg.BearerTokenFile, "bearer token")
		if err != nil {
			return nil, err
		}
		pusher = pusher.Header(http.Header{"Authorization": {"Bearer " + token}})
	}
	return pusher, nil
}

// readSecret reads a password or token file, without its trailing newline.
func readSecret(file, what string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("the Pushgateway's %s file: %w", what, err)
	}
	return strings.TrimRight(string(data), "\r\n"), nil
}
