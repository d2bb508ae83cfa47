package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/custos-dev/custos/workflows"
)

// TestReplayRecordedHistory replays a history recorded from a real job on the
// embedded server (see e2e/history_test.go): reads, an approval, a denial, a
// stray signal, a mode change and an Edit allowed by the new mode. A change
// to the workflow that would break running jobs fails here.
//
// The workflow replays with nothing but this package: no activity runs in a
// replay, and an Agent with no Hooks has the system hooks every worker has
// (approval.SystemHooks). e2e/history_test.go replays a history in which a
// system hook decided a call.
func TestReplayRecordedHistory(t *testing.T) {
	replayer := worker.NewWorkflowReplayer()
	(&workflows.Agent{}).Register(replayer)
	require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/agent_history.json"))
}
