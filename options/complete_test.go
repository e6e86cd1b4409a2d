package options

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/operator-sweeper/operator-sweeper/report"
)

// TestCompleteLoadsTheConfigFileUnderTheFlags: the file's options on the defaults, the flags given
// on top, a list flag replacing the file's list; what neither sets keeps its default.
func TestCompleteLoadsTheConfigFileUnderTheFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(file, []byte("dry-run: none\nmax-actions: 7\npage-size: 20\nqps: 3.5\nexclude-namespaces: [a]\nbackup-retention: 3d\n"), 0o600))
	o := Default()
	fs := pflag.NewFlagSet("sweep", pflag.ContinueOnError)
	o.AddFlags(fs)
	fs.StringVar(&o.ConfigFile, FlagConfig, o.ConfigFile, "")
	require.NoError(t, fs.Parse([]string{"--config", file, "--max-actions=3", "--exclude-namespaces=b", "--exclude-namespaces=c", "--unhealthy-zone-threshold=0.25"}))
	require.NoError(t, Complete(&o, fs, o.Groups()))

	assert.Equal(t, file, o.ConfigFile)
	assert.Equal(t, report.DryRunNone, o.DryRun, "from the file")
	assert.Equal(t, int64(20), o.PageSize, "from the file")
	assert.Equal(t, float32(3.5), o.QPS, "from the file")
	assert.Equal(t, "3d", o.BackupRetention.String(), "from the file")
	assert.Equal(t, 3, o.MaxActions, "the flag wins")
	assert.Equal(t, []string{"b", "c"}, o.ExcludeNamespaces, "the flag replaces the file's list")
	assert.Equal(t, 0.25, o.UnhealthyZoneThreshold, "the flag wins")
	assert.Equal(t, Default().Timeout, o.Timeout, "what neither sets keeps its default")

	// The flags stay bound to o: what they set later lands in o.
	require.NoError(t, fs.Set(FlagMaxActions, "4"))
	assert.Equal(t, 4, o.MaxActions)
}
