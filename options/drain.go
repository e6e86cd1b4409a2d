package options

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The drain group's flags: preflight's.
const (
	FlagDrain          = "drain"
	FlagDrainTimeout   = "drain-timeout"
	FlagDrainProtected = "drain-protected"
)

// DrainOptions say whether preflight drains the operator's custom resources while it runs, and
// how long it waits for them to go.
type DrainOptions struct {
	// Drain deletes the custom resources the uninstall would leave blocked (with --dry-run=none;
	// the default dry run only plans), and waits for the operator to finalize them.
	Drain bool `json:"drain,omitempty"`
	// DrainTimeout is how long the drain waits for them to go.
	DrainTimeout metav1.Duration `json:"drain-timeout"`
	// DrainProtected drains what a protected mapping guards too: deleting those deletes data by
	// design.
	DrainProtected bool `json:"drain-protected,omitempty"`
}

func defaultDrainOptions() DrainOptions {
	return DrainOptions{DrainTimeout: metav1.Duration{Duration: 5 * time.Minute}}
}

// AddFlags binds the group's flags to o; the defaults shown are o's current values.
func (o *DrainOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Drain, FlagDrain, o.Drain, "Delete the custom resources the uninstall would leave blocked, while the operator runs to finalize them, and wait for them to go (with --dry-run=none).")
	fs.DurationVar(&o.DrainTimeout.Duration, FlagDrainTimeout, o.DrainTimeout.Duration, "How long --drain waits for the deleted custom resources to go.")
	fs.BoolVar(&o.DrainProtected, FlagDrainProtected, o.DrainProtected, "Drain what a protected (data-guarding) or cascading mapping guards too: deleting those deletes their data or what they deployed, by design.")
}

// Validate returns every problem of the group.
func (o *DrainOptions) Validate() []error {
	var errs []error
	if o.DrainTimeout.Duration <= 0 {
		errs = append(errs, invalid(FlagDrainTimeout, o.DrainTimeout.Duration, "use a positive duration"))
	}
	if o.DrainProtected && !o.Drain {
		errs = append(errs, fmt.Errorf("--%s is a choice of --%s: give both", FlagDrainProtected, FlagDrain))
	}
	return errs
}
