package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// chromium finds Debian's browser; .ci/run installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium on PATH: .ci/run installs it")
	}
	t.Skip("no chromium on PATH (apt-get install chromium)")
	return ""
}

func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // root in CI; the page is our own loopback UI
		chromedp.WindowSize(1400, 1000),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		switch e := ev.(type) {
		case *network.EventResponseReceived:
			if e.Response.Status >= 400 { // shown when a test fails
				t.Logf("browser: %d %s", e.Response.Status, e.Response.URL)
			}
		case *cdpruntime.EventConsoleAPICalled:
			if e.Type == cdpruntime.ConsoleAPICalledTypeError {
				for _, a := range e.Args {
					t.Logf("browser console error: %s", a.Value)
				}
			}
		}
	}))
	ctx, cancelC := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelC(); cancelB(); cancelA() })
	return ctx
}

func shot(t *testing.T, ctx context.Context, name string) {
	dir := os.Getenv("CUSTOS_SHOTS")
	if dir == "" {
		return
	}
	if buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		_ = os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644)
	}
}

// A person in a real browser opens the embedded Web UI, finds the pending
// call (and its diff) in the job's Current Details, answers with the UI's
// own Update form, and the job goes on; afterwards the details show the
// call as decided, not pending. CUSTOS_SHOTS=DIR keeps screenshots.
func TestWebUIAnswersPendingCall(t *testing.T) {
	ctx := browser(t)
	srv := testenv.StartServer(t, devserver.Options{DBFile: filepath.Join(t.TempDir(), "t.db"), UIPort: 0})
	c := testenv.Dial(t, srv)
	_, base := testenv.StartModel(t, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Edit", map[string]any{"file_path": "notes.md", "old_string": "draft", "new_string": "final"})),
		demomodel.Say("done"),
	))
	testenv.StartWorkers(t, c, base, app.Options{})
	ws := testenv.Workspace(t)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "notes.md"), []byte("a draft\n"), 0o644))
	run := testenv.StartJob(t, c, "webui-job", jobapi.JobInput{Once: true, Task: "finish the notes", Workspace: ws, ApprovalTimeout: 10 * time.Minute})
	testenv.WaitPending(t, c, run.GetID(), "w1", pendingWait)

	// The one-time link the worker prints lets this browser in.
	url := srv.UIAddr() + "/namespaces/default/workflows/" + run.GetID()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.UILoginURL()), chromedp.Sleep(time.Second),
		chromedp.Navigate(url), chromedp.Sleep(5*time.Second)))
	shot(t, ctx, "1-workflow")
	clickText(t, ctx, "User Metadata")
	shot(t, ctx, "2-metadata")
	before := currentDetails(t, ctx)
	assert.Contains(t, before, "Waiting for approval (1)")
	assert.Contains(t, before, "Edit notes.md — call w1")
	assert.Contains(t, before, "--- a/notes.md\n+++ b/notes.md\n@@ -1 +1 @@\n-a draft\n+a final", "the diff preview")
	clickText(t, ctx, "More Actions")
	shot(t, ctx, "3-actions")
	clickText(t, ctx, "Send an Update")
	shot(t, ctx, "4-update-form")
	markVisible(t, ctx, "dialog[open] [data-menu-anchor=update-select-select] button", "")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-custos-target]`)), chromedp.Sleep(500*time.Millisecond)))
	shot(t, ctx, "4b-select")
	markVisible(t, ctx, "dialog[open] li[role=option]", "decide")
	desc, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-custos-target]`)))
	require.NoError(t, err)
	assert.Contains(t, desc, "Answer a tool call waiting for approval and get its final decision", "the UI lists the Update with its description")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-custos-target]`)), chromedp.Sleep(500*time.Millisecond)))
	markVisible(t, ctx, "dialog[open] .cm-content[aria-label=Data]", "")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-custos-target]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-custos-target]`), `{"callId": "w1", "decision": "allow", "by": "browser", "channel": "web-ui"`),
		chromedp.Sleep(500*time.Millisecond)))
	shot(t, ctx, "5-filled")
	// Leaving the editor reformats the JSON and moves the buttons: leave
	// it first, then click Submit where it now is.
	markVisible(t, ctx, "dialog[open] h2, dialog[open] h3, dialog[open] label", "Name")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-custos-target]`)), chromedp.Sleep(time.Second)))
	markVisible(t, ctx, "dialog[open] button", "Submit")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-custos-target]`)), chromedp.Sleep(time.Second)))
	shot(t, ctx, "6-submitted")

	testenv.Finished(t, c, run.GetID(), time.Minute, "the job goes on after the answer sent from the UI")
	b, err := os.ReadFile(filepath.Join(ws, "notes.md"))
	require.NoError(t, err)
	assert.Equal(t, "a final\n", string(b))
	recs, err := activities.ReadAudit(testenv.JobFiles(t, c, run.GetID()).Audit)
	require.NoError(t, err)
	assert.Equal(t, "browser", testenv.Decisions(recs)["w1"].Approver)
	assert.Equal(t, "web-ui", testenv.Decisions(recs)["w1"].Channel)

	// After the decision the details show the call as decided, not pending.
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload(), chromedp.Sleep(2*time.Second)))
	clickText(t, ctx, "User Metadata")
	after := currentDetails(t, ctx)
	assert.Contains(t, after, "No approval pending.")
	assert.NotContains(t, after, "Waiting for approval")
	assert.Regexp(t, `w1 Edit notes.md — allowed by browser via web-ui at \d\d:\d\d:\d\d UTC`, after)
}

// currentDetails reads the rendered Current Details (an iframe).
func currentDetails(t *testing.T, ctx context.Context) string {
	t.Helper()
	var text string
	require.Eventually(t, func() bool {
		var err error
		text, err = chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const f = document.getElementById('user-metadata-current-details'); return f && f.contentDocument ? f.contentDocument.body.innerText : '' })()`))
		return err == nil && strings.Contains(text, "custos")
	}, 30*time.Second, 200*time.Millisecond, "no current details shown")
	return text
}

// markVisible marks the first visible element matching css (and containing
// text) with data-custos-target, for a real click.
func markVisible(t *testing.T, ctx context.Context, css, text string) {
	t.Helper()
	js := fmt.Sprintf(`(() => {
		document.querySelectorAll('[data-custos-target]').forEach(e => e.removeAttribute('data-custos-target'));
		const e = [...document.querySelectorAll(%q)].find(e => e.checkVisibility() && e.innerText.includes(%q));
		if (!e) return false;
		e.setAttribute('data-custos-target', '1');
		return true })()`, css, text)
	require.Eventually(t, func() bool {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		return err == nil && ok
	}, 30*time.Second, 200*time.Millisecond, "nothing visible matches %s %q", css, text)
}

// clickText clicks, with real mouse events, the first visible button, link
// or menu item whose text is text.
func clickText(t *testing.T, ctx context.Context, text string) {
	t.Helper()
	mark := fmt.Sprintf(`(() => {
		document.querySelectorAll('[data-custos-target]').forEach(e => e.removeAttribute('data-custos-target'));
		const e = [...document.querySelectorAll('button,a,[role=menuitem],[role=tab],li')]
			.find(e => e.innerText.trim() === %q && e.checkVisibility());
		if (!e) return false;
		e.setAttribute('data-custos-target', '1');
		return true })()`, text)
	require.Eventually(t, func() bool {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](mark))
		return err == nil && ok
	}, 30*time.Second, 200*time.Millisecond, "nothing visible to click named %q", text)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-custos-target]`)), chromedp.Sleep(time.Second)))
}
