package slack

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/notify/slack/slacktest"
)

const testSecret = "8f742231b10e8888abcd99yyyzzz85a5"

func TestVerifyRequest(t *testing.T) {
	body := url.Values{"payload": {`{"type":"block_actions"}`}}.Encode()
	now := time.Now()
	signed := func(secret string, ts time.Time, signedBody string) http.Header {
		return slacktest.Sign(secret, ts, []byte(signedBody))
	}
	cases := []struct {
		name   string
		header http.Header
		body   string
		ok     bool
	}{
		{"valid", signed(testSecret, now, body), body, true},
		{"valid, four minutes old", signed(testSecret, now.Add(-4*time.Minute), body), body, true},
		{"forged: signed with another secret", signed("not-the-secret", now, body), body, false},
		{"replayed: timestamp six minutes old", signed(testSecret, now.Add(-6*time.Minute), body), body, false},
		{"replayed: a day old", signed(testSecret, now.Add(-24*time.Hour), body), body, false},
		{"timestamp six minutes in the future", signed(testSecret, now.Add(6*time.Minute), body), body, false},
		{"body tampered after signing", signed(testSecret, now, body), strings.Replace(body, "block_actions", "block_actionz", 1), false},
		{"body extended after signing", signed(testSecret, now, body), body + "&x=1", false},
		{"missing signature", http.Header{"X-Slack-Request-Timestamp": {signed(testSecret, now, body).Get("X-Slack-Request-Timestamp")}}, body, false},
		{"missing timestamp", http.Header{"X-Slack-Signature": {signed(testSecret, now, body).Get("X-Slack-Signature")}}, body, false},
		{"no headers", http.Header{}, body, false},
		{"signature without v0= prefix", http.Header{"X-Slack-Request-Timestamp": {signed(testSecret, now, body).Get("X-Slack-Request-Timestamp")},
			"X-Slack-Signature": {strings.TrimPrefix(signed(testSecret, now, body).Get("X-Slack-Signature"), "v0=")}}, body, false},
		{"signature truncated", http.Header{"X-Slack-Request-Timestamp": {signed(testSecret, now, body).Get("X-Slack-Request-Timestamp")},
			"X-Slack-Signature": {signed(testSecret, now, body).Get("X-Slack-Signature")[:40]}}, body, false},
		{"timestamp not a number", http.Header{"X-Slack-Request-Timestamp": {"soon"},
			"X-Slack-Signature": {signed(testSecret, now, body).Get("X-Slack-Signature")}}, body, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, InteractivityPath, strings.NewReader(tc.body))
			for k, v := range tc.header {
				r.Header[k] = v
			}
			got, err := verifyRequest(r, testSecret)
			if tc.ok {
				require.NoError(t, err)
				assert.Equal(t, tc.body, string(got))
				return
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrUnverified), "%v", err)
			assert.Nil(t, got, "nothing of an unverified body is handed on")
		})
	}
}

func TestVerifyRequestBoundsTheBody(t *testing.T) {
	big := strings.Repeat("a", maxBody+1)
	r := httptest.NewRequest(http.MethodPost, InteractivityPath, strings.NewReader(big))
	for k, v := range slacktest.Sign(testSecret, time.Now(), []byte(big)) {
		r.Header[k] = v
	}
	_, err := verifyRequest(r, testSecret)
	require.ErrorContains(t, err, "larger than")

	// The same size limit lets a correctly signed body of exactly maxBody through.
	ok := strings.Repeat("a", maxBody)
	r = httptest.NewRequest(http.MethodPost, InteractivityPath, strings.NewReader(ok))
	for k, v := range slacktest.Sign(testSecret, time.Now(), []byte(ok)) {
		r.Header[k] = v
	}
	_, err = verifyRequest(r, testSecret)
	require.NoError(t, err)
}

func TestVerifyRequestNeedsASecret(t *testing.T) {
	body := "payload=x"
	r := httptest.NewRequest(http.MethodPost, InteractivityPath, strings.NewReader(body))
	for k, v := range slacktest.Sign("", time.Now(), []byte(body)) {
		r.Header[k] = v
	}
	_, err := verifyRequest(r, "")
	require.ErrorIs(t, err, ErrUnverified)
}

// The endpoint refuses an unverified request with 401 before it reads the
// payload: the bot here has no Temporal client, so reaching the payload
// would panic.
func TestEndpointRefusesUnverified(t *testing.T) {
	b := NewBot(Config{SigningSecret: testSecret}, nil, nil, slog.New(slog.DiscardHandler))
	defer b.Close()
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	form := slacktest.Interaction(`{"type":"block_actions","actions":[{"action_id":"custos_allow","value":"{\"job\":\"j\",\"call\":\"c\"}"}]}`)
	for _, path := range []string{InteractivityPath, CommandsPath, EventsPath} {
		for name, send := range map[string]func() (*http.Response, error){
			"forged": func() (*http.Response, error) { return slacktest.Post(srv.URL+path, "wrong", time.Now(), form) },
			"replayed": func() (*http.Response, error) {
				return slacktest.Post(srv.URL+path, testSecret, time.Now().Add(-10*time.Minute), form)
			},
			"unsigned": func() (*http.Response, error) { return slacktest.Post(srv.URL+path, "", time.Now(), form) },
		} {
			res, err := send()
			require.NoError(t, err)
			assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "%s %s", name, path)
		}
	}
	// A GET is not an endpoint at all.
	res, err := http.Get(srv.URL + InteractivityPath)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
}
