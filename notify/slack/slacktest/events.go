package slacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The Events API, as Slack speaks it: a message posted in a channel the
// app is in becomes an event_callback envelope around a "message" event,
// POSTed (JSON, signed like every request) to the app's Request URL, or
// sent over Socket Mode as an "events_api" envelope with the same payload.

// Say stores a person's message in a channel (a reply in thread threadTS,
// "" for none) as Slack would, and returns the event_callback Slack then
// sends the app.
func (s *Server) Say(user User, channel, threadTS, text string) (Message, json.RawMessage) {
	s.mu.Lock()
	m := s.store(&Message{Channel: channel, Text: text, ThreadTS: threadTS, User: user.ID})
	out := *m
	s.touch()
	s.mu.Unlock()
	return out, MessageEvent(out)
}

// MessageEvent is the event_callback Slack sends for m: from a bot when
// m.BotID is set (subtype bot_message), else from the person m.User.
func MessageEvent(m Message) json.RawMessage {
	ev := map[string]any{"type": "message", "channel": m.Channel, "user": m.User, "text": m.Text, "ts": m.TS,
		"event_ts": m.TS, "channel_type": "channel"}
	if m.ThreadTS != "" {
		ev["thread_ts"] = m.ThreadTS
	}
	if m.BotID != "" {
		ev["bot_id"], ev["subtype"] = m.BotID, "bot_message"
	}
	if m.User != "" && m.BotID == "" {
		ev["client_msg_id"] = "c0ffee-" + m.TS
	}
	body, _ := json.Marshal(map[string]any{
		"token": "deprecated-verification-token", "team_id": "T0CUSTOS", "api_app_id": "A0CUSTOS",
		"type": "event_callback", "event_id": "Ev" + strings.ReplaceAll(m.TS, ".", ""), "event_time": time.Now().Unix(),
		"event": ev,
	})
	return body
}

// URLVerification is the challenge Slack sends when the Request URL is set.
func URLVerification(challenge string) json.RawMessage {
	body, _ := json.Marshal(map[string]any{"token": "deprecated-verification-token", "challenge": challenge, "type": "url_verification"})
	return body
}

// PostJSON sends body to endpoint as the Events API does: JSON, signed
// with secret at ts ("" secret: unsigned). The response's body is closed.
func PostJSON(endpoint, secret string, ts time.Time, body []byte) (*http.Response, string, error) {
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(string(body)))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	if secret != "" {
		for k, v := range Sign(secret, ts, body) {
			req.Header[k] = v
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("slacktest: post to %s: %w", endpoint, err)
	}
	defer res.Body.Close()
	got, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		return nil, "", fmt.Errorf("slacktest: read the answer of %s: %w", endpoint, err)
	}
	return res, string(got), nil
}
