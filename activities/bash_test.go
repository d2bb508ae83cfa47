package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/netpolicy"
	"github.com/custos-dev/custos/sandbox"
)

// realSandbox is the sandbox the worker would use, and it must be
// bubblewrap: these tests claim isolation, so a fallback backend fails them
// instead of letting them pass without it. bwrap is found on PATH, as the
// sandbox finds it; without it the tests skip, or fail when CI is set.
func realSandbox(t *testing.T) sandbox.Sandbox {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("bwrap is not on PATH (%v): CI must run the Bash tests in the real sandbox", err)
		}
		t.Skipf("skipping: bwrap is not on PATH (%v); install bubblewrap to run the Bash tests", err)
	}
	// The workspace caches of a test are its own, not the user's.
	sb, err := sandbox.New(sandbox.Config{FailIfUnavailable: true, CacheDir: t.TempDir()})
	require.NoError(t, err)
	// Before the cache directory goes (cleanups run last first).
	t.Cleanup(func() { sandbox.WaitIdle(sb) })
	name, why := sb.Backend()
	require.Equal(t, sandbox.BackendBwrap, name, "bwrap is installed but unusable: %s", why)
	return sb
}

// inSandbox is a shell fragment that prints the marker only bubblewrap's
// profile produces (its own UTS namespace and hostname), so an output that
// contains sandboxMarker proves where the command ran.
const (
	inSandbox     = "echo host=$(hostname)"
	sandboxMarker = "host=custos-sandbox"
)

func TestBash(t *testing.T) {
	sb := realSandbox(t)
	ws := t.TempDir()
	mkfiles(t, ws, map[string]string{"in.txt": "from the workspace\n"})
	tools := &Tools{Sandbox: sb}
	exit := func(n int) *int { return &n }
	tests := []struct {
		name      string
		input     string
		maxOutput int
		exit      *int
		isErr     bool
		truncated bool
		contains  []string
		excludes  []string
		suffix    string
	}{
		{name: "stdout", input: `{"command":"echo hello","description":"say hello"}`, exit: exit(0),
			contains: []string{"hello\n"}, excludes: []string{"[exit code"}},
		{name: "runs in the sandbox", input: `{"command":"` + inSandbox + `"}`, exit: exit(0),
			contains: []string{sandboxMarker}},
		{name: "runs in the workspace", input: `{"command":"cat in.txt && touch made.txt"}`, exit: exit(0),
			contains: []string{"from the workspace"}},
		// stdout and stderr are separate pipes, so their relative order in
		// the output is the order the reader saw them (TestCombinedOutput
		// pins that); here both arrive and the exit code comes last.
		{name: "stderr and exit code", input: `{"command":"echo out; echo err >&2; exit 3"}`, exit: exit(3), isErr: true,
			contains: []string{"out\n", "err\n"}, suffix: "\n[exit code 3]"},
		{name: "no output", input: `{"command":"true"}`, exit: exit(0), contains: []string{"(no output)"}},
		{name: "bash syntax", input: `{"command":"for i in 1 2 3; do printf \"%s,\" $i; done"}`, exit: exit(0),
			contains: []string{"1,2,3,"}},
		{name: "timeout kills", input: `{"command":"echo started; sleep 30","timeout":500}`, isErr: true,
			contains: []string{"started", "[command killed: timeout"}},
		{name: "huge output capped", input: `{"command":"head -c 300000 /dev/zero | tr '\\0' 'x'; echo; echo THE-END"}`,
			maxOutput: 3000, exit: exit(0), truncated: true,
			contains: []string{"[output truncated: ", "THE-END"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res, err := tools.Bash(t.Context(), api.ToolRequest{Workspace: ws, Input: json.RawMessage(tc.input), MaxOutput: tc.maxOutput})
			require.NoError(t, err)
			require.Equal(t, tc.isErr, res.IsError, res.Output)
			require.Equal(t, tc.truncated, res.Truncated, res.Output)
			require.NotNil(t, res.ExitCode)
			if tc.exit != nil {
				require.Equal(t, *tc.exit, *res.ExitCode, res.Output)
			}
			for _, c := range tc.contains {
				require.Contains(t, res.Output, c)
			}
			require.True(t, strings.HasSuffix(res.Output, tc.suffix), "output %q does not end with %q", res.Output, tc.suffix)
			for _, c := range tc.excludes {
				require.NotContains(t, res.Output, c)
			}
			if tc.maxOutput > 0 {
				require.LessOrEqual(t, len(res.Output), tc.maxOutput)
			}
			require.Less(t, time.Since(start), 20*time.Second, "timeout not enforced")
		})
	}
	_, err := os.Stat(filepath.Join(ws, "made.txt"))
	require.NoError(t, err, "a command's writes to the workspace persist")
}

// Bash heartbeats while the command runs, through a real Temporal activity
// environment.
func TestBashHeartbeats(t *testing.T) {
	cacheRoot := t.TempDir()
	sb, err := sandbox.New(sandbox.Config{FailIfUnavailable: true, CacheDir: cacheRoot})
	require.NoError(t, err)
	t.Cleanup(func() { sandbox.WaitIdle(sb) })
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	// Count heartbeats where the activity records them; the SDK throttles
	// what it sends on to the server, which is not what is tested here.
	var beats atomic.Int32
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{&heartbeatCounter{n: &beats}}})
	tools := &Tools{Sandbox: sb, HeartbeatInterval: 10 * time.Millisecond}
	env.RegisterActivity(tools.Bash)
	// The command runs until the test has counted five heartbeats and
	// creates the release file, so the count depends on no clock. The file
	// is in the workspace's cache, which the command sees as it is: what
	// the host adds to the workspace itself while a command runs on its
	// overlay, the command may not see.
	ws := t.TempDir()
	release := func() {
		dirs, _ := filepath.Glob(filepath.Join(cacheRoot, "*", "cache"))
		for _, d := range dirs {
			_ = os.WriteFile(filepath.Join(d, "release"), nil, 0o644)
		}
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		deadline := time.After(time.Minute)
		for beats.Load() < 5 {
			select {
			case <-done:
				return
			case <-deadline:
				release() // anyway; the count below then fails the test
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
		release()
	}()
	val, err := env.ExecuteActivity(tools.Bash, api.ToolRequest{
		Workspace: ws,
		Input:     json.RawMessage(`{"command":"while [ ! -e \"$GOCACHE/../release\" ]; do sleep 0.01; done; ` + inSandbox + `; echo done","timeout":120000}`),
		Sandbox:   approval.SandboxSettings{Network: netpolicy.Policy{AllowLocalBinding: true}},
	})
	require.NoError(t, err)
	var res api.ToolResult
	require.NoError(t, val.Get(&res))
	require.False(t, res.IsError, res.Output)
	require.Contains(t, res.Output, "done")
	require.Contains(t, res.Output, sandboxMarker)
	require.GreaterOrEqual(t, beats.Load(), int32(5), "the command waited for five heartbeats")
}

// A cancelled activity is an activity error, not a result for the model.
func TestBashCancelled(t *testing.T) {
	sb := realSandbox(t)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := (&Tools{Sandbox: sb}).Bash(ctx, api.ToolRequest{Workspace: t.TempDir(), Input: json.RawMessage(`{"command":"sleep 30"}`)})
	require.Less(t, time.Since(start), 15*time.Second)
	if err == nil {
		// The sandbox may report the kill as a result instead; it must
		// then say it was killed.
		require.True(t, res.IsError, res.Output)
		require.Contains(t, res.Output, "killed")
		return
	}
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestFormatBashResult(t *testing.T) {
	tests := []struct {
		name  string
		res   sandbox.Result
		limit int
		want  string
		trunc bool
	}{
		{"plain", sandbox.Result{Stdout: "a\n"}, 1000, "a\n", false},
		{"stderr only", sandbox.Result{Stderr: "boom\n", ExitCode: 1}, 1000, "boom\n[exit code 1]", false},
		{"stdout without newline", sandbox.Result{Stdout: "a", Stderr: "b"}, 1000, "a\n[stderr]\nb", false},
		{"killed with note", sandbox.Result{Stdout: "x\n", Killed: true, KillReason: "memory limit", ExitCode: 137, Duration: 1500 * time.Millisecond, Note: "no OS isolation"}, 1000,
			"x\n[command killed: memory limit after 1.5s]\n[exit code 137]\n[note: no OS isolation]", false},
		{"sandbox truncated", sandbox.Result{Stdout: "x", Truncated: true}, 1000, "x\n[the sandbox kept only part of the output]", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := formatBashResult(tc.res, nil, tc.limit)
			require.Equal(t, tc.want, got.Output)
			require.Equal(t, tc.trunc, got.Truncated)
		})
	}
	// The status lines survive any amount of output.
	big := formatBashResult(sandbox.Result{Stdout: strings.Repeat("y", 50000), ExitCode: 2, Note: "n"}, nil, 1000)
	require.LessOrEqual(t, len(big.Output), 1000)
	require.True(t, strings.HasSuffix(big.Output, "[exit code 2]\n[note: n]"), big.Output[len(big.Output)-80:])
	require.True(t, big.Truncated)
}

// heartbeatCounter counts RecordHeartbeat calls of activities.
type heartbeatCounter struct {
	interceptor.WorkerInterceptorBase
	n *atomic.Int32
}

func (h *heartbeatCounter) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	i := &heartbeatInbound{n: h.n}
	i.Next = next
	return i
}

type heartbeatInbound struct {
	interceptor.ActivityInboundInterceptorBase
	n *atomic.Int32
}

func (i *heartbeatInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	o := &heartbeatOutbound{n: i.n}
	o.Next = outbound
	return i.Next.Init(o)
}

type heartbeatOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
	n *atomic.Int32
}

func (o *heartbeatOutbound) RecordHeartbeat(ctx context.Context, details ...any) {
	if len(details) == 1 {
		if p, ok := details[0].(bashProgress); ok && p.Command != "" {
			o.n.Add(1)
		}
	}
	o.Next.RecordHeartbeat(ctx, details...)
}

// The live capture keeps head and tail under any volume, interleaves
// writers in arrival order and reports the true total.
func TestCombinedOutput(t *testing.T) {
	c := &combinedOutput{keep: 100}
	_, _ = c.Write([]byte("START\n"))
	for i := 0; i < 1000; i++ {
		_, _ = c.Write([]byte(strings.Repeat("é", 50)))
	}
	_, _ = c.Write([]byte("\nEND"))
	require.Equal(t, int64(6+1000*100+4), c.Total())
	require.LessOrEqual(t, len(c.tail), 200, "memory bounded")
	text, trunc := c.Text(300)
	require.True(t, trunc)
	require.LessOrEqual(t, len(text), 300)
	require.True(t, utf8.ValidString(text))
	require.True(t, strings.HasPrefix(text, "START\n"))
	require.True(t, strings.HasSuffix(text, "\nEND"))
	require.Contains(t, text, fmt.Sprintf(" of %d bytes shown]", c.Total()))

	small := &combinedOutput{keep: 100}
	_, _ = small.Write([]byte("a\n"))
	_, _ = small.Write([]byte("b\n"))
	text, trunc = small.Text(300)
	require.False(t, trunc)
	require.Equal(t, "a\nb\n", text)
}

// bashRetryWorkflow schedules Bash with a retry policy that (wrongly) allows
// a second attempt, to check that Bash itself stays at-most-once.
func bashRetryWorkflow(ctx workflow.Context, req api.ToolRequest) (api.ToolResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 2},
	})
	var res api.ToolResult
	err := workflow.ExecuteActivity(ctx, api.BashActivity, req).Get(ctx, &res)
	return res, err
}

func TestBashNotRunTwice(t *testing.T) {
	sb := realSandbox(t)
	ws := t.TempDir()
	tools := &Tools{Sandbox: sb}
	crashAfterFirst := func(ctx context.Context, req api.ToolRequest) (api.ToolResult, error) {
		res, err := tools.Bash(ctx, req)
		if activity.GetInfo(ctx).Attempt == 1 {
			return api.ToolResult{}, errors.New("simulated worker crash while the command ran")
		}
		return res, err
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(bashRetryWorkflow)
	env.RegisterActivityWithOptions(crashAfterFirst, activity.RegisterOptions{Name: api.BashActivity})
	env.ExecuteWorkflow(bashRetryWorkflow, api.ToolRequest{Workspace: ws, Input: json.RawMessage(`{"command":"echo ran $(hostname) >> count.txt"}`)})
	require.NoError(t, env.GetWorkflowError())
	var res api.ToolResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.True(t, res.IsError)
	require.Contains(t, res.Output, "interrupted")
	got, err := os.ReadFile(filepath.Join(ws, "count.txt"))
	require.NoError(t, err)
	require.Equal(t, "ran custos-sandbox\n", string(got), "the command ran exactly once, in the sandbox")
}
