package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/cli"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/notify/slack"
	"github.com/custos-dev/custos/notify/slack/slacktest"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// inboxClient is a browser session of the inbox without the browser: the
// one-time link's cookie and the page's CSRF token, so it sends exactly
// the POST the page's Allow button sends.
type inboxClient struct {
	http   *http.Client
	base   string // http://127.0.0.1:port
	prefix string
	csrf   string
}

var csrfMeta = regexp.MustCompile(`<meta name="custos-csrf" content="([^"]+)">`)

func loginInbox(t testing.TB, login string) *inboxClient {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := &http.Client{Jar: jar, Timeout: time.Minute}
	res, err := hc.Get(login)
	require.NoError(t, err)
	page, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", page)
	m := csrfMeta.FindSubmatch(page)
	require.NotNil(t, m, "the page carries its CSRF token")
	u, err := url.Parse(login)
	require.NoError(t, err)
	return &inboxClient{http: hc, base: u.Scheme + "://" + u.Host, prefix: u.Path, csrf: string(m[1])}
}

// allow POSTs the Allow button's request and returns the outcomes' JSON.
func (ic *inboxClient) allow(t testing.TB, job, call string) string {
	t.Helper()
	body := fmt.Sprintf(`{"answers":[{"job":%q,"call":%q,"decision":"allow"}]}`, job, call)
	req, err := http.NewRequest(http.MethodPost, ic.base+ic.prefix+"decide", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", ic.base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("X-Custos-CSRF", ic.csrf)
	res, err := ic.http.Do(req)
	require.NoError(t, err)
	out, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", out)
	return string(out)
}

// BenchmarkInboxClickToToolStart measures, in one job on the embedded
// server, the time from an answer leaving for the worker to the approved
// Write's ActivityTaskStarted event, over 100 approvals per path,
// interleaved so all three see the same server:
//
//   - web: the POST the inbox page's Allow button sends (behind the Web UI
//     gate's cookie, with the CSRF token);
//   - slack: a signed click on the bot's interactivity endpoint;
//   - cli: `starter approve JOB CALL` run in-process (cli.App.Main: it
//     dials Temporal, sends the decide Update and waits for its result,
//     the sendDecision path; a process start would add its own ~tens of
//     milliseconds).
//
// Run with
//
//	go test ./e2e/ -run '^$' -bench BenchmarkInboxClickToToolStart -benchtime 1x
//
// The figures are reported as metrics (milliseconds).
func BenchmarkInboxClickToToolStart(b *testing.B) {
	const perPath = 100
	n := 3 * perPath
	rig := startInboxRig(b, writesThenDone(n))
	web := loginInbox(b, rig.login)
	for _, kv := range append(tlsEnv(rig.srv), "TEMPORAL_ADDRESS="+rig.srv.FrontendAddr()) {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
	ws := testenv.Workspace(b)

	b.ResetTimer()
	for range b.N {
		id := fmt.Sprintf("bench-inbox-%d", time.Now().UnixNano())
		run := testenv.StartJob(b, rig.c, id, jobapi.JobInput{Once: true, Task: "bench", Workspace: ws, ApprovalTimeout: 10 * time.Minute, MaxTurns: n + 5})
		firstRun := run.GetRunID()
		sent := map[string]time.Time{}
		path := map[string]string{}
		for i := range n {
			call := waitingCall(b, rig.slackRig, id, benchCallID(i))
			m := rig.message(b, call) // its message is posted
			switch i % 3 {
			case 0:
				path[call], sent[call] = "web", time.Now()
				out := web.allow(b, id, call)
				require.Contains(b, out, `"applied":true`, out)
			case 1:
				payload, err := slacktest.Click(m, slack.ActionAllow, alice, rig.slack.ResponseURL())
				require.NoError(b, err)
				path[call], sent[call] = "slack", time.Now()
				res, err := slacktest.Post(rig.endpoint, slackSecret, time.Now(), slacktest.Interaction(payload))
				require.NoError(b, err)
				require.Equal(b, http.StatusOK, res.StatusCode)
			case 2:
				var stdout, stderr bytes.Buffer
				app := &cli.App{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Logger: testenv.Logger()}
				path[call], sent[call] = "cli", time.Now()
				code := app.Main(context.Background(), []string{"approve", id, call})
				require.Equal(b, 0, code, "%s%s", stdout.String(), stderr.String())
			}
		}
		gctx, gcancel := context.WithTimeout(context.Background(), 5*time.Minute)
		require.NoError(b, run.Get(gctx, nil))
		gcancel()
		b.StopTimer()
		started := toolStarts(b, rig.c, id, firstRun)
		lat := map[string][]time.Duration{}
		for call, t0 := range sent {
			at, ok := started[call]
			require.True(b, ok, "no ActivityTaskStarted for %s", call)
			lat[path[call]] = append(lat[path[call]], at.Sub(t0))
		}
		for _, p := range []string{"web", "slack", "cli"} {
			report(b, p, lat[p])
		}
		b.StartTimer()
	}
}

// waitingCall waits for the call the model named prefix to wait for a
// person and returns its ID in the job (after continue-as-new the job
// tells a run's calls apart: c055_r2).
func waitingCall(b *testing.B, rig *slackRig, job, prefix string) string {
	deadline := time.Now().Add(pendingWait)
	for time.Now().Before(deadline) {
		if st, err := testenv.Status(rig.c, job); err == nil {
			for _, p := range st.Pending {
				if p.CallID == prefix || strings.HasPrefix(p.CallID, prefix+"_") {
					return p.CallID
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	testenv.LogJob(b, rig.c, job)
	b.Fatalf("call %s of %s never waited", prefix, job)
	return ""
}
