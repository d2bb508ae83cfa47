package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/settingsfile"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// A PreToolUse hook that does not decide hands the call to a person: an
// "ask" with its reason, or a rewritten input (modifiedInput, no decision)
// that the person sees and approves and the tool then runs. Both on the
// embedded server with a real worker, real hook processes and the sandbox.
func TestHookAskAndRewriteReachAPerson(t *testing.T) {
	tests := []struct {
		name string
		// hook is the hook script's JSON answer.
		hook string
		// wantReason and wantInput are what the person is shown.
		wantReason string
		wantInput  string
		// wantFile is out.txt after the approved call ran.
		wantFile string
	}{
		{name: "ask", hook: `{"decision":"ask","reason":"the release hook wants a person"}`,
			wantReason: "the release hook wants a person",
			wantInput:  `{"command":"echo original > out.txt"}`, wantFile: "original\n"},
		{name: "modifiedInput without a decision", hook: `{"modifiedInput":{"command":"echo rewritten > out.txt"}}`,
			wantInput: `{"command":"echo rewritten > out.txt"}`, wantFile: "rewritten\n"},
	}
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model, base := testenv.StartModel(t, demomodel.Script(
				demomodel.Calls(demomodel.ToolCall("b1", "Bash", map[string]any{"command": "echo original > out.txt"})),
				demomodel.Say("done"),
			))
			ws := testenv.Workspace(t)
			require.NoError(t, os.MkdirAll(filepath.Join(ws, ".custos"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(ws, ".custos", "settings.json"),
				[]byte(`{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"./hook.sh"}]}]}}`), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(ws, "hook.sh"), []byte("#!/bin/sh\ncat >/dev/null\necho '"+tc.hook+"'\n"), 0o755))
			userDir := t.TempDir()
			require.NoError(t, settingsfile.Trust(userDir, ws))

			testenv.StartWorkers(t, c, base, app.Options{UserConfigDir: userDir})
			ctx := context.Background()
			run := testenv.StartJob(t, c, fmt.Sprintf("hook-ask-%d", i), jobapi.JobInput{Once: true, Task: "run it", Workspace: ws, ApprovalTimeout: 10 * time.Minute})

			// The call reaches a person, showing what the hook said or made.
			testenv.WaitPending(t, c, run.GetID(), "b1", pendingWait)
			ask := pendingAsk(t, c, run.GetID(), "b1")
			assert.JSONEq(t, tc.wantInput, string(ask.Input))
			if tc.wantReason != "" {
				assert.Equal(t, tc.wantReason, ask.Reason)
			}
			assert.NoFileExists(t, filepath.Join(ws, "out.txt"), "nothing runs before the person answers")

			require.NoError(t, c.SignalWorkflow(ctx, run.GetID(), "", jobapi.ApprovalSignal,
				jobapi.ApprovalDecision{CallID: "b1", Decision: "allow", By: "e2e"}))
			res := testenv.Finished(t, c, run.GetID(), 2*time.Minute)
			assert.Equal(t, "done", res.Answer)
			assert.Equal(t, tc.wantFile, readFile(t, ws, "out.txt"), "the tool ran, with the input the person approved")
			assert.NotContains(t, testenv.ToolResult(model, "b1"), `"approved":false`)
		})
	}
}

// pendingAsk is callID's entry in the status query's pending list.
func pendingAsk(t *testing.T, c client.Client, id, callID string) jobapi.PendingAsk {
	t.Helper()
	st, err := testenv.Status(c, id)
	require.NoError(t, err)
	for _, p := range st.Pending {
		if p.CallID == callID {
			return p
		}
	}
	t.Fatalf("call %s is not pending: %+v", callID, st.Pending)
	return jobapi.PendingAsk{}
}
