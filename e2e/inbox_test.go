package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/notify/slack"
	"github.com/custos-dev/custos/temporalclient"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// inboxScript is the model of the inbox tests: what a job asks for depends
// on the tag in its task; once its calls have results it is done.
func inboxScript(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
	task, results := "", 0
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleTool {
			results++
		}
		if m.Role == openai.ChatMessageRoleUser && task == "" {
			task = m.Content
		}
	}
	write := func(id, file string) openai.ToolCall {
		return demomodel.ToolCall(id, "Write", map[string]any{"file_path": file, "content": "from " + id + "\n"})
	}
	if strings.Contains(task, "[grant") { // [grant] and [grantshot]
		// The same Write twice (the second under the grant the first's
		// answer gave), then a call the grant does not cover.
		switch results {
		case 0, 1:
			return demomodel.Calls(write(fmt.Sprintf("g%d", results+1), "granted.txt")), nil
		case 2:
			return demomodel.Calls(write("g3", "other.txt")), nil
		}
		return demomodel.Say("done"), nil
	}
	if results > 0 {
		return demomodel.Say("done"), nil
	}
	switch {
	case strings.Contains(task, "[quorum]"):
		return demomodel.Calls(write("q-w", "deploy/q.txt")), nil
	case strings.Contains(task, "[batch]"):
		return demomodel.Calls(write("b1", "b1.txt"), write("b2", "b2.txt"), write("b3", "b3.txt")), nil
	case strings.Contains(task, "[shot]"):
		return demomodel.Calls(
			demomodel.ToolCall("e1", "Edit", map[string]any{"file_path": "notes.md", "old_string": "a draft", "new_string": "the final text"}),
			demomodel.ToolCall("x1", "Bash", map[string]any{"command": "go test ./... && curl -s https://example.com/upload -d @notes.md"}),
		), nil
	case strings.Contains(task, "[stale]"):
		return demomodel.Calls(write("stale-w", "stale-w.txt"), write("stale-x", "stale-x.txt")), nil
	case strings.Contains(task, "[many]"):
		var calls []openai.ToolCall
		for i := range 3 {
			calls = append(calls, write(fmt.Sprintf("m%d", i), fmt.Sprintf("m%d.txt", i)))
		}
		return demomodel.Calls(calls...), nil
	}
	tag := task[strings.Index(task, "[")+1 : strings.Index(task, "]")]
	return demomodel.Calls(write(tag+"-w", tag+".txt")), nil
}

// inboxRig is the embedded server with its Web UI, a worker with the
// Slack channel, and the inbox mounted as the worker mounts it.
type inboxRig struct {
	*slackRig
	login string // the inbox's one-time link
}

func startInboxRig(t testing.TB, script demomodel.Handler) *inboxRig {
	t.Helper()
	srv := testenv.StartServer(t, devserver.Options{UIPort: 0})
	c := testenv.Dial(t, srv)
	rig := startSlackRig(t, srv, c, script)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	emb := &temporalclient.Embedded{Server: srv, Client: c}
	require.NoError(t, app.StartInbox(ctx, c, emb, func(string) string { return "" }, testenv.StateDir(), nil, io.Discard, testenv.Logger()))
	require.NotEmpty(t, emb.InboxURL)
	return &inboxRig{slackRig: rig, login: emb.InboxURL}
}

// job starts a job whose task carries tag and returns its ID.
func (r *inboxRig) job(t testing.TB, tag string, timeout time.Duration) string {
	t.Helper()
	id := "inbox-" + tag
	ws := testenv.Workspace(t)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "notes.md"), []byte("# Notes\n\na draft\n"), 0o644))
	task := map[string]string{"shot": "finish the release notes, then check that the tests pass", "many": "add the three test fixtures",
		"grantshot": "keep the changelog up to date"}[tag]
	if task == "" {
		task = "write the notes for " + tag
	}
	testenv.StartJob(t, r.c, id, jobapi.JobInput{Once: true, Task: "[" + tag + "] " + task, Workspace: ws, ApprovalTimeout: timeout})
	return id
}

func callSel(job, call string) string {
	return fmt.Sprintf(`article.call[data-key="%s/%s"]`, job, call)
}

// pollJS waits until the expression is true in the page.
func pollJS(t *testing.T, ctx context.Context, expr string, what string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(90*time.Second)))
	if err != nil {
		log, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#outcomes").textContent`))
		t.Fatalf("waiting for %s (%s): %v; the page's outcomes: %q", what, expr, err, log)
	}
}

// outcomeShown waits for a line in the page's outcome log that holds
// every part.
func outcomeShown(t *testing.T, ctx context.Context, parts ...string) string {
	t.Helper()
	js, _ := json.Marshal(parts)
	pollJS(t, ctx, fmt.Sprintf(`Array.from(document.querySelectorAll("#outcomes li")).some(li => %s.every(p => li.textContent.includes(p)))`, js),
		fmt.Sprintf("an outcome with %q", parts))
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#outcomes")))
	require.NoError(t, err)
	return text
}

// The inbox in a real browser: the worker's one-time link opens it; a call
// answered with a click leaves it and the job goes on; a batch answered
// from the keyboard; a call answered in Slack while the page is open
// leaves by itself; a call whose timer denies it leaves by itself; a stale
// page's click is told it did not count. CUSTOS_INBOX_SCREENSHOT=DIR saves
// docs/inbox.png-style screenshots of the page (desktop and phone width).
func TestInboxInABrowser(t *testing.T) {
	ctx := browser(t)
	rig := startInboxRig(t, inboxScript)
	c := rig.c

	one := rig.job(t, "one", 10*time.Minute)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(rig.login)))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	assert.NotContains(t, loc, "token=", "the token leaves the address bar")
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(callSel(one, "one-w")))))
	card, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(callSel(one, "one-w"))))
	require.NoError(t, err)
	assert.Contains(t, card, "Write one.txt")
	assert.Contains(t, card, "+from one-w", "the Write's diff")
	assert.Contains(t, card, "saves allow rule", "Always names its rule")

	t.Run("one call, one click", func(t *testing.T) {
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(callSel(one, "one-w")+" button.allow"))))
		outcomeShown(t, ctx, "allowed Write one.txt", "via web")
		require.NoError(t, chromedp.Do(ctx, chromedp.WaitNotPresent(chromedp.CSS(callSel(one, "one-w")))))
		testenv.Finished(t, c, one, time.Minute)
		d := testenv.Decisions(testenv.Audit(t, c, one))["one-w"]
		assert.Equal(t, "web", d.Channel)
		assert.Equal(t, "allow", string(d.Decision))
	})

	t.Run("a batch from the keyboard", func(t *testing.T) {
		batch := rig.job(t, "batch", 10*time.Minute)
		for _, call := range []string{"b1", "b2", "b3"} {
			require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(callSel(batch, call)))))
		}
		// A name of one's own (unverified), then: first call, select,
		// next, select, allow both; then deny the last with a reason.
		require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#by"), "carol"),
			chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`),
			chromedp.KeyEvent("j"), chromedp.KeyEvent("x"), chromedp.KeyEvent("j"), chromedp.KeyEvent("x")))
		pollJS(t, ctx, `window.custosInbox.selected().length === 2`, "two calls selected")
		require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent("a")))
		pollJS(t, ctx, `document.querySelectorAll("article.call").length === 1`, "the two answered calls leave")
		require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent("j"), chromedp.KeyEvent("r"),
			chromedp.KeyEvent("not this one"), chromedp.KeyEvent("\r")))
		outcomeShown(t, ctx, "denied Write", "by carol via web")
		pollJS(t, ctx, `document.querySelectorAll("article.call").length === 0`, "the batch leaves")
		testenv.Finished(t, c, batch, time.Minute)
		got := map[string]int{}
		for _, d := range testenv.Decisions(testenv.Audit(t, c, batch)) {
			assert.Equal(t, "carol", d.Approver)
			assert.Equal(t, "web", d.Channel)
			got[string(d.Decision)]++
			if d.Decision == "deny" {
				assert.Contains(t, d.Reason, "not this one")
			}
		}
		assert.Equal(t, map[string]int{"allow": 2, "deny": 1}, got)
	})

	t.Run("answered in Slack while the page is open", func(t *testing.T) {
		sl := rig.job(t, "slack", 10*time.Minute)
		require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(callSel(sl, "slack-w")))))
		code, _ := rig.click(t, rig.message(t, "slack-w"), slack.ActionAllow, alice, slackSecret, time.Now())
		require.Equal(t, 200, code)
		require.NoError(t, chromedp.Do(ctx, chromedp.WaitNotPresent(chromedp.CSS(callSel(sl, "slack-w")))), "the call leaves the page by itself")
		testenv.Finished(t, c, sl, time.Minute)
		assert.Equal(t, "slack", testenv.Decisions(testenv.Audit(t, c, sl))["slack-w"].Channel)
	})

	t.Run("the timer denies", func(t *testing.T) {
		late := rig.job(t, "late", 6*time.Second)
		require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(callSel(late, "late-w")))))
		pollJS(t, ctx, fmt.Sprintf(`(document.querySelector(%q) || {textContent: "timing out"}).textContent.includes("denied in")`, callSel(late, "late-w")+" .deadline"), "the countdown")
		require.NoError(t, chromedp.Do(ctx, chromedp.WaitNotPresent(chromedp.CSS(callSel(late, "late-w")))), "a timed-out call leaves by itself")
		testenv.Finished(t, c, late, time.Minute)
	})

	t.Run("a stale page's click does not count", func(t *testing.T) {
		stale := rig.job(t, "stale", 10*time.Minute)
		for _, call := range []string{"stale-w", "stale-x"} {
			require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(callSel(stale, call)))))
		}
		// The page stops following (a laptop asleep, a lost connection);
		// the calls are answered elsewhere.
		require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.custosInbox.stop()`)))
		elsewhere := func(call string) {
			_, err := c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: stale, UpdateName: jobapi.DecideUpdate,
				Args:         []any{jobapi.ApprovalDecision{CallID: call, Decision: "deny", By: "bob", Channel: "slack"}},
				WaitForStage: client.WorkflowUpdateStageCompleted})
			require.NoError(t, err)
		}
		// The job still runs (its other call waits): the job's own words.
		elsewhere("stale-w")
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(callSel(stale, "stale-w")+" button.allow"))))
		text := outcomeShown(t, ctx, "did not count: not applied: already denied by bob via slack at")
		assert.NotContains(t, text, "allowed Write stale-w.txt")
		pollJS(t, ctx, fmt.Sprintf(`document.querySelector(%q).classList.contains("stale")`, callSel(stale, "stale-w")), "the call marked stale")
		// The job has ended: its audit says how the call went.
		elsewhere("stale-x")
		testenv.Finished(t, c, stale, time.Minute)
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(callSel(stale, "stale-x")+" button.allow"))))
		outcomeShown(t, ctx, "did not count: not applied: already denied by bob via slack at", "the job has ended")
		for call, d := range testenv.Decisions(testenv.Audit(t, c, stale)) {
			assert.Equal(t, "deny", string(d.Decision), "%s: the first answer stands", call)
		}
	})

	t.Run("allow for a while, then revoke", func(t *testing.T) { grantInBrowser(t, ctx, rig) })

	t.Run("at phone width", func(t *testing.T) { screenshots(t, ctx, rig, os.Getenv("CUSTOS_INBOX_SCREENSHOT")) })
}

// grantInBrowser: "Allow for…" 30 minutes in this job gives a grant the
// next same call runs under without asking; the job's live grant is
// listed with a Revoke button, which ends it.
func grantInBrowser(t *testing.T, ctx context.Context, rig *inboxRig) {
	c := rig.c
	g := rig.job(t, "grant", 10*time.Minute)
	// A fresh page: the stale one stopped following.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(strings.Split(rig.login, "?")[0]),
		chromedp.WaitVisible(chromedp.CSS(callSel(g, "g1")))))
	require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(callSel(g, "g1")+" .grant-for"), "30m"),
		chromedp.SetValue(chromedp.CSS(callSel(g, "g1")+" .grant-scope"), "job"),
		chromedp.Click(chromedp.CSS(callSel(g, "g1")+" button.grant"))))
	text := outcomeShown(t, ctx, "allowed Write granted.txt")
	assert.Contains(t, text, "; granted Write(granted.txt) in this job until")
	// g2 runs under the grant; g3 waits, and the grant is listed.
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(callSel(g, "g3")))))
	assert.NotContains(t, rig.pageText(t, ctx), "Write granted.txt", "g2 never asked")
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`button.revoke[data-job="`+g+`"]`))))
	listed, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(fmt.Sprintf(`section.job[data-job=%q] .grants`, g))))
	require.NoError(t, err)
	assert.Contains(t, listed, "Write(granted.txt)")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button.revoke[data-job="`+g+`"]`))))
	outcomeShown(t, ctx, "revoked grant")
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitNotPresent(chromedp.CSS(`button.revoke[data-job="`+g+`"]`))), "a revoked grant leaves the list")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(callSel(g, "g3")+" button.deny"))))
	testenv.Finished(t, c, g, time.Minute)
	d := testenv.Decisions(testenv.Audit(t, c, g))
	assert.Equal(t, "allow", string(d["g2"].Decision), "the grant allowed g2")
	assert.Equal(t, "grant", d["g2"].Channel, "nobody was asked about g2: the grant answered")
	assert.Equal(t, "carol", d["g2"].Approver, "in the name of who gave it")
}

func (r *inboxRig) pageText(t *testing.T, ctx context.Context) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#list")))
	require.NoError(t, err)
	return s
}

// screenshots reload the page with a few jobs waiting and, when dir is
// set, save it at desktop and at phone width; at phone width nothing is
// wider than the screen.
func screenshots(t *testing.T, ctx context.Context, rig *inboxRig, dir string) {
	s := rig.job(t, "shot", 10*time.Minute)
	m := rig.job(t, "many", 10*time.Minute)
	// A job with a live grant (given in Slack) and a call it does not cover.
	gs := rig.job(t, "grantshot", 10*time.Minute)
	testenv.WaitPending(t, rig.c, gs, "g1", pendingWait)
	_, err := rig.c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: gs, UpdateName: jobapi.DecideUpdate,
		Args: []any{jobapi.ApprovalDecision{CallID: "g1", Decision: "allow", By: "alice", Channel: "slack",
			Grant: &jobapi.GrantSpec{Scope: "job", For: "1h"}}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(strings.Split(rig.login, "?")[0]),
		chromedp.WaitVisible(chromedp.CSS(callSel(s, "x1"))), chromedp.WaitVisible(chromedp.CSS(callSel(m, "m2"))),
		chromedp.WaitVisible(chromedp.CSS(callSel(gs, "g3"))), chromedp.WaitVisible(chromedp.CSS(`button.revoke[data-job="`+gs+`"]`)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#by").value = "alice"`),
		chromedp.KeyEvent("j"), chromedp.KeyEvent("j"), chromedp.KeyEvent("x"),
		chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`), chromedp.Sleep(300*time.Millisecond)))
	save := func(name string, shot chromedp.Action[[]byte]) {
		if dir == "" {
			return
		}
		buf, err := chromedp.Run(ctx, shot)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), buf, 0o644))
	}
	// The whole page in one viewport, so the sticky bars sit where a
	// person sees them.
	height, err := chromedp.Run(ctx, chromedp.Evaluate[int64](`document.documentElement.scrollHeight`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1400, height), chromedp.Sleep(300*time.Millisecond)))
	save("inbox.png", chromedp.CaptureScreenshot())
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)), chromedp.Sleep(500*time.Millisecond)))
	wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`))
	require.NoError(t, err)
	assert.True(t, wide, "at phone width the page fits the screen")
	save("inbox-phone.png", chromedp.CaptureScreenshot())
}

// waitLine waits for the first line of the worker's log that matches re
// and returns its first group.
func waitLine(t *testing.T, w *workerProc, re *regexp.Regexp) string {
	t.Helper()
	var found string
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(w.log.Name())
		if m := re.FindSubmatch(b); m != nil {
			found = string(m[1])
			return true
		}
		return false
	}, pendingWait, 100*time.Millisecond, "no line matching %s in the worker's output", re)
	return found
}

// getPage fetches u in a fresh cookie jar and returns the status and body.
func getPage(t *testing.T, u string) (int, string) {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	res, err := (&http.Client{Jar: jar, Timeout: 30 * time.Second}).Get(u)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

// The worker binary prints the inbox's one-time link on a line of its own
// beside the Web UI's; the link opens the page once; `starter inbox-url`
// mints another. A deployed worker serves the inbox only with an address
// and tokens, names the person by the token, and refuses a network
// address without TLS.
func TestWorkerServesTheInbox(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the worker and starter binaries")
	}
	bin := buildWorker(t)
	_, base := testenv.StartModel(t, inboxScript)

	t.Run("embedded", func(t *testing.T) {
		if usingExternalServer() {
			t.Skip("the worker's own embedded server is under test")
		}
		state := t.TempDir()
		env := append(testenv.ModelEnv(base), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_STATE_HOME="+state, "TEMPORAL_ADDRESS=")
		w := startWorkerProc(t, bin, env, "--db", filepath.Join(state, "custos", "temporal.db"),
			"--port", fmt.Sprint(freePort(t)), "--ui-port", fmt.Sprint(freePort(t)))
		ui := waitLine(t, w, regexp.MustCompile(`(?m)^custos: Web UI: (\S+)$`))
		link := waitLine(t, w, regexp.MustCompile(`(?m)^custos: approval inbox: (\S+)$`))
		assert.True(t, strings.HasPrefix(link, strings.Split(ui, "/?")[0]+"/custos/?token="), "the inbox is on the Web UI's address: %s", link)
		code, body := getPage(t, link)
		require.Equal(t, http.StatusOK, code, body)
		assert.Contains(t, body, "<title>custos inbox</title>")
		code, body = getPage(t, link)
		assert.Equal(t, http.StatusUnauthorized, code, "a used link: %s", body)
		assert.Contains(t, body, "starter inbox-url")

		mint := exec.Command(buildStarter(t), "inbox-url")
		mint.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
		out, err := mint.CombinedOutput()
		require.NoError(t, err, "%s", out)
		minted := strings.TrimSpace(string(out))
		assert.Contains(t, minted, "/custos/?token=")
		code, body = getPage(t, minted)
		assert.Equal(t, http.StatusOK, code, body)
	})

	t.Run("deployed", func(t *testing.T) {
		srv := startServer(t, "")
		const token = "tok-alice-0123456789abcdefghijklmnopqrstuvwxyz"
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		// Writes under deploy/ need one approval by alice: the person the
		// inbox's token names, whose answers it vouches for.
		config := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(config, "custos"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(config, "custos", "settings.json"),
			[]byte(`{"approvals": [{"rule": "Write(deploy/**)", "require": 1, "from": ["alice"]}]}`), 0o600))
		env := append(workerEnv(srv, base, config), "CUSTOS_INBOX_ADDR="+addr, "CUSTOS_INBOX_TOKENS=alice="+token)
		w := startWorkerProc(t, bin, env)
		link := waitLine(t, w, regexp.MustCompile(`(?m)^custos: approval inbox: (\S+)`))
		assert.Equal(t, "http://"+addr+"/custos/?token=…", link, "the banner never prints a token")
		code, body := getPage(t, "http://"+addr+"/custos/")
		assert.Equal(t, http.StatusUnauthorized, code, body)
		code, body = getPage(t, "http://"+addr+"/custos/?token="+token)
		require.Equal(t, http.StatusOK, code, body)
		assert.Contains(t, body, `value="alice"`)
		assert.Contains(t, body, "the name your token carries")

		// An answer from the page goes in the token's name.
		c := testenv.Dial(t, srv)
		ws := testenv.Workspace(t)
		testenv.StartJob(t, c, "inbox-deployed", jobapi.JobInput{Once: true, Task: "[dep] write it", Workspace: ws, ApprovalTimeout: 10 * time.Minute})
		testenv.WaitPending(t, c, "inbox-deployed", "dep-w", pendingWait)
		answer := loginInbox(t, "http://"+addr+"/custos/?token="+token).allow(t, "inbox-deployed", "dep-w")
		assert.Contains(t, answer, "by alice via web")
		testenv.Finished(t, c, "inbox-deployed", time.Minute)
		assert.Equal(t, "alice", testenv.Decisions(testenv.Audit(t, c, "inbox-deployed"))["dep-w"].Approver)

		// A call that needs alice's verified approval: the page's answer counts.
		testenv.StartJob(t, c, "inbox-quorum", jobapi.JobInput{Once: true, Task: "[quorum] deploy", Workspace: ws, ApprovalTimeout: 10 * time.Minute})
		testenv.WaitPending(t, c, "inbox-quorum", "q-w", pendingWait)
		answer = loginInbox(t, "http://"+addr+"/custos/?token="+token).allow(t, "inbox-quorum", "q-w")
		assert.Contains(t, answer, "allowed Write deploy/q.txt, by alice via web")
		testenv.Finished(t, c, "inbox-quorum", time.Minute)
		var votes []string
		for _, r := range testenv.Audit(t, c, "inbox-quorum") {
			if r.Event == "approval-vote" {
				votes = append(votes, r.Approver+" via "+r.Channel)
			}
		}
		assert.Equal(t, []string{"alice via web"}, votes, "the inbox vouched for alice")

		open := append(workerEnv(srv, base, t.TempDir()), "CUSTOS_INBOX_ADDR=0.0.0.0:0", "CUSTOS_INBOX_TOKENS=alice="+token)
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), open...)
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "a worker asked to serve the inbox in clear text on the network does not start")
		assert.Contains(t, string(out), "not a loopback address and no TLS certificate")
		assert.NotContains(t, string(out), token)
	})
}
