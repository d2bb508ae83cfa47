package inbox

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/workflows/jobapi"
)

var t0 = time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)

func snapshotOf(jobs ...Job) Snapshot { return Snapshot{Version: 1, At: t0, Jobs: jobs} }

// What the model chose reaches the page escaped twice over: display's
// visible escapes for what a screen would interpret or hide, then HTML
// escaping; no markup it wrote survives as markup.
func TestRenderEscapesWhatTheModelChose(t *testing.T) {
	for _, tc := range []struct {
		name      string
		call      jobapi.PendingAsk
		task      string
		want      []string
		forbidden []string
	}{
		{"markup in a summary and a call ID", jobapi.PendingAsk{CallID: `c"><script>alert(1)</script>`, Tool: "Bash", Summary: `Bash <img src=x onerror=alert(1)>`},
			"fix it", []string{"&lt;img src=x onerror=alert(1)&gt;", "&lt;script&gt;"}, []string{"<script>alert", "<img"}},
		{"escape sequences in a command", jobapi.PendingAsk{CallID: "c1", Tool: "Bash", Summary: "Bash echo hi\x1b[2K\rrm -rf ~"},
			"t", []string{"⟨ESC⟩[2K⟨CR⟩rm -rf ~"}, []string{"\x1b"}},
		{"a look-alike letter in a path", jobapi.PendingAsk{CallID: "c1", Tool: "Write", Summary: "Write /etc/p\u0430sswd"},
			"t", []string{"⟨U+0430⟩"}, []string{"\u0430"}},
		{"a bidi override in the preview", jobapi.PendingAsk{CallID: "c1", Tool: "Edit", Summary: "Edit a.go", Preview: "--- a.go\n+++ a.go\n@@ -1 +1 @@\n-x\n+y \u202e// ok"},
			"t", []string{`<span class="add">+y ⟨U+202E⟩// ok</span>`, `<span class="del">-x</span>`, `<span class="hunk">@@ -1 +1 @@</span>`}, []string{"\u202e"}},
		{"a task with markup and a second line", jobapi.PendingAsk{CallID: "c1", Tool: "Read", Summary: "Read a"},
			"<b>bold</b>\nsecond line", []string{"&lt;b&gt;bold&lt;/b&gt;"}, []string{"<b>bold", "second line"}},
		{"markup in the rule Always would save", jobapi.PendingAsk{CallID: "c1", Tool: "Bash", Summary: "Bash x", Rule: `Bash(x</code><script>)`},
			"t", []string{"saves allow rule <code>Bash(x&lt;/code&gt;&lt;script&gt;)</code>", "saves deny rule <code>Bash(x&lt;/code&gt;&lt;script&gt;)</code>"}, []string{"<script>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.call.Deadline = t0.Add(time.Minute)
			var b bytes.Buffer
			require.NoError(t, RenderList(&b, snapshotOf(Job{ID: "j1", Task: tc.task, Workspace: "/ws", Calls: []jobapi.PendingAsk{tc.call}}), t0))
			// html/template writes + as &#43;; read it back for the checks.
			got := strings.ReplaceAll(b.String(), "&#43;", "+")
			for _, w := range tc.want {
				assert.Contains(t, got, w)
			}
			for _, f := range tc.forbidden {
				assert.NotContains(t, b.String(), f)
			}
		})
	}
}

// Each call shows its job's task, workspace and host, the tool, why it
// asks, the deadline and the buttons; Always and Never name the rule, and
// are not offered when no rule covers the call.
func TestRenderShowsACall(t *testing.T) {
	p := jobapi.PendingAsk{CallID: "w1", Tool: "Write", Summary: "Write notes.md", Reason: "no rule allows Write", Rule: "Write(notes.md)",
		AskedAt: t0, Deadline: t0.Add(42 * time.Second)}
	bare := jobapi.PendingAsk{CallID: "w2", Tool: "Bash", Summary: "Bash make", Deadline: t0.Add(time.Minute)}
	var b bytes.Buffer
	require.NoError(t, RenderList(&b, snapshotOf(Job{ID: "job-1", Task: "write the notes", Workspace: "/home/a/ws", Host: "vm1",
		Calls: []jobapi.PendingAsk{p, bare}}), t0))
	html := b.String()
	for _, w := range []string{"write the notes", "/home/a/ws", "vm1", "job-1", "Write notes.md", "asks because: no rule allows Write",
		"denied in 42s", `data-deadline="2026-12-01T14:00:42Z"`, `data-key="job-1/w1"`, "saves allow rule <code>Write(notes.md)</code>",
		"saves deny rule <code>Write(notes.md)</code>", "no rule covers this call"} {
		assert.Contains(t, html, w)
	}
	assert.Equal(t, 1, strings.Count(html, `data-decision="always"`), "Always only where a rule covers the call")
	assert.Equal(t, 2, strings.Count(html, `data-decision="deny"`))
}

// The page offers only the answers a call can take: a call that needs
// several approvals shows no Always, Never or Allow-for…, which the job
// would refuse.
func TestRenderOffersOnlyWhatCounts(t *testing.T) {
	quorum := []jobapi.QuorumState{{Rule: "Bash(git push:*)", Require: 2, From: []string{"alice", "bob"}}}
	for _, tc := range []struct {
		name    string
		call    jobapi.PendingAsk
		offered []string
		absent  []string
	}{
		{"a rule covers the call", jobapi.PendingAsk{Rule: "Bash(git push:*)"},
			[]string{`data-decision="allow"`, `data-decision="deny"`, `data-decision="always"`, `data-decision="never"`, `data-decision="grant"`}, nil},
		{"N of M with a rule", jobapi.PendingAsk{Rule: "Bash(git push:*)", Quorum: quorum},
			[]string{`data-decision="allow"`, `data-decision="deny"`, "needs several approvals"},
			[]string{`data-decision="always"`, `data-decision="never"`, `data-decision="grant"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.call.CallID, tc.call.Tool, tc.call.Summary, tc.call.Deadline = "p1", "Bash", "Bash git push", t0.Add(time.Minute)
			var b bytes.Buffer
			require.NoError(t, RenderList(&b, snapshotOf(Job{ID: "j", Calls: []jobapi.PendingAsk{tc.call}}), t0))
			for _, w := range tc.offered {
				assert.Contains(t, b.String(), w)
			}
			for _, w := range tc.absent {
				assert.NotContains(t, b.String(), w)
			}
		})
	}
}

func TestRenderEmptyAndFailed(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, RenderList(&b, Snapshot{Version: 3, At: t0, Err: "connection refused"}, t0))
	assert.Contains(t, b.String(), "Nothing waits for you.")
	assert.Contains(t, b.String(), "Could not refresh at 14:00:00 UTC: connection refused")
}

// The collector bumps its version, and wakes subscribers, only when what
// the page shows changed; a failed listing keeps the last calls.
func TestCollectorVersions(t *testing.T) {
	k := NewCollector(nil, 0, 0, nil)
	ch, stop := k.Subscribe()
	defer stop()
	call := func(id string) Job {
		return Job{ID: "j", Calls: []jobapi.PendingAsk{{CallID: id, Deadline: t0}}}
	}
	steps := []struct {
		jobs    []Job
		err     error
		version uint64
		woke    bool
		calls   int
	}{
		{[]Job{call("a")}, nil, 1, true, 1},
		{[]Job{call("a")}, nil, 1, false, 1},
		{[]Job{call("b")}, nil, 2, true, 1},
		{nil, errors.New("down"), 3, true, 1},
		{nil, nil, 4, true, 0},
	}
	for i, s := range steps {
		k.publish(s.jobs, s.err, t0.Add(time.Duration(i)*time.Second))
		snap := k.Snapshot()
		assert.Equal(t, s.version, snap.Version, "step %d", i)
		assert.Equal(t, s.calls, snap.Calls(), "step %d", i)
		select {
		case <-ch:
			assert.True(t, s.woke, "step %d woke a subscriber for nothing", i)
		default:
			assert.False(t, s.woke, "step %d did not wake the subscriber", i)
		}
	}
}

// The event stream carries the rendered list, one data line per line.
func TestWriteEvent(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, writeEvent(&b, snapshotOf(Job{ID: "j", Calls: []jobapi.PendingAsk{{CallID: "c", Tool: "Read", Deadline: t0}}}), t0))
	s := b.String()
	assert.True(t, strings.HasPrefix(s, "event: list\nid: 1\ndata: <div id=\"snapshot\""), s)
	assert.True(t, strings.HasSuffix(s, "</div>\n\n"), s)
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n\n"), "\n") {
		assert.True(t, strings.HasPrefix(l, "data: ") || strings.HasPrefix(l, "event: ") || strings.HasPrefix(l, "id: "), "line %q", l)
	}
}

// POSTs are refused without the session's token, with another session's,
// and from another origin, before anything reaches Temporal (the handler
// here has no client at all).
func TestPostsNeedTheSessionsToken(t *testing.T) {
	h, err := NewHandler(NewCollector(nil, 0, 0, nil), nil, Options{SessionCookie: "sess"})
	require.NoError(t, err)
	page := httptest.NewRequest(http.MethodGet, "/custos/", nil)
	page.AddCookie(&http.Cookie{Name: "sess", Value: "one"})
	token := h.csrfToken(page)
	require.NotEmpty(t, token)
	other := httptest.NewRequest(http.MethodGet, "/custos/", nil)
	other.AddCookie(&http.Cookie{Name: "sess", Value: "two"})
	require.NotEqual(t, token, h.csrfToken(other), "tokens are per session")

	body := `{"answers":[{"job":"j","call":"c","decision":"allow"}]}`
	for _, tc := range []struct {
		name    string
		cookie  string
		token   string
		headers map[string]string
		want    int
	}{
		{"no token", "one", "", nil, http.StatusForbidden},
		{"another session's token", "two", token, nil, http.StatusForbidden},
		{"no session", "", token, nil, http.StatusForbidden},
		{"cross-site fetch", "one", token, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"another origin", "one", token, map[string]string{"Origin": "http://127.0.0.1:9999"}, http.StatusForbidden},
		{"malformed body", "one", token, map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := body
			if tc.want == http.StatusBadRequest {
				b = `{"answers":[{"job":"j","call":"c","decision":"allow","extra":1}]}`
			}
			req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8233/custos/decide", strings.NewReader(b))
			if tc.cookie != "" {
				req.AddCookie(&http.Cookie{Name: "sess", Value: tc.cookie})
			}
			req.Header.Set(csrfHeader, tc.token)
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			assert.Equal(t, tc.want, rec.Code, rec.Body.String())
		})
	}
}

// The page carries the token, no inline script, and a policy that refuses
// any.
func TestPageHeaders(t *testing.T) {
	h, err := NewHandler(NewCollector(nil, 0, 0, nil), nil, Options{SessionCookie: "sess", DefaultBy: "alice"})
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodGet, "/custos/", nil)
	req.AddCookie(&http.Cookie{Name: "sess", Value: "one"})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Contains(t, rec.Body.String(), `<meta name="custos-csrf" content="`+h.csrfToken(req)+`">`)
	assert.Contains(t, rec.Body.String(), `value="alice"`)
	assert.Contains(t, rec.Body.String(), "unverified")
	assert.Contains(t, rec.Header().Get("Content-Security-Policy"), "script-src 'self'")
	assert.NotContains(t, rec.Body.String(), "<script>")

	for _, path := range []string{"/custos/static/inbox.js", "/custos/static/inbox.css"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		assert.Equal(t, http.StatusOK, rec.Code, path)
	}
}

// An answer the page sends becomes the decide Update's payload, with
// channel web; what is not an answer is refused before it is sent.
func TestAnswerDecision(t *testing.T) {
	until := t0.Add(10 * time.Hour)
	for _, tc := range []struct {
		name string
		a    Answer
		want jobapi.ApprovalDecision
		err  string
	}{
		{"allow", Answer{Call: "c", Decision: "allow"}, jobapi.ApprovalDecision{CallID: "c", Decision: "allow", By: "alice", Channel: "web"}, ""},
		{"deny with a reason", Answer{Call: "c", Decision: "deny", Reason: "not now"}, jobapi.ApprovalDecision{CallID: "c", Decision: "deny", Reason: "not now", By: "alice", Channel: "web"}, ""},
		{"a grant for 30 minutes", Answer{Call: "c", Decision: "allow", Grant: &GrantChoice{Scope: "job", For: "30m"}},
			jobapi.ApprovalDecision{CallID: "c", Decision: "allow", By: "alice", Channel: "web", Grant: &jobapi.GrantSpec{Scope: "job", For: "30m"}}, ""},
		{"a grant until the end of the day", Answer{Call: "c", Decision: "allow", Grant: &GrantChoice{Scope: "workspace", Until: until}},
			jobapi.ApprovalDecision{CallID: "c", Decision: "allow", By: "alice", Channel: "web", Grant: &jobapi.GrantSpec{Scope: "workspace", Until: until}}, ""},
		{"not a decision", Answer{Call: "c", Decision: "maybe"}, jobapi.ApprovalDecision{}, "not allow, deny"},
		{"a grant with a deny", Answer{Call: "c", Decision: "deny", Grant: &GrantChoice{Scope: "job", For: "1h"}}, jobapi.ApprovalDecision{}, "allow only"},
		{"a grant of another scope", Answer{Call: "c", Decision: "allow", Grant: &GrantChoice{Scope: "world", For: "1h"}}, jobapi.ApprovalDecision{}, "not job or workspace"},
		{"a grant without an end", Answer{Call: "c", Decision: "allow", Grant: &GrantChoice{Scope: "job"}}, jobapi.ApprovalDecision{}, "exactly one"},
		{"a grant of a bad length", Answer{Call: "c", Decision: "allow", Grant: &GrantChoice{Scope: "job", For: "soon"}}, jobapi.ApprovalDecision{}, "soon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := tc.a.decision("alice")
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, d)
		})
	}
}

// What the person reads after an answer.
func TestOutcomeTexts(t *testing.T) {
	assert.Equal(t, "allowed Write notes.md, by alice via web",
		decidedText(jobapi.DecideResult{Summary: "Write notes.md", Decision: "allow", By: "alice", Channel: "web"}))
	assert.Equal(t, "denied Bash rm, by alice via web; deny rule Bash(rm *) added",
		decidedText(jobapi.DecideResult{Summary: "Bash rm", Decision: "deny", Answer: "never", Rule: "Bash(rm *)", By: "alice", Channel: "web"}))
	spec := &jobapi.GrantSpec{Scope: "job", For: "30m"}
	assert.Equal(t, "", grantText(nil, nil))
	assert.Contains(t, grantText(spec, nil), "no grant was kept", "a worker without grants allowed the call once: say so")
	assert.Equal(t, "; granted Bash(npm test:*) in this job until 2026-12-01 14:30 UTC (grant g1)",
		grantText(spec, &jobapi.Grant{ID: "g1", Rule: "Bash(npm test:*)", Scope: "job", Until: t0.Add(30 * time.Minute)}))
	for _, tc := range []struct {
		err  error
		want string
	}{
		{temporal.NewNonRetryableApplicationError("not applied: already denied by bob via slack at 14:03:07 UTC", "NotApplied", nil),
			"not applied: already denied by bob via slack at 14:03:07 UTC"},
		{serviceerror.NewNotFound("workflow not found"), "not applied: job j is not running (it has ended, or never existed)"},
		{errors.New("connection refused"), "not applied: could not reach the job: connection refused"},
	} {
		assert.Equal(t, tc.want, refusalText(tc.err, "j"))
	}
}

// Nobody looking, nobody asked: the collector queries the jobs only while
// an event stream is open or a page was loaded within idleAfter.
func TestCollectorIdlesUnwatched(t *testing.T) {
	k := NewCollector(nil, 0, 0, nil)
	now := time.Now()
	assert.False(t, k.watched(now), "a new collector with no page open")
	k.Fresh(context.Background())
	assert.True(t, k.watched(time.Now()), "a page was just loaded")
	assert.False(t, k.watched(time.Now().Add(idleAfter+time.Second)), "long after the last page load")
	_, stop := k.Subscribe()
	assert.True(t, k.watched(time.Now().Add(idleAfter+time.Second)), "an event stream is open")
	stop()
	assert.False(t, k.watched(time.Now().Add(idleAfter+time.Second)), "the stream closed")
}

// A job's live grants are listed with who gave them, until when, how often
// they were used, and a Revoke button that names the grant.
func TestRenderGrants(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, RenderList(&b, snapshotOf(Job{ID: "j", Grants: []jobapi.Grant{
		{ID: "g1", Rule: "Bash(npm test:*)", Scope: "job", By: "alice", Channel: "web", Until: t0.Add(time.Hour), Uses: 3}}}), t0))
	for _, w := range []string{"grant <code>Bash(npm test:*)</code> in this job, by alice via web, until 2026-12-01 15:00 UTC, used 3 times",
		`data-job="j" data-grant="g1"`} {
		assert.Contains(t, b.String(), w)
	}
	assert.Equal(t, "used once", used(1))
	assert.Equal(t, "not used yet", used(0))
}

// A subagent is shown right under its parent, naming it; a parent with no
// call of its own is listed when a child's call waits; a child whose
// parent is not listed keeps its place.
func TestSubagentsUnderTheirParent(t *testing.T) {
	p := jobapi.PendingAsk{CallID: "w", Tool: "Write", Summary: "Write x.txt", Deadline: t0.Add(time.Minute)}
	parent := Job{ID: "job-1", Task: "split it", ChildAsks: 1}
	assert.True(t, listed(parent), "a parent whose child waits is listed")
	assert.False(t, listed(Job{ID: "idle"}))
	jobs := underParents([]Job{
		{ID: "job-1-task-a", Parent: "job-1", Calls: []jobapi.PendingAsk{p}},
		{ID: "other", Calls: []jobapi.PendingAsk{p}},
		parent,
		{ID: "job-1-task-a-task-b", Parent: "job-1-task-a", Calls: []jobapi.PendingAsk{p}},
		{ID: "orphan-task-c", Parent: "orphan", Calls: []jobapi.PendingAsk{p}},
	})
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	assert.Equal(t, []string{"other", "job-1", "job-1-task-a", "job-1-task-a-task-b", "orphan-task-c"}, ids)
	var b bytes.Buffer
	require.NoError(t, RenderList(&b, snapshotOf(jobs...), t0))
	html := b.String()
	assert.Contains(t, html, `<section class="job subagent" data-job="job-1-task-a">`)
	assert.Contains(t, html, "job <code>job-1-task-a</code> · a subagent of job <code>job-1</code>")
	assert.Contains(t, html, `<section class="job" data-job="job-1">`)
}
