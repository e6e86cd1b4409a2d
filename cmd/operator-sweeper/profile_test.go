package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/operator-sweeper/operator-sweeper/options"
)

// TestProfile: each profile is written, gzipped as pprof writes it, where --profile-output says;
// none writes nothing.
func TestProfile(t *testing.T) {
	for _, profile := range options.Profiles {
		t.Run(profile, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "profile.pprof")
			stop, err := startProfile(options.LogOptions{Profile: profile, ProfileOutput: out})
			require.NoError(t, err)
			_ = make([]byte, 1<<20) // something to profile
			require.NoError(t, stop())
			data, err := os.ReadFile(out)
			if profile == "none" {
				assert.True(t, os.IsNotExist(err), "none writes no file")
				return
			}
			require.NoError(t, err)
			require.Greater(t, len(data), 2)
			assert.Equal(t, []byte{0x1f, 0x8b}, data[:2], "a gzipped profile")
		})
	}
	_, err := startProfile(options.LogOptions{Profile: "cpu", ProfileOutput: filepath.Join(t.TempDir(), "missing", "p.pprof")})
	assert.ErrorContains(t, err, "--profile-output")
}
