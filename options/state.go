package options

import (
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// FlagSweeperNamespace names the sweeper's namespace.
const FlagSweeperNamespace = "sweeper-namespace"

// serviceAccountNamespace is where a pod reads the namespace it runs in.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// DefaultSweeperNamespace is the sweeper's namespace out of a cluster: the shipped manifests'.
const DefaultSweeperNamespace = "operator-sweeper"

// StateOptions say where the sweeper keeps its state in the cluster: the pre-images of the objects
// it writes (in Secrets, unless --backup-dir), and the key it signs their records with.
type StateOptions struct {
	// SweeperNamespace is the sweeper's namespace; empty means the pod's own in a cluster, else
	// DefaultSweeperNamespace.
	SweeperNamespace string `json:"sweeper-namespace,omitempty"`
}

// AddFlags binds the group's flag to o; the default shown is o's current value.
func (o *StateOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.SweeperNamespace, FlagSweeperNamespace, o.SweeperNamespace,
		"The sweeper's namespace, where it keeps pre-images in Secrets and its signing key (default: the pod's namespace in a cluster, else "+DefaultSweeperNamespace+").")
}

// Validate returns every problem of the group.
func (o *StateOptions) Validate() []error {
	if o.SweeperNamespace == "" {
		return nil
	}
	if problems := validation.IsDNS1123Label(o.SweeperNamespace); len(problems) > 0 {
		return []error{invalid(FlagSweeperNamespace, o.SweeperNamespace, strings.Join(problems, "; "))}
	}
	return nil
}

// Namespace is the sweeper's namespace: as given, or the pod's, or DefaultSweeperNamespace.
func (o *StateOptions) Namespace() string {
	if o.SweeperNamespace != "" {
		return o.SweeperNamespace
	}
	if data, err := os.ReadFile(serviceAccountNamespace); err == nil && strings.TrimSpace(string(data)) != "" {
		return strings.TrimSpace(string(data))
	}
	return DefaultSweeperNamespace
}

// ApplyTo sets where the sweep keeps its state.
func (o *StateOptions) ApplyTo(cfg *sweeper.Config) { cfg.Namespace = o.Namespace() }
