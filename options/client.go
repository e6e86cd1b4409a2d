package options

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// The client group's flags.
const (
	FlagKubeconfig     = "kubeconfig"
	FlagContext        = "context"
	FlagCluster        = "cluster"
	FlagQPS            = "qps"
	FlagBurst          = "burst"
	FlagTimeout        = "timeout"
	FlagRequestTimeout = "request-timeout"
)

// ClientOptions say which cluster to talk to, under which name, and how hard.
type ClientOptions struct {
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG, in-cluster, then ~/.kube/config.
	Kubeconfig string `json:"-"`
	// Context is the kubeconfig context to use; empty means the current one.
	Context string `json:"-"`
	// Cluster names the cluster in the report; empty means the kubeconfig context or "in-cluster".
	Cluster string `json:"cluster,omitempty"`
	// QPS and Burst bound the client's request rate.
	QPS   float32 `json:"qps"`
	Burst int     `json:"burst"`
	// Timeout bounds the whole run; 0 means no bound.
	Timeout metav1.Duration `json:"timeout"`
	// RequestTimeout bounds each attempt of a request to the API server; a read that times out
	// is tried again, within Timeout.
	RequestTimeout metav1.Duration `json:"request-timeout"`
}

func defaultClientOptions() ClientOptions {
	return ClientOptions{
		// High enough not to throttle a sweep: --concurrency bounds the lists in flight, and the
		// server's API Priority and Fairness protects it; client-side throttling only made a
		// sweep slower than listing the cluster (make bench).
		QPS:            1000,
		Burst:          2000,
		Timeout:        metav1.Duration{Duration: 10 * time.Minute},
		RequestTimeout: metav1.Duration{Duration: time.Minute},
	}
}

// AddFlags binds the group's flags to o; the defaults shown are o's current values.
func (o *ClientOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, FlagKubeconfig, o.Kubeconfig, "Path to the kubeconfig file (default: $KUBECONFIG, in-cluster, then ~/.kube/config).")
	fs.StringVar(&o.Context, FlagContext, o.Context, "The kubeconfig context to use (default: the current context).")
	fs.StringVar(&o.Cluster, FlagCluster, o.Cluster, "Cluster name in the report (default: the kubeconfig context, or \"in-cluster\").")
	fs.Float32Var(&o.QPS, FlagQPS, o.QPS, "Queries per second to the API server.")
	fs.IntVar(&o.Burst, FlagBurst, o.Burst, "Burst of queries to the API server.")
	fs.DurationVar(&o.Timeout.Duration, FlagTimeout, o.Timeout.Duration, "Bound on the whole run; 0: none.")
	fs.DurationVar(&o.RequestTimeout.Duration, FlagRequestTimeout, o.RequestTimeout.Duration, "Bound on each attempt of a request to the API server; reads that time out are tried again.")
}

// Validate returns every problem of the group.
func (o *ClientOptions) Validate() []error {
	var errs []error
	if o.QPS <= 0 {
		errs = append(errs, invalid(FlagQPS, o.QPS, "it must be positive"))
	}
	if o.Burst < 1 {
		errs = append(errs, invalid(FlagBurst, o.Burst, "it must be at least 1"))
	}
	if o.Timeout.Duration < 0 {
		errs = append(errs, invalid(FlagTimeout, o.Timeout.Duration, "use 0 (no timeout) or a positive duration"))
	}
	if o.RequestTimeout.Duration <= 0 {
		errs = append(errs, invalid(FlagRequestTimeout, o.RequestTimeout.Duration, "it must be positive"))
	}
	return errs
}

// ApplyTo sets how the clients talk to the API server.
func (o *ClientOptions) ApplyTo(cfg *sweeper.ClientConfig) {
	cfg.QPS, cfg.Burst, cfg.RequestTimeout = o.QPS, o.Burst, o.RequestTimeout.Duration
}

// invalid says that a flag's value is invalid, and what it should be.
func invalid(flag string, value any, want string) error {
	return fmt.Errorf("--%s %v is invalid: %s", flag, value, want)
}
