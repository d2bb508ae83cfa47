package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/policyreplay"
)

// policy replay --from temporal lists the namespace's jobs by visibility
// and reads each one's audit by its status and the audit query. A real
// job's records carry the mode and the policy facts, so nothing is assumed.
func TestPolicyReplayFromTemporal(t *testing.T) {
	const task = "cli test: replay a job's answers"
	c := jobEnv(t, task, demomodel.Script(
		demomodel.Calls(
			demomodel.ToolCall("r_yes", "Write", map[string]any{"file_path": "yes.txt", "content": "approved\n"}),
			demomodel.ToolCall("r_no", "Write", map[string]any{"file_path": "no.txt", "content": "denied\n"}),
		),
		demomodel.Say("done"),
	))
	ws := testenv.Workspace(t)
	id := startDetached(t, ws, task)
	testenv.WaitPending(t, c, id, "r_yes", pendingWait)
	testenv.WaitPending(t, c, id, "r_no", pendingWait)
	code, _, errOut := runApp(t, context.Background(), "approve", id, "r_yes", "--by", "alice@test")
	require.Equal(t, 0, code, errOut)
	code, _, errOut = runApp(t, context.Background(), "deny", id, "r_no", "--by", "bob@test")
	require.Equal(t, 0, code, errOut)
	testenv.Finished(t, c, id, time.Minute)

	config := t.TempDir()
	proposed := filepath.Join(t.TempDir(), "proposed.json")
	require.NoError(t, os.WriteFile(proposed, []byte(`{"permissions": {"allow": ["Write(yes.txt)", "Write(no.txt)"]}}`), 0o644))
	code, out, errOut := runApp(t, context.Background(), "policy", "replay", "--from", "temporal", "--workspace", ws,
		"--state-dir", testenv.StateDir(), "--config-dir", config, "--settings", proposed, "--as", "user", "--json")
	require.Equal(t, 1, code, "stdout %s stderr %s", out, errOut)
	var rep policyreplay.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, 1, rep.Jobs, "only the job of this workspace")
	require.Len(t, rep.Changes, 2)
	byCall := map[string]policyreplay.Change{}
	for _, ch := range rep.Changes {
		byCall[ch.CallID] = ch
	}
	assert.Equal(t, policyreplay.DenialAllowed, byCall["r_no"].Kind)
	assert.Equal(t, "bob@test", byCall["r_no"].Then.By)
	assert.Equal(t, policyreplay.ApprovalAllowed, byCall["r_yes"].Kind)
	assert.Equal(t, "alice@test", byCall["r_yes"].Then.By)
	for _, ch := range rep.Changes {
		assert.Equal(t, "default", string(ch.Mode))
		assert.Empty(t, ch.Notes, "the job recorded its mode and policy facts: nothing assumed")
	}
	assert.Empty(t, rep.Assumed)
}
