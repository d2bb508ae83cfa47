package approval

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ConversationSettings is the "conversation" section of settings: how long
// a job waits for its next message, and how many tokens it may spend.
//
//	"conversation": {"idleLimit": "72h", "budget": {"tokensPerJob": 2000000, "tokensPerMessage": 200000}}
type ConversationSettings struct {
	// IdleLimit is how long a job waits for its next message before it
	// ends by itself (0: the default, a week).
	IdleLimit Duration `json:"idleLimit,omitempty"`
	Budget    Budget   `json:"budget,omitzero"`
}

// Budget caps the tokens a job spends (0: no cap). When a cap is reached
// the job parks and asks a person to raise it or end the job.
type Budget struct {
	TokensPerJob     int `json:"tokensPerJob,omitempty"`
	TokensPerMessage int `json:"tokensPerMessage,omitempty"`
}

// parseConversation reads "conversation" strictly: a typo must not drop a
// budget silently.
func parseConversation(raw json.RawMessage) (ConversationSettings, error) {
	var c ConversationSettings
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return ConversationSettings{}, fmt.Errorf("%w: conversation: %w", ErrBadSettings, err)
	}
	if c.IdleLimit < 0 {
		return ConversationSettings{}, fmt.Errorf("%w: conversation.idleLimit: must not be negative", ErrBadSettings)
	}
	if c.Budget.TokensPerJob < 0 || c.Budget.TokensPerMessage < 0 {
		return ConversationSettings{}, fmt.Errorf("%w: conversation.budget: a token budget must not be negative", ErrBadSettings)
	}
	return c, nil
}

// mergeConversation merges a more specific file's section: the idle limit
// comes from the most specific file that sets it; a budget only tightens
// (the smaller cap wins), so a workspace cannot lift the user's.
func mergeConversation(base, over ConversationSettings) ConversationSettings {
	out := base
	if over.IdleLimit > 0 {
		out.IdleLimit = over.IdleLimit
	}
	out.Budget.TokensPerJob = tighter(base.Budget.TokensPerJob, over.Budget.TokensPerJob)
	out.Budget.TokensPerMessage = tighter(base.Budget.TokensPerMessage, over.Budget.TokensPerMessage)
	return out
}

// tighter is the smaller of two caps, where 0 is no cap.
func tighter(a, b int) int {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}
