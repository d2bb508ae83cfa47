package inbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/workflows/jobapi"
)

// The message Update itself, against a real conversing job, is tested in
// e2e (TestInboxMessages). These tests cover what the page refuses before
// any Update is sent, and the words it says; their handler has no
// Temporal client, so anything that tried to send one would fail the test.

// offlineHandler is the page's handler with no Temporal client, served.
func offlineHandler(t *testing.T) (*Handler, string) {
	h, err := NewHandler(NewCollector(nil, 0, 0, nil), nil, Options{SessionCookie: "sess"})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv.URL
}

// postMessage POSTs body to the page's message endpoint as the page does
// (its session's cookie and token, same origin) unless token is "-".
func postMessage(t *testing.T, h *Handler, url, body, token string) (int, []Outcome) {
	t.Helper()
	page := httptest.NewRequest(http.MethodGet, "/custos/", nil)
	page.AddCookie(&http.Cookie{Name: "sess", Value: "one"})
	req, err := http.NewRequest(http.MethodPost, url+"/custos/message", strings.NewReader(body))
	require.NoError(t, err)
	req.AddCookie(&http.Cookie{Name: "sess", Value: "one"})
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if token != "-" {
		req.Header.Set(csrfHeader, h.csrfToken(page))
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var out struct{ Outcomes []Outcome }
	if res.StatusCode == http.StatusOK {
		require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	}
	return res.StatusCode, out.Outcomes
}

// What the page cannot send is refused before it reaches a job: without
// the page's token, nothing; a malformed request; an empty or oversized
// message or ID, with an outcome that says why.
func TestMessageRefusedBeforeTheJob(t *testing.T) {
	h, url := offlineHandler(t)
	for _, tc := range []struct {
		name   string
		body   string
		token  string
		status int
		text   string
	}{
		{"without the page's token", `{"job":"job-1","text":"hi"}`, "-", http.StatusForbidden, ""},
		{"no job", `{"text":"hi"}`, "", http.StatusBadRequest, ""},
		{"an empty message", `{"job":"job-1","text":"  \n"}`, "", http.StatusOK, "not sent: the message is empty"},
		{"too long", `{"job":"job-1","text":"` + strings.Repeat("x", jobapi.MaxMessageBytes+1) + `"}`, "", http.StatusOK,
			"not sent: the message has 65537 bytes, more than a job takes (65536)"},
		{"a malformed ID", `{"job":"job-1","text":"hi","id":"` + strings.Repeat("i", maxMessageID+1) + `"}`, "", http.StatusOK,
			"not sent: malformed message ID"},
	} {
		status, out := postMessage(t, h, url, tc.body, tc.token)
		require.Equal(t, tc.status, status, tc.name)
		if tc.text == "" {
			assert.Empty(t, out, tc.name)
			continue
		}
		require.Len(t, out, 1, tc.name)
		assert.False(t, out[0].Applied, tc.name)
		assert.Equal(t, tc.text, out[0].Text, tc.name)
	}
}

// What the page says became of a message, from the Update's result or
// error.
func TestMessageWords(t *testing.T) {
	for _, tc := range []struct {
		res  jobapi.MessageResult
		want string
	}{
		{jobapi.MessageResult{Seq: 2, Delivery: "next", Queued: 1}, "message 2 to job job-1, by carol via inbox: delivered; the job works on it now"},
		{jobapi.MessageResult{Seq: 5, Delivery: "queued", Queued: 2}, "message 5 to job job-1, by carol via inbox: queued; the job reads it after what it runs now (2 waiting)"},
		{jobapi.MessageResult{Seq: 5, Delivery: "duplicate"}, "message 5 to job job-1, by carol via inbox: already received, counted once"},
	} {
		assert.Equal(t, tc.want, messageText("job-1", "carol", tc.res), tc.res.Delivery)
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{serviceerror.NewNotFound("workflow execution already completed"), "not delivered: job job-1 has ended"},
		{temporal.NewApplicationError("not applied: the job has ended", "NotApplied"), "not applied: the job has ended"},
		{errors.New("connection refused"), "not delivered: could not reach the job: connection refused"},
	} {
		assert.Equal(t, tc.want, messageRefusal(tc.err, "job-1"), tc.err.Error())
	}
}

// Jobs that answered and wait for the next message are listed, with their
// last answer (escaped, its lines kept) and a message box; every listed
// job has one.
func TestRenderJobsWaitingForAMessage(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, RenderList(&b, snapshotOf(
		Job{ID: "job-1", Task: "fix it", State: jobapi.PhaseWaitingMessage, LastAnswer: "Fixed <b>it</b>.\nTests pass \x1b[32mgreen\x1b[0m."},
		Job{ID: "job-2", Task: "other", Calls: []jobapi.PendingAsk{{CallID: "c1", Tool: "Read", Deadline: t0}}},
	), t0))
	html := b.String()
	for _, w := range []string{"waits for your message", "last answer:", "Fixed &lt;b&gt;it&lt;/b&gt;.\nTests pass ⟨ESC⟩[32mgreen⟨ESC⟩[0m.",
		`<div class="messagebox" data-job="job-1">`, `<div class="messagebox" data-job="job-2">`} {
		assert.Contains(t, html, w)
	}
	assert.NotContains(t, html, "<b>it</b>")
	assert.NotContains(t, html, "Nothing waits for you.")
	assert.Equal(t, 1, strings.Count(html, "waits for your message"), "only the job that waits for one")
}

// The page lists a job that waits for its next message, as it lists a
// job with waiting calls or live grants; a job at work is not listed.
func TestListedJobs(t *testing.T) {
	for _, tc := range []struct {
		job  Job
		want bool
	}{
		{Job{ID: "waits", State: jobapi.PhaseWaitingMessage}, true},
		{Job{ID: "working", State: "thinking"}, false},
		{Job{ID: "asks", Calls: []jobapi.PendingAsk{{CallID: "c"}}}, true},
		{Job{ID: "grants", Grants: []jobapi.Grant{{ID: "g1"}}}, true},
	} {
		assert.Equal(t, tc.want, listed(tc.job), tc.job.ID)
	}
}
