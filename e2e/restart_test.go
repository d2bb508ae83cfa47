package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/settingsfile"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// buildWorker compiles ./worker once per test binary run.
func buildWorker(t testing.TB) string { return buildBinary(t, "../worker", "custos-worker") }

// workerEnv points a worker process at the server srv (address and TLS
// files, as deployed workers connect) and the model at base, with its user
// settings in configHome and its state (transcripts, audits, sandbox
// caches) in the test process's state directory.
func workerEnv(srv testenv.Server, base, configHome string) []string {
	env := append([]string{"TEMPORAL_ADDRESS=" + srv.FrontendAddr(), "XDG_CONFIG_HOME=" + configHome, "XDG_STATE_HOME=" + testenv.StateDir()}, testenv.ModelEnv(base)...)
	return append(env, tlsEnv(srv)...)
}

type workerProc struct {
	cmd *exec.Cmd
	log *os.File
}

func startWorkerProc(t testing.TB, bin string, env []string, args ...string) *workerProc {
	t.Helper()
	logf, err := os.CreateTemp(t.TempDir(), "worker-*.log")
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	p := &workerProc{cmd: cmd, log: logf}
	t.Cleanup(func() { p.kill() })
	return p
}

// kill is kill -9 of the worker (its sandboxed children die with it).
func (p *workerProc) kill() {
	if p.cmd.Process == nil || p.cmd.ProcessState != nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_, _ = p.cmd.Process.Wait()
}

// A worker killed with SIGKILL mid-model-call, while a call waits for
// approval, and mid-Bash, each time replaced by a new worker process: the job
// finishes, every side effect happened once, and the cut-off command came back
// to the model as interrupted.
func TestWorkerKilledMidJob(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the worker binary and kills it three times")
	}
	bin := buildWorker(t)
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)

	ws := testenv.Workspace(t)
	cfg := t.TempDir()
	require.NoError(t, settingsfile.Trust(cfg, ws))
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".custos"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".custos", "settings.json"),
		[]byte(`{"permissions":{"allow":["Bash(echo *)","Bash(sleep *)","Edit(bash.log)"]}}`), 0o644))

	// The first model request hangs until the worker that sent it is dead.
	var requests atomic.Int32
	release := make(chan struct{})
	script := demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "a.txt", "content": "A"})),
		demomodel.Calls(demomodel.ToolCall("b1", "Bash", map[string]any{"command": "echo ran >> bash.log; sleep 60"})),
		demomodel.Say("finished"),
	)
	model, base := testenv.StartModel(t, func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		if requests.Add(1) == 1 {
			<-release
			return demomodel.Fail(503, "the worker that asked is gone"), nil
		}
		return script(req)
	})
	env := workerEnv(srv, base, cfg)
	w := startWorkerProc(t, bin, env)

	ctx := context.Background()
	run := testenv.StartJob(t, c, "restart-"+fmt.Sprint(time.Now().UnixNano()), jobapi.JobInput{Once: true, Task: "restart me", Workspace: ws, ApprovalTimeout: 10 * time.Minute})

	// 1. mid-model-call
	require.Eventually(t, func() bool { return requests.Load() >= 1 }, 90*time.Second, 100*time.Millisecond)
	w.kill()
	close(release)
	w = startWorkerProc(t, bin, env)

	// 2. waiting for approval
	testenv.WaitPending(t, c, run.GetID(), "w1", pendingWait)
	w.kill()
	w = startWorkerProc(t, bin, env)
	require.NoError(t, c.SignalWorkflow(ctx, run.GetID(), "", jobapi.ApprovalSignal,
		jobapi.ApprovalDecision{CallID: "w1", Decision: "allow", By: "e2e"}))

	// 3. mid-Bash: the command has written, into its overlay's upper layer
	// (the workspace gets it only once the command is over, here from the
	// next worker's recovery).
	require.Eventually(t, func() bool {
		logs, _ := filepath.Glob(filepath.Join(testenv.StateDir(), "custos", "overlay", "*", "upper", "bash.log"))
		for _, l := range logs {
			if b, _ := os.ReadFile(l); len(b) > 0 {
				return true
			}
		}
		return false
	}, 90*time.Second, 100*time.Millisecond, "bash never started")
	_, err := os.Stat(filepath.Join(ws, "bash.log"))
	require.ErrorIs(t, err, os.ErrNotExist, "what the command writes is in the workspace while it runs")
	w.kill()
	startWorkerProc(t, bin, env)

	res := testenv.Finished(t, c, run.GetID(), 3*time.Minute)
	assert.Equal(t, "finished", res.Answer)

	assert.Equal(t, "A", readFile(t, ws, "a.txt"))
	assert.Equal(t, "ran\n", readFile(t, ws, "bash.log"), "Bash is at-most-once")
	bashResult := testenv.ToolResult(model, "b1")
	assert.Contains(t, bashResult, "interrupted")
	assert.Contains(t, bashResult, "may have partially run")

	recs, err := activities.ReadAudit(testenv.JobFiles(t, c, run.GetID()).Audit)
	require.NoError(t, err)
	n := 0
	for _, r := range recs {
		if r.CallID == "w1" && r.Event == "" {
			n++
			assert.Equal(t, approval.Allow, r.Decision)
		}
	}
	assert.Equal(t, 1, n, "one decision for w1 in the audit")
	assert.True(t, strings.HasPrefix(res.Answer, "finished"))

	// The model never saw a message lost or twice, across three kills:
	// each request is the one before it plus what happened since.
	reqs := model.Requests()
	var prev []openai.ChatCompletionMessage
	for i, r := range reqs {
		require.GreaterOrEqual(t, len(r.Messages), len(prev), "request %d lost messages", i+1)
		for k := range prev {
			require.Equal(t, prev[k].Content, r.Messages[k].Content, "request %d changed message %d", i+1, k+1)
			require.Equal(t, prev[k].ToolCallID, r.Messages[k].ToolCallID, "request %d changed message %d", i+1, k+1)
		}
		prev = r.Messages
	}
	last := reqs[len(reqs)-1].Messages
	roles := make([]string, len(last))
	for i, m := range last {
		roles[i] = m.Role
		if m.Role == openai.ChatMessageRoleTool {
			roles[i] += ":" + m.ToolCallID
		}
	}
	assert.Equal(t, []string{"system", "user", "assistant", "tool:w1", "assistant", "tool:b1"}, roles)
	transcript := transcriptOf(t, c, run.GetID())
	for i, line := range strings.Split(strings.TrimSpace(transcript), "\n") {
		assert.True(t, strings.HasPrefix(line, fmt.Sprintf(`{"seq":%d,`, i+1)), "transcript line %d: %.60s", i+1, line)
	}
	assert.Equal(t, 7, strings.Count(transcript, "\n"), "the conversation and the answer, each message once")
}
