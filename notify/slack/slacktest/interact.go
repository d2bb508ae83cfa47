package slacktest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// User is who clicks.
type User struct {
	ID, Name string
}

// Sign computes Slack's request signature headers for body sent at ts:
// X-Slack-Signature = "v0=" + hex(HMAC-SHA256(secret, "v0:" + ts + ":" + body)).
func Sign(secret string, ts time.Time, body []byte) http.Header {
	stamp := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:", stamp)
	mac.Write(body)
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", stamp)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return h
}

// Post sends form to endpoint as Slack does: form-encoded, signed with
// secret at ts. A nil header map from sign means "send unsigned".
func Post(endpoint, secret string, ts time.Time, form url.Values) (*http.Response, error) {
	body := form.Encode()
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	if secret != "" {
		for k, v := range Sign(secret, ts, []byte(body)) {
			req.Header[k] = v
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("slacktest: post to %s: %w", endpoint, err)
	}
	res.Body.Close()
	return res, nil
}

// Click builds the block_actions payload Slack sends when user clicks the
// button actionID of message m, with the button's own value as posted.
func Click(m Message, actionID string, user User, responseURL string) (string, error) {
	var blocks []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Elements []struct {
			Type     string          `json:"type"`
			ActionID string          `json:"action_id"`
			Value    string          `json:"value"`
			Text     json.RawMessage `json:"text"`
			Style    string          `json:"style,omitempty"`
		} `json:"elements"`
		Accessory *struct {
			Type     string          `json:"type"`
			ActionID string          `json:"action_id"`
			Value    string          `json:"value"`
			Text     json.RawMessage `json:"text"`
			Style    string          `json:"style,omitempty"`
		} `json:"accessory"`
	}
	if err := json.Unmarshal(m.Blocks, &blocks); err != nil {
		return "", fmt.Errorf("slacktest: message blocks: %w", err)
	}
	for _, b := range blocks {
		if a := b.Accessory; a != nil {
			// A section's button: clicked like one of an actions block.
			b.Elements = append(b.Elements, *a)
		}
		for _, e := range b.Elements {
			if e.ActionID != actionID {
				continue
			}
			now := fmt.Sprintf("%d.%06d", time.Now().Unix(), time.Now().Nanosecond()/1000)
			payload := map[string]any{
				"type":       "block_actions",
				"user":       map[string]any{"id": user.ID, "username": user.Name, "name": user.Name, "team_id": "T0CUSTOS"},
				"api_app_id": "A0CUSTOS",
				"token":      "deprecated-verification-token",
				"container":  map[string]any{"type": "message", "message_ts": m.TS, "channel_id": m.Channel, "is_ephemeral": false},
				"trigger_id": "1337.42.trigger",
				"team":       map[string]any{"id": "T0CUSTOS", "domain": "custos-test"},
				"channel":    map[string]any{"id": m.Channel, "name": "approvals"},
				"message": map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "blocks": m.Blocks,
					"bot_id": "B0CUSTOS", "user": "U0CUSTOSBOT"},
				"response_url": responseURL,
				"actions": []any{map[string]any{"type": e.Type, "action_id": e.ActionID, "block_id": b.BlockID,
					"text": e.Text, "value": e.Value, "style": e.Style, "action_ts": now}},
			}
			out, err := json.Marshal(payload)
			return string(out), err
		}
	}
	return "", fmt.Errorf("slacktest: message %s has no button %q", m.TS, actionID)
}

// Interaction is the form Slack posts to the interactivity URL.
func Interaction(payload string) url.Values { return url.Values{"payload": {payload}} }

// Command is the form Slack posts to a slash command's URL.
func Command(user User, text, responseURL string) url.Values {
	return url.Values{"token": {"deprecated-verification-token"}, "team_id": {"T0CUSTOS"}, "team_domain": {"custos-test"},
		"channel_id": {"C0APPROVALS"}, "channel_name": {"approvals"}, "user_id": {user.ID}, "user_name": {user.Name},
		"command": {"/custos"}, "text": {text}, "api_app_id": {"A0CUSTOS"}, "response_url": {responseURL},
		"trigger_id": {"1337.43.trigger"}}
}
