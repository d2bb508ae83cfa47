package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testbin"
	"github.com/custos-dev/custos/internal/testenv"
)

// People approve from the Temporal CLI exactly as the README says: a query
// shows the pending call, a signal decides it.
func TestTemporalCLIQueriesAndApproves(t *testing.T) {
	cli := testbin.Temporal(t)
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	run, ws := startWaitingJob(t, c, "cli-approval", demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "cli.txt", "content": "approved from the CLI"})),
		demomodel.Say("done"),
	), "w1")

	temporal := func(args ...string) string {
		cmd := exec.Command(cli, append(append(args, srv.TLSFiles().TemporalCLIFlags(srv.FrontendAddr())...), "--namespace", "default")...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "temporal %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	out := temporal("workflow", "query", "--workflow-id", run.GetID(), "--type", "status", "--output", "json")
	assert.Contains(t, out, `"callId": "w1"`)
	temporal("workflow", "signal", "--workflow-id", run.GetID(), "--name", "approval",
		"--input", `{"callId":"w1","decision":"allow","by":"temporal-cli"}`)

	testenv.Finished(t, c, run.GetID(), time.Minute)
	assert.Equal(t, "approved from the CLI", readFile(t, ws, "cli.txt"))
	recs, err := activities.ReadAudit(testenv.JobFiles(t, c, run.GetID()).Audit)
	require.NoError(t, err)
	assert.Equal(t, "temporal-cli", testenv.Decisions(recs)["w1"].Approver)

	// The audit query answers the CLI too.
	out = temporal("workflow", "query", "--workflow-id", run.GetID(), "--type", "audit", "--output", "json")
	var parsed any
	assert.NoError(t, json.Unmarshal([]byte(out), &parsed), out)
	assert.Contains(t, out, "temporal-cli")
}
