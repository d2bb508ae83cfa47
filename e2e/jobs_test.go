package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/cli"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// jobsModel answers each job by its task: a Write that asks, an answer
// (then the job waits for a message, or ends with Once), or a refused key
// (the job parks on its model endpoint).
func jobsModel(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
	task, tools := "", 0
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleUser && task == "" {
			task = m.Content
		}
		if m.Role == openai.ChatMessageRoleTool {
			tools++
		}
	}
	switch {
	case strings.HasPrefix(task, "ask") && tools == 0:
		return demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "a.txt", "content": "a\n"})), nil
	case strings.HasPrefix(task, "refused"):
		return demomodel.Fail(http.StatusUnauthorized, "invalid api key"), nil
	}
	return demomodel.Say("answered: " + task), nil
}

// listJobs runs `starter jobs --json` with args and returns its jobs by ID.
func listJobs(t *testing.T, srv *testServer, args ...string) map[string]cli.JobRow {
	t.Helper()
	code, out, errOut := starterAt(t, srv, append([]string{"jobs", "--json"}, args...)...)
	require.Equal(t, 0, code, errOut)
	var doc struct{ Jobs []cli.JobRow }
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	byID := map[string]cli.JobRow{}
	for _, j := range doc.Jobs {
		byID[j.Job] = j
	}
	return byID
}

// starter jobs lists every job with its status from one visibility call:
// a call waiting for a person (named), a job waiting for its next message,
// one parked on a refused key, one that answered and ended, one canceled;
// --status and --workspace filter, and the table says the same.
func TestJobsListsEveryJobWithItsStatus(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	_, base := testenv.StartModel(t, jobsModel)
	testenv.StartWorkers(t, c, base, app.Options{})
	wsAsk := testenv.Workspace(t)
	ws := testenv.Workspace(t)
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	id := func(s string) string { return "jobs-" + s + "-" + suffix }
	start := func(name, task, workspace string, once bool) {
		testenv.StartJob(t, c, id(name), jobapi.JobInput{Task: task, Workspace: workspace, Once: once, ApprovalTimeout: 10 * time.Minute})
	}
	start("ask", "ask for a write", wsAsk, true)
	start("talk", "talk to me", ws, false)
	start("refused", "refused key", ws, true)
	start("done", "answer once", ws, true)
	start("cancel", "talk then cancel", ws, false)
	testenv.WaitPending(t, c, id("ask"), "w1", pendingWait)
	testenv.Finished(t, c, id("done"), time.Minute)
	waitListed(t, srv, id("cancel"), jobapi.ListWaitingMessage)
	require.NoError(t, c.CancelWorkflow(context.Background(), id("cancel"), ""))
	waitListed(t, srv, id("talk"), jobapi.ListWaitingMessage)
	waitListed(t, srv, id("refused"), jobapi.ListParked)
	waitListed(t, srv, id("cancel"), jobapi.ListEnded)

	jobs := listJobs(t, srv)
	ask := jobs[id("ask")]
	assert.Equal(t, jobapi.ListWaitingPerson, ask.Status)
	assert.Equal(t, wsAsk, ask.Workspace)
	assert.Equal(t, "ask for a write", ask.Task)
	require.Len(t, ask.Waiting, 1)
	assert.Equal(t, "w1", ask.Waiting[0].Call)
	assert.Equal(t, "Write", ask.Waiting[0].Tool)
	assert.Contains(t, ask.Waiting[0].Summary, "a.txt")
	assert.False(t, ask.Started.IsZero())
	assert.False(t, ask.LastActivity.Before(ask.Started), "last activity %s, started %s", ask.LastActivity, ask.Started)
	assert.Nil(t, ask.Ended)
	assert.Equal(t, jobapi.ListParked, jobs[id("refused")].Status)
	assert.Equal(t, "model endpoint", jobs[id("refused")].Why)
	assert.Equal(t, jobapi.ListEnded, jobs[id("done")].Status)
	assert.Equal(t, "done", jobs[id("done")].Why)
	require.NotNil(t, jobs[id("done")].Ended)
	assert.Equal(t, jobapi.ListEnded, jobs[id("cancel")].Status)
	assert.Equal(t, "canceled", jobs[id("cancel")].Why)
	assert.Empty(t, jobs[id("talk")].Waiting)

	only := listJobs(t, srv, "--status", jobapi.ListWaitingPerson)
	assert.Contains(t, only, id("ask"))
	assert.NotContains(t, only, id("talk"))
	ended := listJobs(t, srv, "--status", "ended")
	assert.Contains(t, ended, id("done"))
	assert.Contains(t, ended, id("cancel"))
	assert.NotContains(t, ended, id("ask"))
	inWS := listJobs(t, srv, "--workspace", wsAsk)
	assert.Equal(t, []string{id("ask")}, slices.Collect(func(yield func(string) bool) {
		for k := range inWS {
			if !yield(k) {
				return
			}
		}
	}))

	code, out, errOut := starterAt(t, srv, "jobs")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{"JOB", "STATUS", id("ask"), "waiting-for-person", "w1 Write", "parked (model endpoint)", "ended (done)", "ended (canceled)"} {
		assert.Contains(t, out, want)
	}
	code, _, errOut = starterAt(t, srv, "jobs", "--status", "sleeping")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `--status "sleeping": want one of working, waiting-for-person`)
}

// waitListed waits until `starter jobs` lists job id with status.
func waitListed(t *testing.T, srv *testServer, id, status string) {
	t.Helper()
	require.Eventually(t, func() bool { return listJobs(t, srv)[id].Status == status }, pendingWait, 300*time.Millisecond,
		"%s listed %s", id, status)
}

// BenchmarkJobsList times `starter jobs` over 1,000 open jobs
// (CUSTOS_JOBS overrides), each answered once and waiting for its next
// message, on the embedded server: the listing alone (cli.ListJobs, one
// client) and the whole command (the starter binary: dial, list, print
// JSON). It reports the median of the iterations of each. Run:
// go test -run '^$' -bench JobsList -benchtime 10x ./e2e/
func BenchmarkJobsList(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("CUSTOS_JOBS")); err == nil && v > 0 {
		n = v
	}
	srv := testenv.StartServer(b, devserver.Options{UIPort: -1})
	c := testenv.Dial(b, srv)
	_, base := testenv.StartModel(b, jobsModel)
	testenv.StartWorkers(b, c, base, app.Options{})
	ws := b.TempDir()
	ctx := context.Background()
	parallel(n, 8, func(i int) {
		// A start the loaded server timed out is tried again (the same ID
		// starts the job once).
		var err error
		for range 5 {
			_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("listed-%04d", i), TaskQueue: api.TaskQueue}, jobapi.WorkflowName,
				jobapi.JobInput{Task: fmt.Sprintf("job %d", i), Workspace: ws})
			if err == nil {
				return
			}
		}
		b.Error(err)
	})
	waitAllListed(b, c, n)
	es := embedded(srv)
	buildStarter(b)
	var list, command []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		rows, err := cli.ListJobs(ctx, c, "")
		list = append(list, time.Since(t0))
		if err != nil || len(rows) != n {
			b.Fatalf("listed %d of %d jobs: %v", len(rows), n, err)
		}
		t0 = time.Now()
		if code, _, errOut := starterAt(b, es, "jobs", "--json"); code != 0 {
			b.Fatalf("starter jobs: %s", errOut)
		}
		command = append(command, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(float64(median(list).Microseconds())/1000, "list-ms")
	b.ReportMetric(float64(median(command).Microseconds())/1000, "command-ms")
	b.ReportMetric(float64(n), "jobs")
}

// waitAllListed waits until every one of the n jobs is listed waiting for
// a message (each answered once).
func waitAllListed(b *testing.B, c client.Client, n int) {
	deadline := time.Now().Add(30 * time.Minute)
	got := 0
	for time.Now().Before(deadline) {
		rows, err := cli.ListJobs(context.Background(), c, jobapi.ListWaitingMessage)
		if err == nil && len(rows) == n {
			return
		}
		got = len(rows)
		time.Sleep(time.Second)
	}
	b.Fatalf("%d of the %d jobs answered", got, n)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, k int) bool { return s[i] < s[k] })
	return s[len(s)/2]
}
