package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/inbox"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// inboxToken is alice's inbox token: the page names her by it.
const inboxToken = "tok-alice-0123456789abcdefghijklmnopqrstuvwxyz"

// markupAnswer is the answer of the inbox's conversing job: markup and an
// escape sequence the page must show as text.
const markupAnswer = "Fixed <b>it</b>.\nTests pass \x1b[32mgreen\x1b[0m."

// startMessageInbox serves the inbox as a deployed worker does (its own
// loopback address, free port, people named by their tokens) beside
// workers whose model answers every turn with markupAnswer, and returns
// the model and a logged-in session of alice's.
func startMessageInbox(t *testing.T, c client.Client) (*demomodel.Server, *inboxClient) {
	t.Helper()
	model, base := testenv.StartModel(t, func(openai.ChatCompletionRequest) (demomodel.Reply, error) {
		return demomodel.Say(markupAnswer), nil
	})
	testenv.StartWorkers(t, c, base, app.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	env := map[string]string{inbox.EnvAddr: "127.0.0.1:0", inbox.EnvTokens: "alice=" + inboxToken}
	var banner bytes.Buffer
	require.NoError(t, app.StartInbox(ctx, c, nil, func(k string) string { return env[k] }, testenv.StateDir(), nil, &banner, testenv.Logger()))
	m := regexp.MustCompile(`approval inbox: (http://127\.0\.0\.1:\d+/custos/)\?token=`).FindStringSubmatch(banner.String())
	require.NotNil(t, m, "the banner names the inbox's address: %s", banner.String())
	return model, loginInbox(t, m[1]+"?token="+inboxToken)
}

// message POSTs body to the page's message endpoint as the page's
// message box does, with the page's CSRF token unless csrf is false, and
// returns the status and the one outcome (zero unless 200).
func (ic *inboxClient) message(t testing.TB, body string, csrf bool) (int, inbox.Outcome) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ic.base+ic.prefix+"message", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", ic.base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if csrf {
		req.Header.Set("X-Custos-CSRF", ic.csrf)
	}
	res, err := ic.http.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var out struct{ Outcomes []inbox.Outcome }
	if res.StatusCode != http.StatusOK {
		return res.StatusCode, inbox.Outcome{}
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	require.Len(t, out.Outcomes, 1)
	return res.StatusCode, out.Outcomes[0]
}

// list is the page's list of jobs, as the page polls it.
func (ic *inboxClient) list(t testing.TB) string {
	t.Helper()
	res, err := ic.http.Get(ic.base + ic.prefix + "list")
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", b)
	return string(b)
}

// The inbox's message box against a real conversing job: a job waiting
// for its next message is listed with its last answer (escaped); a
// message from the page reaches the job and the model in the name of the
// page's person, channel inbox, whatever name was typed; without the
// page's token nothing is sent; an empty message is refused; once the job
// has ended the page says so.
func TestInboxMessages(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	model, page := startMessageInbox(t, c)
	const job = "inbox-talk"
	testenv.StartJob(t, c, job, jobapi.JobInput{Task: "fix it", Workspace: testenv.Workspace(t), ApprovalTimeout: 10 * time.Minute})
	waitState(t, c, job, jobapi.PhaseWaitingMessage)

	var list string
	require.Eventually(t, func() bool {
		list = page.list(t)
		return strings.Contains(list, `data-job="`+job+`"`) && strings.Contains(list, "waits for your message")
	}, pendingWait, 100*time.Millisecond, "the job waiting for a message is never listed")
	assert.Contains(t, list, "last answer:")
	assert.Contains(t, list, "Fixed &lt;b&gt;it&lt;/b&gt;.\nTests pass ⟨ESC⟩[32mgreen⟨ESC⟩[0m.")
	assert.NotContains(t, list, "<b>it</b>", "the answer's markup is text")
	assert.NotContains(t, list, "\x1b")
	assert.Contains(t, list, `<div class="messagebox" data-job="`+job+`">`)

	for _, tc := range []struct {
		name    string
		body    string
		csrf    bool
		status  int
		applied bool
		text    string
	}{
		{"without the page's token", `{"job":"inbox-talk","text":"from a forged form"}`, false, http.StatusForbidden, false, ""},
		{"an empty message", `{"job":"inbox-talk","text":"  \n"}`, true, http.StatusOK, false, "not sent: the message is empty"},
		{"from the token's person, whatever name was typed", `{"job":"inbox-talk","text":"approve everything, then push","by":"mallory","id":"m-1"}`,
			true, http.StatusOK, true, "message 2 to job inbox-talk, by alice via inbox: delivered; the job works on it now"},
		{"sent twice", `{"job":"inbox-talk","text":"approve everything, then push","by":"mallory","id":"m-1"}`,
			true, http.StatusOK, true, "by alice via inbox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, o := page.message(t, tc.body, tc.csrf)
			require.Equal(t, tc.status, status)
			assert.Equal(t, tc.applied, o.Applied)
			assert.Contains(t, o.Text, tc.text)
		})
	}
	want := []string{"message alice/inbox: approve everything, then push"}
	assert.Equal(t, want, auditedMessages(t, c, job), "one message, alice's, counted once; the refused requests never reached the job")
	require.Eventually(t, func() bool { return modelSaw(model, "approve everything, then push") }, pendingWait, 20*time.Millisecond)
	assert.Empty(t, modelSawAny(model, "from a forged form", "  \n"))
	st := waitState(t, c, job, jobapi.PhaseWaitingMessage)
	assert.Equal(t, 2, st.Messages)

	_, err := c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: job, UpdateName: jobapi.EndUpdate,
		Args: []any{jobapi.End{By: "test", Channel: "test"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	testenv.Finished(t, c, job, time.Minute)
	status, o := page.message(t, `{"job":"inbox-talk","text":"one more thing"}`, true)
	require.Equal(t, http.StatusOK, status)
	assert.False(t, o.Applied)
	assert.Equal(t, "not delivered: job inbox-talk has ended", o.Text)
	assert.Equal(t, want, auditedMessages(t, c, job))
}
