package rules

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCatalogIsValid: every file of the catalog parses strictly and every entry names what the
// catalog needs: its consequence, what it stands for, its resources, its controllers and the
// upstream source it was checked against; no two entries have the same pattern and resources.
func TestCatalogIsValid(t *testing.T) {
	operators, err := Catalog()
	require.NoError(t, err)
	for _, op := range operators {
		for _, owner := range op.Finalizers {
			assert.NotEmpty(t, owner.Source.Files, "%s: %s", op.Name, owner.Pattern)
		}
	}
	_, err = NewFinalizerMappings(nil)
	require.NoError(t, err, "the catalog compiles into mappings")
}
