package sweeper

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// PushJob is the job label of the pushed metrics.
const PushJob = "operator-sweeper"

// StagePush names a failed push in the report.
const StagePush = "push"

// registry fills a fresh registry, never the global one, with what the report says. A rule,
// severity and stage that saw nothing is pushed as 0, so that a series never just disappears
// between runs. The last success timestamp is set only when the run succeeded.
func registry(report *Report, ruleNames []string, succeeded bool) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "operator_sweeper", Name: name, Help: help}, labels)
		reg.MustRegister(g)
		return g
	}
	gauge("objects_scanned", "Objects listed by the last run.").WithLabelValues().Set(float64(report.Summary.Scanned))
	gauge("resources_scanned", "Resource types listed by the last run.").WithLabelValues().Set(float64(report.Summary.Resources))
	gauge("info", "The last run's version and dry-run mode; always 1.", "version", "mode").
		WithLabelValues(report.Metadata.Version, string(report.Metadata.Mode)).Set(1)
	end := report.Metadata.EndTime.Time
	gauge("run_duration_seconds", "How long the last run took.").WithLabelValues().Set(end.Sub(report.Metadata.StartTime.Time).Seconds())
	gauge("last_run_timestamp_seconds", "When the last run ended, in Unix seconds.").WithLabelValues().Set(float64(end.Unix()))
	if succeeded {
		gauge("last_success_timestamp_seconds", "When the last run that had no failed stage or action ended, in Unix seconds.").
			WithLabelValues().Set(float64(end.Unix()))
	}

	findings := gauge("findings", "Findings of the last run, by rule and severity.", "rule", "severity")
	for _, rule := range ruleNames {
		for _, severity := range []rules.Severity{rules.SeverityInfo, rules.SeverityWarning} {
			findings.WithLabelValues(rule, string(severity))
		}
	}
	actions := gauge("actions", "Actions of the last run, by rule, action type and outcome (planned, dry-run, applied, failed, skipped).", "rule", "action", "outcome")
	for _, f := range report.Findings {
		findings.WithLabelValues(f.Rule, string(f.Severity)).Inc()
		if f.Action != nil {
			actions.WithLabelValues(f.Rule, f.Action.Type, string(f.Outcome)).Inc()
		}
	}
	errs := gauge("errors", "Problems of the last run, by stage; a resource that could not be listed counts under observe.", "stage")
	for _, stage := range []string{StageInventory, StageObserve, StagePlan} {
		errs.WithLabelValues(stage)
	}
	for _, e := range report.Errors {
		errs.WithLabelValues(e.Stage).Inc()
	}
	return reg
}

// pushMetrics pushes the run's metrics to the Pushgateway. A successful run replaces the whole
// group (PUT), so that no series of an earlier run lingers. A failed run replaces only the
// families it pushes (POST) and leaves out the last success timestamp, which so survives.
func pushMetrics(ctx context.Context, opts Options, report *Report, ruleNames []string) error {
	succeeded := !report.Failed()
	pusher, err := newPusher(opts)
	if err != nil {
		return err
	}
	pusher = pusher.Gatherer(registry(report, ruleNames, succeeded))
	ctx, cancel := context.WithTimeout(ctx, opts.PushgatewayTimeout.Duration)
	defer cancel()
	if succeeded {
		err = pusher.PushContext(ctx)
	} else {
		err = pusher.AddContext(ctx)
	}
	if err != nil {
		return fmt.Errorf("push metrics to %s: %w", opts.PushgatewayURL, err)
	}
	return nil
}

// newPusher sets up the Pushgateway client: grouping, credentials, TLS. Files are read here, on
// every run, so that rotated secrets are picked up.
func newPusher(opts Options) (*push.Pusher, error) {
	tlsConfig := &tls.Config{InsecureSkipVerify: opts.PushgatewayInsecureSkipVerify} //nolint:gosec // opt-in, for test gateways
	if opts.PushgatewayCAFile != "" {
		pem, err := os.ReadFile(opts.PushgatewayCAFile)
		if err != nil {
			return nil, fmt.Errorf("--pushgateway-ca-file: %w", err)
		}
		tlsConfig.RootCAs = x509.NewCertPool()
		if !tlsConfig.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--pushgateway-ca-file %s holds no PEM certificate", opts.PushgatewayCAFile)
		}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	pusher := push.New(opts.PushgatewayURL, PushJob).
		Client(&http.Client{Transport: transport, Timeout: opts.PushgatewayTimeout.Duration}).
		Grouping("cluster", opts.Cluster)
	for _, kv := range opts.PushGrouping {
		key, value, _ := strings.Cut(kv, "=")
		pusher = pusher.Grouping(key, value)
	}
	switch {
	case opts.PushgatewayUsername != "":
		password, err := readSecret(opts.PushgatewayPasswordFile, "--pushgateway-password-file")
		if err != nil {
			return nil, err
		}
		pusher = pusher.BasicAuth(opts.PushgatewayUsername, password)
	case opts.PushgatewayBearerTokenFile != "":
		token, err := readSecret(opts.PushgatewayBearerTokenFile, "--pushgateway-bearer-token-file")
		if err != nil {
			return nil, err
		}
		pusher = pusher.Header(http.Header{"Authorization": {"Bearer " + token}})
	}
	return pusher, nil
}

// readSecret reads a password or token file, without its trailing newline.
func readSecret(file, flag string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	return strings.TrimRight(string(data), "\r\n"), nil
}
