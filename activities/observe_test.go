package activities

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The sandbox's kill reasons map to few label values, and the ones caused
// by a resource limit name that limit.
func TestKillReasonLabels(t *testing.T) {
	for _, tc := range []struct {
		reason, tag, limit string
	}{
		{"timeout", "timeout", ""},
		{"timeout (process limit reached)", "timeout", "processes"},
		{"output limit", "output limit", "output"},
		{"cpu limit", "cpu limit", "cpu"},
		{"memory limit", "memory limit", "memory"},
		{"file size limit", "file size limit", "file_size"},
		{"", "killed", ""},
	} {
		assert.Equal(t, tc.tag, killReasonTag(tc.reason), tc.reason)
		limit, ok := limitHit(tc.reason)
		assert.Equal(t, tc.limit, limit, tc.reason)
		assert.Equal(t, tc.limit != "", ok, tc.reason)
	}
}
