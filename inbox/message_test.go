package inbox

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/custos-dev/custos/internal/frontendtest"
	"github.com/custos-dev/custos/workflows"
)

// messageFrontend answers the message Update as a job would: job-1 waits
// for a message, job-2 works (the message queues), any other has ended.
func messageFrontend(t *testing.T) *frontendtest.Frontend {
	return frontendtest.Start(t, func(c frontendtest.Call) (any, error) {
		var m workflows.Message
		if err := json.Unmarshal(c.Arg, &m); err != nil {
			return nil, err
		}
		switch c.Workflow {
		case "job-1":
			return workflows.MessageResult{ID: m.ID, Seq: 2, Delivery: "next", Queued: 1}, nil
		case "job-2":
			return workflows.MessageResult{ID: m.ID, Seq: 5, Delivery: "queued", Queued: 2}, nil
		}
		return nil, serviceerror.NewNotFound("workflow execution already completed")
	}, func(frontendtest.Call) (any, error) {
		return workflows.Status{Task: "fix it", State: workflows.PhaseWaitingMessage, LastAnswer: "Fixed."}, nil
	})
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

// A message typed on the page is the job's message Update, from the
// page's person, channel inbox; the page says what became of it. What the
// page cannot send is refused before it reaches the job.
func TestMessageFromThePage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		identify func(*http.Request) (string, bool)
		body     string
		sent     *workflows.Message
		applied  bool
		text     string
	}{
		{"a typed name", nil, `{"job":"job-1","text":"approve everything, then push","by":"carol","id":"m-1"}`,
			&workflows.Message{Text: "approve everything, then push", ID: "inbox:m-1", By: "carol", Channel: "inbox"}, true,
			"message 2 to job job-1, by carol via inbox: delivered; the job works on it now"},
		{"the token's name wins over a typed one", func(*http.Request) (string, bool) { return "alice", true },
			`{"job":"job-2","text":"also the docs","by":"mallory"}`,
			&workflows.Message{Text: "also the docs", By: "alice", Channel: "inbox"}, true,
			"message 5 to job job-2, by alice via inbox: queued; the job reads it after what it runs now (2 waiting)"},
		{"an ended job", nil, `{"job":"job-9","text":"hello"}`,
			&workflows.Message{Text: "hello", By: "someone", Channel: "inbox"}, false, "not delivered: job job-9 has ended"},
		{"an empty message", nil, `{"job":"job-1","text":"  \n"}`, nil, false, "not sent: the message is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := messageFrontend(t)
			h, err := NewHandler(NewCollector(nil, 0, 0, nil), f.Client, Options{SessionCookie: "sess", Identify: tc.identify})
			require.NoError(t, err)
			srv := httptest.NewServer(h)
			defer srv.Close()
			status, out := postMessage(t, h, srv.URL, tc.body, "")
			require.Equal(t, http.StatusOK, status)
			require.Len(t, out, 1)
			assert.Equal(t, tc.applied, out[0].Applied)
			assert.Equal(t, tc.text, out[0].Text)
			up := f.Updates()
			if tc.sent == nil {
				assert.Empty(t, up)
				return
			}
			require.Len(t, up, 1)
			assert.Equal(t, workflows.MessageUpdate, up[0].Name, "a message, never an answer")
			var got workflows.Message
			require.NoError(t, json.Unmarshal(up[0].Arg, &got))
			assert.Equal(t, *tc.sent, got)
		})
	}
}

// The message endpoint has the answers' protections: without the page's
// token nothing is sent.
func TestMessageNeedsTheSessionsToken(t *testing.T) {
	f := messageFrontend(t)
	h, err := NewHandler(NewCollector(nil, 0, 0, nil), f.Client, Options{SessionCookie: "sess"})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	status, _ := postMessage(t, h, srv.URL, `{"job":"job-1","text":"hi"}`, "-")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Empty(t, f.Updates())
}

// Jobs that answered and wait for the next message are listed, with their
// last answer (escaped, its lines kept) and a message box; every listed
// job has one.
func TestRenderJobsWaitingForAMessage(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, RenderList(&b, snapshotOf(
		Job{ID: "job-1", Task: "fix it", State: workflows.PhaseWaitingMessage, LastAnswer: "Fixed <b>it</b>.\nTests pass \x1b[32mgreen\x1b[0m."},
		Job{ID: "job-2", Task: "other", Calls: []workflows.PendingAsk{{CallID: "c1", Tool: "Read", Deadline: t0}}},
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

// The collector keeps a job that waits for its next message, with its
// state and last answer read from the status query.
func TestCollectorListsJobsWaitingForAMessage(t *testing.T) {
	f := messageFrontend(t)
	k := NewCollector(f.Client, 0, 0, nil)
	j := k.job(context.Background(), RunningJob{ID: "job-1"})
	require.NotNil(t, j)
	assert.Equal(t, workflows.PhaseWaitingMessage, j.State)
	assert.Equal(t, "Fixed.", j.LastAnswer)
	for _, tc := range []struct {
		job  Job
		want bool
	}{
		{*j, true},
		{Job{ID: "working", State: "thinking"}, false},
		{Job{ID: "asks", Calls: []workflows.PendingAsk{{CallID: "c"}}}, true},
		{Job{ID: "grants", Grants: []workflows.Grant{{ID: "g1"}}}, true},
	} {
		assert.Equal(t, tc.want, listed(tc.job), tc.job.ID)
	}
}
