package options

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-sweeper/operator-sweeper/push"
	"github.com/operator-sweeper/operator-sweeper/redact"
)

// The push group's flags.
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

// PushgatewayURLEnv names the environment variable the CronJob's Pushgateway overlay sets.
const PushgatewayURLEnv = "SWEEPER_PUSHGATEWAY_URL"

// PushOptions say where and how a run's metrics are pushed, and whether a failed push fails it.
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
func (o *PushOptions) Validate() []error {
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
	} else if err := pushgatewayURLError("--"+FlagPushgatewayURL, o.PushgatewayURL); err != nil {
		errs = append(errs, err)
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

func defaultPushOptions() PushOptions {
	return PushOptions{PushgatewayTimeout: metav1.Duration{Duration: 10 * time.Second}}
}

// ApplyEnv takes the Pushgateway's URL from SWEEPER_PUSHGATEWAY_URL, unless --pushgateway-url was
// given: the environment overrides the config file, a flag the environment. The error names the
// variable, which is what to change (in the CronJob's overlay, usually).
func (o *PushOptions) ApplyEnv(fs *pflag.FlagSet) error {
	value := os.Getenv(PushgatewayURLEnv)
	if value == "" || fs.Changed(FlagPushgatewayURL) {
		return nil
	}
	if err := pushgatewayURLError(PushgatewayURLEnv, value); err != nil {
		return err
	}
	o.PushgatewayURL = value
	return nil
}

// pushgatewayURLError says what is wrong with the Pushgateway URL given as name, if anything,
// showing of it only what redact.Credentials does; one that does not parse, not at all: it may
// hold a credential where a user and password would be.
func pushgatewayURLError(name, value string) error {
	u, err := url.Parse(value)
	var parseErr *url.Error
	switch {
	case errors.As(err, &parseErr):
		return fmt.Errorf("%s is invalid (%v; not shown, as it may hold a credential): use http(s)://host:port", name, parseErr.Err)
	case err != nil:
		return fmt.Errorf("%s is invalid (not shown, as it may hold a credential): use http(s)://host:port", name)
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("%s %q is invalid: use http(s)://host:port", name, redact.Credentials(value))
	}
	return nil
}

// ApplyTo sets where and how the metrics are pushed.
func (o *PushOptions) ApplyTo(cfg *push.Config) {
	*cfg = push.Config{
		URL:                o.PushgatewayURL,
		Timeout:            o.PushgatewayTimeout.Duration,
		Username:           o.PushgatewayUsername,
		PasswordFile:       o.PushgatewayPasswordFile,
		BearerTokenFile:    o.PushgatewayBearerTokenFile,
		CAFile:             o.PushgatewayCAFile,
		InsecureSkipVerify: o.PushgatewayInsecureSkipVerify,
		Grouping:           o.PushGrouping,
	}
}
