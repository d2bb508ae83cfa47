package activities

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/hooks"
)

func TestRunHooksActivity(t *testing.T) {
	dir := t.TempDir()
	guard := filepath.Join(dir, "guard.sh")
	require.NoError(t, os.WriteFile(guard, []byte(`#!/bin/sh
# Deny rm, rewrite everything else to run in the workspace's build dir.
if grep -q '"rm ' ; then echo "no rm, please" >&2; exit 2; fi
echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"make -C build"}}}'
`), 0o755))
	hooksFor := []hooks.CommandHook{
		{Name: "slow-observer", Command: "sleep 0.3", Timeout: 10 * time.Second, Point: hooks.ToolApprovalPre},
		{Name: "guard", Command: guard, Timeout: 10 * time.Second, Point: hooks.ToolApprovalPre},
	}
	payload := func(cmd string) hooks.Payload {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return hooks.Payload{Point: hooks.ToolApprovalPre, JobID: "job-7", Tool: "Bash", Input: in}
	}

	tests := []struct {
		name string
		cmd  string
		want hooks.Result
	}{
		{"deny", "rm -rf /tmp/x", hooks.Result{Decision: "deny", Reason: "no rm, please", Hook: "guard"}},
		{"allow with rewrite", "make", hooks.Result{Decision: "allow", ModifiedInput: json.RawMessage(`{"command":"make -C build"}`), Hook: "guard"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			var beats atomic.Int32
			env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { beats.Add(1) })
			env.RegisterActivityWithOptions((&Hooks{HeartbeatEvery: 50 * time.Millisecond}).RunHooks,
				activity.RegisterOptions{Name: api.HooksActivity})

			val, err := env.ExecuteActivity(api.HooksActivity, api.HookRequest{Hooks: hooksFor, Payload: payload(tt.cmd), Dir: dir})
			require.NoError(t, err)
			var resp api.HookResponse
			require.NoError(t, val.Get(&resp))

			assert.True(t, resp.Decided)
			assert.Equal(t, tt.want, resp.Result)
			require.Len(t, resp.Outcomes, 2)
			assert.Equal(t, "slow-observer", resp.Outcomes[0].Hook)
			assert.True(t, resp.Outcomes[0].Result.Empty())
			assert.Empty(t, resp.Outcomes[1].Err)
			// The SDK throttles heartbeats without a heartbeat timeout, so only
			// the first reaches the listener here; TestRunHooksHeartbeats checks
			// that heartbeats keep a slow hook alive.
			assert.GreaterOrEqual(t, beats.Load(), int32(1))
		})
	}
}

// hookHeartbeatTimeout is the heartbeat timeout of hookTestWorkflow. The SDK
// batches heartbeats to 80% of it, so a heartbeat reaches the server at most
// 20% (400 ms) before the timeout would fire; a loaded machine can miss a
// tighter margin.
const hookHeartbeatTimeout = 2 * time.Second

// hookTestWorkflow runs RunHooks once with a short heartbeat timeout and no
// retries, so a missing heartbeat fails it.
func hookTestWorkflow(ctx workflow.Context, req api.HookRequest) (api.HookResponse, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		HeartbeatTimeout:    hookHeartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var resp api.HookResponse
	err := workflow.ExecuteActivity(ctx, api.HooksActivity, req).Get(ctx, &resp)
	return resp, err
}

func TestRunHooksHeartbeats(t *testing.T) {
	tests := []struct {
		name    string
		every   time.Duration
		wantErr bool
	}{
		{"heartbeating keeps the slow hook alive", 50 * time.Millisecond, false},
		// Negative control: proves the timeout is real, so the case above
		// passes because of the heartbeats.
		{"without heartbeats it times out", time.Minute, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			release := filepath.Join(dir, "release")
			// The hook runs until the test releases it: after four heartbeats
			// reached the server (three batch windows, 2.4 times the timeout,
			// so it outlived the timeout only by heartbeating), or, when they
			// do not come, after 2.5 times the timeout.
			req := api.HookRequest{
				Hooks: []hooks.CommandHook{{Name: "slow", Timeout: 30 * time.Second,
					Command: `while [ ! -e '` + release + `' ]; do sleep 0.01; done; echo '{"decision":"ask"}'`}},
				Payload: hooks.Payload{Point: hooks.ToolApprovalPre, Tool: "Bash"},
				Dir:     dir,
			}
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			env.SetTestTimeout(time.Minute) // the default 3 s is wall time, shorter than the hook
			var beats atomic.Int32
			env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { beats.Add(1) })
			env.RegisterWorkflow(hookTestWorkflow)
			env.RegisterActivityWithOptions((&Hooks{HeartbeatEvery: tt.every}).RunHooks,
				activity.RegisterOptions{Name: api.HooksActivity})
			done := make(chan struct{})
			defer close(done)
			go func() {
				giveUp := time.After(hookHeartbeatTimeout * 5 / 2)
				for beats.Load() < 4 {
					select {
					case <-done:
						return
					case <-giveUp:
						_ = os.WriteFile(release, nil, 0o644)
						return
					case <-time.After(10 * time.Millisecond):
					}
				}
				_ = os.WriteFile(release, nil, 0o644)
			}()
			env.ExecuteWorkflow(hookTestWorkflow, req)
			require.True(t, env.IsWorkflowCompleted())
			err := env.GetWorkflowError()
			if tt.wantErr {
				require.Error(t, err)
				var timeoutErr *temporal.TimeoutError
				require.True(t, errors.As(err, &timeoutErr), "want a heartbeat timeout, got %v", err)
				return
			}
			require.NoError(t, err)
			require.GreaterOrEqual(t, beats.Load(), int32(4), "released by heartbeats, not by giving up")
			var resp api.HookResponse
			require.NoError(t, env.GetWorkflowResult(&resp))
			assert.Equal(t, hooks.Result{Decision: "ask", Hook: "slow"}, resp.Result)
		})
	}
}

func TestRunHooksActivityBadRequest(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	tests := []struct {
		name string
		req  api.HookRequest
		want string
	}{
		{"no dir", api.HookRequest{}, "dir (the workspace) is empty"},
		{"missing dir", api.HookRequest{Dir: filepath.Join(dir, "gone")}, "workspace:"},
		{"dir is a file", api.HookRequest{Dir: file}, "is not a directory"},
		{"empty command", api.HookRequest{Dir: dir, Hooks: []hooks.CommandHook{{Name: "x"}}}, "hooks[0] (x): empty command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivityWithOptions((&Hooks{}).RunHooks, activity.RegisterOptions{Name: api.HooksActivity})
			_, err := env.ExecuteActivity(api.HooksActivity, tt.req)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			var appErr *temporal.ApplicationError
			require.True(t, errors.As(err, &appErr), "want an ApplicationError, got %T", err)
			assert.True(t, appErr.NonRetryable())
		})
	}
}

func TestRunHooksActivityNoHooks(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions((&Hooks{}).RunHooks, activity.RegisterOptions{Name: api.HooksActivity})
	val, err := env.ExecuteActivity(api.HooksActivity, api.HookRequest{Dir: t.TempDir()})
	require.NoError(t, err)
	var resp api.HookResponse
	require.NoError(t, val.Get(&resp))
	assert.False(t, resp.Decided)
	assert.Empty(t, resp.Outcomes)
}
