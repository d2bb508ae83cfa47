package inbox

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/internal/answerkey"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// The page vouches only for a person its gate identified, and only with
// the workers' key: a typed name never counts towards a call's approvals.
func TestVouch(t *testing.T) {
	key := bytes.Repeat([]byte{3}, 32)
	identify := func(*http.Request) (string, bool) { return "alice", true }
	for _, tc := range []struct {
		name string
		o    Options
		want bool
	}{
		{"token-named person, key", Options{SessionCookie: "s", Identify: identify, AnswerKey: key}, true},
		{"no key", Options{SessionCookie: "s", Identify: identify}, false},
		{"typed names (embedded server)", Options{SessionCookie: "s", AnswerKey: key}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := NewHandler(nil, nil, tc.o)
			require.NoError(t, err)
			vouch := h.vouch("alice")
			if !tc.want {
				assert.Nil(t, vouch)
				return
			}
			d := jobapi.ApprovalDecision{CallID: "c1", Decision: "allow", By: "alice", Channel: Channel}
			vouch("job-1", &d)
			require.NotNil(t, d.Verified)
			assert.Equal(t, "alice", d.Verified.ID)
			claim := answerkey.Claim{Job: "job-1", Call: "c1", Decision: "allow", Channel: Channel, ID: "alice"}
			assert.True(t, answerkey.Verify(key, claim, d.Verified.Sig))
			claim.Job = "job-2"
			assert.False(t, answerkey.Verify(key, claim, d.Verified.Sig), "bound to its job")
		})
	}
}
