package workflows_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/custos-dev/custos/workflows"
)

// Histories recorded from real jobs of earlier releases (see
// e2e/release_history_test.go and docs/upgrades.md) must replay against
// this code: a job pinned to an old release can be replayed by nobody else,
// but an auto-upgraded one, or a query on an old job, runs the new code on
// the old history. Every testdata/*_history.json is replayed, by the
// workflow as workers register it and nothing else (no call in them was
// decided by a system hook; see TestReplayRecordedHistory).
func TestReplayReleaseHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/*_history.json")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 2, "the recorded histories are in testdata")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			replayer := worker.NewWorkflowReplayer()
			(&workflows.Agent{}).Register(replayer)
			require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}
