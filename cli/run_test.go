package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// CUSTOS_IDENTITY names the job's owner on the channels.
func TestIdentities(t *testing.T) {
	for in, want := range map[string][]string{
		"":                   nil,
		"U0ALICE":            {"U0ALICE"},
		" U0ALICE , W0BOB ,": {"U0ALICE", "W0BOB"},
		",,":                 nil,
	} {
		assert.Equal(t, want, identities(in), "%q", in)
	}
}
