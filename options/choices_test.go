package options

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChoicesAreValid: every value shell completion offers is one Validate takes, and each flag
// with choices takes nothing else.
func TestChoicesAreValid(t *testing.T) {
	for flag, choices := range Choices() {
		for _, value := range append(choices, "bogus") {
			o := Default()
			o.NotifyURL = "https://hooks.example.com/x" // the notify flags need one
			fs := pflag.NewFlagSet("sweep", pflag.ContinueOnError)
			o.AddFlags(fs)
			require.NotNil(t, fs.Lookup(flag), "--%s is a flag of the sweep", flag)
			require.NoError(t, fs.Set(flag, value))
			if value == "bogus" {
				assert.ErrorContains(t, o.Validate(), "--"+flag, "--%s=%s", flag, value)
			} else {
				assert.NoError(t, o.Validate(), "--%s=%s", flag, value)
			}
		}
	}
}
