package slack

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/notify/slack/slacktest"
)

// Over Socket Mode the bot connects with the app token, acknowledges each
// envelope and handles the interaction inside it.
func TestSocketModeReceivesInteractions(t *testing.T) {
	s := fakeSlack(t)
	cfg := testAPI(s)
	cfg.AppToken, cfg.SigningSecret = slacktest.AppToken, ""
	require.NoError(t, cfg.Validate())
	b := NewBot(cfg, NewAPI(cfg), nil, slog.New(slog.DiscardHandler))
	b.RunSocketMode()
	defer b.Close()

	respURL := s.ResponseURL()
	payload, err := json.Marshal(map[string]any{"type": "block_actions", "user": map[string]any{"id": "U0ALICE"},
		"response_url": respURL, "actions": []any{map[string]any{"type": "button", "block_id": actionsBlock, "action_id": ActionAllow, "value": "not json"}}})
	require.NoError(t, err)
	env, err := s.SocketSend("interactive", payload)
	require.NoError(t, err)
	require.True(t, s.Wait(30*time.Second, func(s *slacktest.Server) bool { return len(s.Replies()) == 1 }), "no reply")
	assert.Equal(t, "not applied: this button does not name a custos job and call", s.Replies()[0].Text)
	assert.True(t, s.Wait(30*time.Second, func(s *slacktest.Server) bool { return s.Acked(env) }), "envelope not acknowledged")
	assert.Equal(t, slacktest.AppToken, s.Calls("apps.connections.open")[0].Token)
}
