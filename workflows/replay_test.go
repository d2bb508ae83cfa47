package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/workflows"
)

// TestReplayRecordedHistory replays a history recorded from a real job on the
// embedded server (see e2e/history_test.go): reads, an approval, a denial, a
// stray signal, a mode change and an Edit allowed by the new mode. A change
// to the workflow that would break running jobs fails here.
func TestReplayRecordedHistory(t *testing.T) {
	reg, err := app.DefaultHooks()
	require.NoError(t, err)
	agent := &workflows.Agent{Hooks: reg}
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(agent.Run, workflow.RegisterOptions{Name: workflows.WorkflowName})
	require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/agent_history.json"))
}
