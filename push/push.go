package sweeper

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus/push"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PushJob is the job label of the pushed metrics.
const PushJob = "operator-sweeper"

// The Pushgateway's flag names.
const (
	FlagPushgatewayURL                = "pushgateway-url"
	FlagPushgatewayTimeout            = "pushgateway-timeout"
	FlagPushgatewayUsername           = "pushgateway-username"
	FlagPushgatewayPasswordFile       = "pushgateway-password-file"
	FlagPushgatewayBearerTokenFile    = "pushgateway-bearer-token-file"
	FlagPushgatewayCAFile             = "pushgateway-ca-file"
	FlagPushgatewayInsecureSkipVerify = "pushgateway-insecure-skip-verify"
	FlagPushGrouping                  = "push-grouping"
	FlagRequirePush                   = "require-push"
)

// PushOptions say where and how a run's metrics are pushed.
type PushOptions struct {
	// PushgatewayURL, if set, receives the run's metrics (env SWEEPER_PUSHGATEWAY_URL).
	PushgatewayURL string `json:"pushgateway-url,omitempty"`
	// PushgatewayTimeout bounds the push.
	PushgatewayTimeout metav1.Duration `json:"pushgateway-timeout"`
	// PushgatewayUsername and PushgatewayPasswordFile are basic-auth credentials.
	PushgatewayUsername     string `json:"pushgateway-username,omitempty"`
	PushgatewayPasswordFile string `json:"pushgateway-password-file,omitempty"`
	// PushgatewayBearerTokenFile holds a bearer token, instead of basic auth.
	PushgatewayBearerTokenFile string `json:"pushgateway-bearer-token-file,omitempty"`
	// PushgatewayCAFile is the CA bundle that signs an HTTPS Pushgateway's certificate.
	PushgatewayCAFile string `json:"pushgateway-ca-file,omitempty"`
	// PushgatewayInsecureSkipVerify does not verify an HTTPS Pushgateway's certificate.
	PushgatewayInsecureSkipVerify bool `json:"pushgateway-insecure-skip-verify"`
	// PushGrouping adds key=value grouping labels to job and cluster.
	PushGrouping []string `json:"push-grouping,omitempty"`
	// RequirePush makes a failed push fail the run (exit 1); otherwise it is reported and logged.
	RequirePush bool `json:"require-push"`
}

// AddFlags binds the Pushgateway's flags to o.
func (o *PushOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.PushgatewayURL, FlagPushgatewayURL, o.PushgatewayURL, "Push the run's metrics to this Pushgateway (default: $SWEEPER_PUSHGATEWAY_URL; none if unset).")
	fs.DurationVar(&o.PushgatewayTimeout.Duration, FlagPushgatewayTimeout, o.PushgatewayTimeout.Duration, "Bound on the push.")
	fs.StringVar(&o.PushgatewayUsername, FlagPushgatewayUsername, o.PushgatewayUsername, "Basic-auth user for the Pushgateway.")
	fs.StringVar(&o.PushgatewayPasswordFile, FlagPushgatewayPasswordFile, o.PushgatewayPasswordFile, "File with the basic-auth password.")
	fs.StringVar(&o.PushgatewayBearerTokenFile, FlagPushgatewayBearerTokenFile, o.PushgatewayBearerTokenFile, "File with a bearer token for the Pushgateway.")
	fs.StringVar(&o.PushgatewayCAFile, FlagPushgatewayCAFile, o.PushgatewayCAFile, "CA bundle of an HTTPS Pushgateway.")
	fs.BoolVar(&o.PushgatewayInsecureSkipVerify, FlagPushgatewayInsecureSkipVerify, o.PushgatewayInsecureSkipVerify, "Do not verify an HTTPS Pushgateway's certificate.")
	fs.StringSliceVar(&o.PushGrouping, FlagPushGrouping, o.PushGrouping, "Extra grouping labels, key=value, next to job and cluster.")
	fs.BoolVar(&o.RequirePush, FlagRequirePush, o.RequirePush, "Exit 1 when the push fails (default: report and log it).")
}

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Validate returns every problem of the push options.
func (o PushOptions) Validate() []error {
	var errs []error
	if o.PushgatewayURL == "" {
		// Settings of a push that will not happen are a slip: the URL is missing, or they are.
		for _, set := range []struct {
			flag string
			set  bool
		}{
			{FlagRequirePush, o.RequirePush},
			{FlagPushgatewayUsername, o.PushgatewayUsername != ""},
			{FlagPushgatewayPasswordFile, o.PushgatewayPasswordFile != ""},
			{FlagPushgatewayBearerTokenFile, o.PushgatewayBearerTokenFile != ""},
			{FlagPushgatewayCAFile, o.PushgatewayCAFile != ""},
			{FlagPushgatewayInsecureSkipVerify, o.PushgatewayInsecureSkipVerify},
			{FlagPushGrouping, len(o.PushGrouping) > 0},
		} {
			if set.set {
				errs = append(errs, fmt.Errorf("--%s needs --%s (or SWEEPER_PUSHGATEWAY_URL)", set.flag, FlagPushgatewayURL))
			}
		}
	} else if u, err := url.Parse(o.PushgatewayURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("--%s %q is invalid: use http(s)://host:port", FlagPushgatewayURL, o.PushgatewayURL))
	}
	if o.PushgatewayTimeout.Duration <= 0 {
		errs = append(errs, fmt.Errorf("--%s %s is invalid: it must be positive", FlagPushgatewayTimeout, o.PushgatewayTimeout.Duration))
	}
	if (o.PushgatewayUsername == "") != (o.PushgatewayPasswordFile == "") {
		errs = append(errs, fmt.Errorf("--%s and --%s go together", FlagPushgatewayUsername, FlagPushgatewayPasswordFile))
	}
	if o.PushgatewayUsername != "" && o.PushgatewayBearerTokenFile != "" {
		errs = append(errs, fmt.Errorf("use either basic auth (--%s) or --%s, not both", FlagPushgatewayUsername, FlagPushgatewayBearerTokenFile))
	}
	for _, f := range []struct{ flag, file string }{
		{FlagPushgatewayPasswordFile, o.PushgatewayPasswordFile},
		{FlagPushgatewayBearerTokenFile, o.PushgatewayBearerTokenFile},
		{FlagPushgatewayCAFile, o.PushgatewayCAFile},
	} {
		if f.file == "" {
			continue
		}
		if _, err := os.Stat(f.file); err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", f.flag, err))
		}
	}
	for _, kv := range o.PushGrouping {
		key, value, ok := strings.Cut(kv, "=")
		switch {
		case !ok || value == "" || !labelName.MatchString(key):
			errs = append(errs, fmt.Errorf("--%s %q is invalid: use label=value", FlagPushGrouping, kv))
		case key == "job" || key == "cluster":
			errs = append(errs, fmt.Errorf("--%s %q: %s is set already (use --%s)", FlagPushGrouping, kv, key, FlagCluster))
		case key == "shard":
			errs = append(errs, fmt.Errorf("--%s %q: shard is set already (from --%s)", FlagPushGrouping, kv, FlagShard))
		}
	}
	return errs
}

// pushMetrics pushes the run's metrics to the Pushgateway. A successful run replaces the whole
// group (PUT), so that no series of an earlier run lingers. A failed run replaces only the
// families it pushes (POST) and leaves out the last success timestamp, which so survives.
func (o PushOptions) pushMetrics(ctx context.Context, cluster string, shard Shard, report *Report, enabled []ruleMetrics, stages []string) error {
	succeeded := !report.Failed()
	pusher, err := o.newPusher(cluster, shard)
	if err != nil {
		return err
	}
	pusher = pusher.Gatherer(registry(report, enabled, stages, succeeded))
	// A deadline of its own: a run that was interrupted or ran out of time still says so.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.PushgatewayTimeout.Duration)
	defer cancel()
	if succeeded {
		err = pusher.PushContext(ctx)
	} else {
		err = pusher.AddContext(ctx)
	}
	if err != nil {
		return fmt.Errorf("push metrics to %s: %w", o.PushgatewayURL, err)
	}
	return nil
}

// newPusher sets up the Pushgateway client: grouping (cluster, and shard when the sweep is split,
// so that the shards of a cluster do not replace each other's metrics), credentials, TLS. Files
// are read here, on every run, so that rotated secrets are picked up.
func (o PushOptions) newPusher(cluster string, shard Shard) (*push.Pusher, error) {
	tlsConfig := &tls.Config{InsecureSkipVerify: o.PushgatewayInsecureSkipVerify} //nolint:gosec // opt-in, for test gateways
	if o.PushgatewayCAFile != "" {
		pem, err := os.ReadFile(o.PushgatewayCAFile)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", FlagPushgatewayCAFile, err)
		}
		tlsConfig.RootCAs = x509.NewCertPool()
		if !tlsConfig.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--%s %s holds no PEM certificate", FlagPushgatewayCAFile, o.PushgatewayCAFile)
		}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	pusher := push.New(o.PushgatewayURL, PushJob).
		Client(&http.Client{Transport: transport, Timeout: o.PushgatewayTimeout.Duration}).
		Grouping("cluster", cluster)
	if shard.sharded() {
		pusher = pusher.Grouping("shard", strconv.Itoa(shard.Index))
	}
	for _, kv := range o.PushGrouping {
		key, value, _ := strings.Cut(kv, "=")
		pusher = pusher.Grouping(key, value)
	}
	switch {
	case o.PushgatewayUsername != "":
		password, err := readSecret(o.PushgatewayPasswordFile, FlagPushgatewayPasswordFile)
		if err != nil {
			return nil, err
		}
		pusher = pusher.BasicAuth(o.PushgatewayUsername, password)
	case o.PushgatewayBearerTokenFile != "":
		token, err := readSecret(o.PushgatewayBearerTokenFile, FlagPushgatewayBearerTokenFile)
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
		return "", fmt.Errorf("--%s: %w", flag, err)
	}
	return strings.TrimRight(string(data), "\r\n"), nil
}
