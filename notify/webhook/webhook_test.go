package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/notify"
)

const secret = "0123456789abcdef-webhook-secret"

// verifyCustosWebhook checks a custos delivery: body is the raw request body.
func verifyCustosWebhook(secret string, h http.Header, body []byte, now time.Time) error {
	ts := h.Get("X-Custos-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("bad or missing X-Custos-Timestamp %q", ts)
	}
	if age := now.Sub(time.Unix(sec, 0)); age > 5*time.Minute || age < -5*time.Minute {
		return fmt.Errorf("timestamp %s is too far from now", ts)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want := "v1=" + hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(want), []byte(h.Get("X-Custos-Signature"))) {
		return errors.New("signature does not match")
	}
	return nil
}

// The function above is the one docs/webhooks.md shows receivers.
func TestDocumentedSnippetIsTheTestedOne(t *testing.T) {
	src, err := os.ReadFile("webhook_test.go")
	require.NoError(t, err)
	doc, err := os.ReadFile("../../docs/webhooks.md")
	require.NoError(t, err)
	start := strings.Index(string(src), "// verifyCustosWebhook")
	end := start + strings.Index(string(src[start:]), "\n}\n") + 2
	require.Greater(t, end, start)
	assert.Contains(t, string(doc), string(src[start:end]))
}

// receiver records deliveries; status decides the answer per attempt.
type receiver struct {
	mu     sync.Mutex
	got    []delivery
	status func(n int) int
}

type delivery struct {
	header http.Header
	body   []byte
	err    error // what the documented verification said
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got = append(rc.got, delivery{header: r.Header.Clone(), body: body, err: verifyCustosWebhook(secret, r.Header, body, time.Now())})
	n := len(rc.got)
	rc.mu.Unlock()
	status := http.StatusNoContent
	if rc.status != nil {
		status = rc.status(n)
	}
	w.WriteHeader(status)
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

func startReceiver(t *testing.T, status func(n int) int) (*receiver, string) {
	rc := &receiver{status: status}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return rc, srv.URL + "/hook"
}

func pending() notify.Pending {
	payload, _ := json.Marshal(map[string]string{"callId": "w1", "decision": "allow", "by": "you"})
	return notify.Pending{JobID: "job-1", CallID: "w1", Tool: "Write", Summary: "notes.md", Input: json.RawMessage(`{"file_path":"notes.md"}`),
		AskedAt: time.Unix(1_800_000_000, 0).UTC(), Deadline: time.Unix(1_800_000_060, 0).UTC(),
		Answer: notify.HowTo{WorkflowID: "job-1", Update: notify.DecideUpdate, Signal: notify.ApprovalSignal, Payload: payload}}
}

func TestDeliveriesAreSignedAndSayHowToAnswer(t *testing.T) {
	rc, url := startReceiver(t, nil)
	n := New(Config{URLs: []string{url}, Secret: secret})
	ctx := context.Background()
	_, err := n.Pending(ctx, pending())
	require.NoError(t, err)
	require.NoError(t, n.Decided(ctx, notify.Decided{JobID: "job-1", CallID: "w1", Decision: "deny", Answer: "timeout",
		At: time.Unix(1_800_000_060, 0), Refs: map[string]string{"slack": "C1:1.2"}}, ""))
	got := rc.deliveries()
	require.Len(t, got, 2)
	for _, d := range got {
		require.NoError(t, d.err, "the documented verification accepts the delivery")
		assert.Equal(t, "application/json", d.header.Get("Content-Type"))
		assert.Len(t, d.header.Get(HeaderDelivery), 32)
	}
	var p map[string]any
	require.NoError(t, json.Unmarshal(got[0].body, &p))
	assert.Equal(t, "pending", p["event"])
	assert.Equal(t, "pending", got[0].header.Get(HeaderEvent))
	assert.Equal(t, got[0].header.Get(HeaderDelivery), p["delivery"])
	assert.Equal(t, map[string]any{"workflowId": "job-1", "update": "decide", "signal": "approval",
		"payload": map[string]any{"callId": "w1", "decision": "allow", "by": "you"}}, p["answer"])
	var d map[string]any
	require.NoError(t, json.Unmarshal(got[1].body, &d))
	assert.Equal(t, "decided", d["event"])
	assert.Equal(t, "timeout", d["answer"])
	assert.NotContains(t, d, "refs", "other channels' references stay inside")

	// What a forger, a tamperer or a replayer sends is refused by the same check.
	h := got[0].header
	tampered := append([]byte(nil), got[0].body...)
	tampered[len(tampered)-2] ^= 1
	assert.Error(t, verifyCustosWebhook(secret, h, tampered, time.Now()))
	assert.Error(t, verifyCustosWebhook("another secret of some length", h, got[0].body, time.Now()))
	assert.Error(t, verifyCustosWebhook(secret, h, got[0].body, time.Now().Add(6*time.Minute)))
	assert.Error(t, verifyCustosWebhook(secret, http.Header{}, got[0].body, time.Now()))
	// The package's own Verify agrees.
	assert.NoError(t, Verify(secret, h, got[0].body, time.Now(), 5*time.Minute))
	assert.Error(t, Verify(secret, h, tampered, time.Now(), 5*time.Minute))
	assert.Error(t, Verify(secret, h, got[0].body, time.Now().Add(-6*time.Minute), 5*time.Minute))
}

// A 500 fails the delivery (so the activity retries); the retry carries the
// same delivery ID, and a new timestamp and signature.
func TestRetryAfter500(t *testing.T) {
	rc, url := startReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	n := New(Config{URLs: []string{url}, Secret: secret})
	_, err := n.Pending(context.Background(), pending())
	require.ErrorContains(t, err, "500")
	_, err = n.Pending(context.Background(), pending())
	require.NoError(t, err)
	got := rc.deliveries()
	require.Len(t, got, 2)
	assert.Equal(t, got[0].header.Get(HeaderDelivery), got[1].header.Get(HeaderDelivery))
	assert.NoError(t, got[1].err)
}

// With two receivers, a retry caused by one does not resend to the other
// from this process.
func TestRetryResendsOnlyWhatFailed(t *testing.T) {
	good, goodURL := startReceiver(t, nil)
	bad, badURL := startReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusBadGateway
		}
		return http.StatusOK
	})
	n := New(Config{URLs: []string{goodURL, badURL}, Secret: secret})
	_, err := n.Pending(context.Background(), pending())
	require.Error(t, err)
	assert.NotContains(t, err.Error(), goodURL)
	_, err = n.Pending(context.Background(), pending())
	require.NoError(t, err)
	assert.Len(t, good.deliveries(), 1)
	assert.Len(t, bad.deliveries(), 2)
}

func TestDeliveryFailures(t *testing.T) {
	redirect := httptest.NewServer(http.RedirectHandler("http://127.0.0.1:1/elsewhere", http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	block := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-block }))
	t.Cleanup(func() { close(block); slow.Close() })
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	cases := []struct {
		name, url, errHas string
	}{
		{"redirects are not followed", redirect.URL + "/?token=s3cret", "307"},
		{"a slow receiver times out", slow.URL, "Timeout"},
		{"nobody listening", deadURL, "connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := New(Config{URLs: []string{tc.url}, Secret: secret, Timeout: 200 * time.Millisecond})
			_, err := n.Pending(context.Background(), pending())
			require.ErrorContains(t, err, tc.errHas)
			assert.NotContains(t, err.Error(), "s3cret", "query strings stay out of errors")
		})
	}
}

func TestConfigFromEnv(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		enabled bool
		errHas  string
	}{
		{"off", map[string]string{}, false, ""},
		{"on", map[string]string{EnvURLs: "https://a.example/h, http://127.0.0.1:9/x", EnvSecret: secret}, true, ""},
		{"no secret", map[string]string{EnvURLs: "https://a.example/h"}, false, EnvSecret},
		{"short secret", map[string]string{EnvURLs: "https://a.example/h", EnvSecret: "short"}, false, "16"},
		{"not http", map[string]string{EnvURLs: "ftp://a.example/h", EnvSecret: secret}, false, "not an http(s) URL"},
		{"no host", map[string]string{EnvURLs: "https:///h", EnvSecret: secret}, false, "not an http(s) URL"},
		{"credentials in URL", map[string]string{EnvURLs: "https://u:p@a.example/h", EnvSecret: secret}, false, "credentials"},
		{"secret without URLs", map[string]string{EnvSecret: secret}, false, EnvURLs},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, enabled, err := ConfigFromEnv(func(k string) string { return tc.env[k] })
			if tc.errHas != "" {
				require.ErrorContains(t, err, tc.errHas)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.enabled, enabled)
			if enabled {
				assert.Equal(t, []string{"https://a.example/h", "http://127.0.0.1:9/x"}, c.URLs)
			}
		})
	}
}

// A pending delivery's fields for people (summary, reason, preview) show a
// command's escape sequences and invisible characters escaped, whether the
// job sent them rendered or raw; input stays exactly what the tool runs.
func TestDeliveryShowsCommandsEscaped(t *testing.T) {
	const hostile = "echo safe\x1b[2K\rrm -rf ~; printf '\x1b]8;;http://evil.example\x07click\x1b]8;;\x07'; echo \u202eabc; echo a\u200db"
	const shown = "echo safe⟨ESC⟩[2K⟨CR⟩rm -rf ~; printf '⟨ESC⟩]8;;http://evil.example⟨BEL⟩click⟨ESC⟩]8;;⟨BEL⟩'; echo ⟨U+202E⟩abc; echo a⟨U+200D⟩b"
	rc, url := startReceiver(t, nil)
	n := New(Config{URLs: []string{url}, Secret: secret})
	p := pending()
	in, _ := json.Marshal(map[string]string{"command": hostile})
	p.Tool, p.Input, p.Summary, p.Reason = "Bash", in, "Bash: "+hostile, "asks: "+hostile
	p.Preview = "Command:\n  " + shown + "\nCommands:\n  echo ⟨U+202E⟩abc"
	_, err := n.Pending(context.Background(), p)
	require.NoError(t, err)
	require.NoError(t, n.Decided(context.Background(), notify.Decided{JobID: "job-1", CallID: "w1", Summary: "Bash: " + hostile,
		Decision: "deny", Answer: "deny", Reason: "no: " + hostile, At: time.Unix(1_800_000_060, 0)}, ""))
	got := rc.deliveries()
	require.Len(t, got, 2)
	var body map[string]any
	require.NoError(t, json.Unmarshal(got[0].body, &body))
	assert.Equal(t, "Bash: "+shown, body["summary"])
	assert.Equal(t, "asks: "+shown, body["reason"])
	assert.Equal(t, p.Preview, body["preview"], "a rendered preview is left as it is")
	assert.Equal(t, map[string]any{"command": hostile}, body["input"], "input is the tool's, raw")
	require.NoError(t, json.Unmarshal(got[1].body, &body))
	assert.Equal(t, "Bash: "+shown, body["summary"])
	assert.Equal(t, "no: "+shown, body["reason"])
}

// A job's answer and a person's message are delivered as their own events,
// signed like the others, the text's lines kept and what a screen would
// interpret escaped; two messages of the same moment are two deliveries.
func TestConversationEvents(t *testing.T) {
	rc, url := startReceiver(t, nil)
	n := New(Config{URLs: []string{url}, Secret: secret})
	at := time.Unix(1_800_000_100, 0).UTC()
	for _, nt := range []notify.Notice{
		{JobID: "job-1", Workspace: "/ws", Kind: notify.KindAnswer, Text: "Done.\nThe tests pass \x1b[31mnow\x1b[0m.", At: at},
		{JobID: "job-1", Workspace: "/ws", Kind: notify.KindMessage, Text: "approve everything", By: "U0ALICE (alice)", Channel: "slack", At: at},
		{JobID: "job-1", Workspace: "/ws", Kind: notify.KindMessage, Text: "and then push", By: "U0ALICE (alice)", Channel: "slack", At: at},
	} {
		require.NoError(t, n.Notice(context.Background(), nt))
	}
	got := rc.deliveries()
	require.Len(t, got, 3)
	for _, tc := range []struct {
		event string
		want  map[string]any
	}{
		{EventAnswer, map[string]any{"event": "answer", "jobId": "job-1", "workspace": "/ws", "kind": "answer",
			"text": "Done.\nThe tests pass ⟨ESC⟩[31mnow⟨ESC⟩[0m.", "at": "2027-01-15T08:01:40Z"}},
		{EventMessage, map[string]any{"event": "message", "jobId": "job-1", "workspace": "/ws", "kind": "message",
			"text": "approve everything", "by": "U0ALICE (alice)", "channel": "slack", "at": "2027-01-15T08:01:40Z"}},
		{EventMessage, map[string]any{"event": "message", "jobId": "job-1", "workspace": "/ws", "kind": "message",
			"text": "and then push", "by": "U0ALICE (alice)", "channel": "slack", "at": "2027-01-15T08:01:40Z"}},
	} {
		d := got[0]
		got = got[1:]
		require.NoError(t, d.err, "signed as documented")
		assert.Equal(t, tc.event, d.header.Get(HeaderEvent))
		var body map[string]any
		require.NoError(t, json.Unmarshal(d.body, &body))
		assert.Equal(t, d.header.Get(HeaderDelivery), body["delivery"])
		delete(body, "delivery")
		assert.Equal(t, tc.want, body)
	}
	all := rc.deliveries()
	assert.NotEqual(t, all[1].header.Get(HeaderDelivery), all[2].header.Get(HeaderDelivery), "two messages, two deliveries")
}
