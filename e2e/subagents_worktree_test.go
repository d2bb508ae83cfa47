package e2e

import (
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// gitWorkspace is a workspace that is a git repository with one commit.
func gitWorkspace(t testing.TB) string {
	ws := testenv.Workspace(t)
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=t@test", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "first"}} {
		out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	return ws
}

// sleepers is a parent that starts n worktree children, each of which runs
// a command printing when it started and ended around sleep 5.
func sleepers(n int) *subModel {
	calls := make([]openai.ToolCall, n)
	scripts := map[string]demomodel.Handler{}
	for i := range n {
		task := fmt.Sprintf("sleep %d", i)
		calls[i] = demomodel.ToolCall(fmt.Sprint("t", i), "Task", map[string]any{"description": task, "prompt": task, "isolation": "worktree"})
		scripts[task] = demomodel.Script(
			demomodel.Calls(demomodel.ToolCall("s", "Bash", map[string]any{"command": "date +%s%N; sleep 5; date +%s%N"})),
			demomodel.Say("slept"))
	}
	scripts["split it"] = demomodel.Script(demomodel.Calls(calls...), demomodel.Say("all done"))
	return newSubModel(scripts)
}

// ranFrom is when a child's command started and ended, as it printed them.
func (m *subModel) ranFrom(t testing.TB, task string) (start, end int64) {
	reqs := m.requests(task)
	require.Len(t, reqs, 2, task)
	msgs := reqs[1].Messages
	f := strings.Fields(msgs[len(msgs)-1].Content)
	require.GreaterOrEqual(t, len(f), 2, "%s: %q", task, msgs[len(msgs)-1].Content)
	start, err := strconv.ParseInt(f[0], 10, 64)
	require.NoError(t, err)
	end, err = strconv.ParseInt(f[1], 10, 64)
	require.NoError(t, err)
	return start, end
}

func runSleepers(t testing.TB, c client.Client, m *subModel, ws string) jobapi.JobResult {
	id := fmt.Sprintf("subwt-%d", time.Now().UnixNano())
	testenv.StartJob(t, c, id, jobapi.JobInput{Once: true, Task: "split it", Workspace: ws, Mode: approval.ModeBypass})
	return testenv.Finished(t, c, id, 2*time.Minute)
}

// Two worktree children each running sleep 5, on the real server with
// real bwrap: each is on a Bash lane of its own, so their commands run at
// the same time (by the times the commands printed), and each result names
// its worktree and branch.
func TestSubagentWorktreesRunInParallel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the sandbox")
	}
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	m := sleepers(2)
	_, base := testenv.StartModel(t, m.handle)
	testenv.StartWorkers(t, c, base, app.Options{BashLanes: 8})
	res := runSleepers(t, c, m, gitWorkspace(t))
	assert.Equal(t, "all done", res.Answer)
	s0, e0 := m.ranFrom(t, "sleep 0")
	s1, e1 := m.ranFrom(t, "sleep 1")
	assert.True(t, s0 < e1 && s1 < e0, "the two commands overlap: [%d, %d] and [%d, %d]", s0, e0, s1, e1)
	for k, r := range m.toolResults("split it") {
		assert.Contains(t, r, "own git worktree ", k)
		assert.Contains(t, r, "on the branch custos/", k)
	}
}

// Four worktree children each running sleep 5: the parent's run from start
// to answer (goal: at most 7 s). Median of the runs, after a warm-up.
func BenchmarkSubagentWorktreesSleep5(b *testing.B) {
	srv := testenv.StartServer(b, devserver.Options{UIPort: -1})
	c := testenv.Dial(b, srv)
	var m *subModel
	_, base := testenv.StartModel(b, func(req openai.ChatCompletionRequest) (demomodel.Reply, error) { return m.handle(req) })
	testenv.StartWorkers(b, c, base, app.Options{BashLanes: 8})
	ws := gitWorkspace(b)
	m = sleepers(4)
	runSleepers(b, c, m, ws) // warm-up: the sandbox's first run
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		m = sleepers(4)
		began := time.Now()
		runSleepers(b, c, m, ws)
		took = append(took, time.Since(began))
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(took[len(took)/2].Seconds(), "s-median")
	b.Logf("four worktree children, sleep 5 each: median %s of %v", took[len(took)/2], took)
}
