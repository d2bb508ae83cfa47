package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testbin"
	"github.com/custos-dev/custos/internal/testenv"
)

// The decide Update through the real Temporal CLI, as the README shows it:
// an answer that would not count is refused to its sender and leaves no
// event in the job's history; an accepted one returns the final decision.
func TestDecideUpdateFromTemporalCLI(t *testing.T) {
	cli := testbin.Temporal(t)
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	run, ws := startWaitingJob(t, c, "cli-update", demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "u.txt", "content": "by update"})),
		demomodel.Calls(demomodel.ToolCall("w2", "Write", map[string]any{"file_path": "v.txt", "content": "second"})),
		demomodel.Say("done"),
	), "w1")

	update := func(input string) (string, error) {
		cmd := exec.Command(cli, "workflow", "update", "execute", "--workflow-id", run.GetID(), "--name", "decide",
			"--input", input, "--namespace", "default", "--output", "json")
		cmd.Args = append(cmd.Args, srv.TLSFiles().TemporalCLIFlags(srv.FrontendAddr())...)
		out, err := cmd.CombinedOutput()
		// The CLI logs errors with quotes escaped.
		return strings.ReplaceAll(string(out), `\"`, `"`), err
	}
	before := historyLength(t, c, run.GetID())
	for _, bad := range []struct{ input, says string }{
		{`{"callId":"nope","decision":"allow","by":"mallory"}`, `not applied: no call "nope" is waiting for approval in this job`},
		{`{"callId":"w1","decision":"perhaps","by":"mallory"}`, `not applied: decision "perhaps" is not allow, deny, always or never`},
	} {
		out, err := update(bad.input)
		require.Error(t, err, "refused update %s succeeded: %s", bad.input, out)
		assert.Contains(t, out, bad.says)
	}
	assert.Equal(t, before, historyLength(t, c, run.GetID()), "a rejected Update adds nothing to history")

	out, err := update(`{"callId":"w1","decision":"allow","by":"ops","channel":"temporal-cli"}`)
	require.NoError(t, err, out)
	assert.Contains(t, out, `"decision": "allow"`)
	assert.Contains(t, out, `"by": "ops"`)
	assert.Contains(t, out, `"summary": "Write u.txt"`)

	// A late answer, while the job still runs (w2 waits): told what happened.
	testenv.WaitPending(t, c, run.GetID(), "w2", pendingWait)
	out, err = update(`{"callId":"w1","decision":"deny","by":"late"}`)
	require.Error(t, err)
	assert.Regexp(t, `not applied: already allowed by ops via temporal-cli at \d\d:\d\d:\d\d UTC`, out)
	_, err = update(`{"callId":"w2","decision":"allow","by":"ops"}`)
	require.NoError(t, err)

	testenv.Finished(t, c, run.GetID(), time.Minute)
	assert.Equal(t, "by update", readFile(t, ws, "u.txt"))
}

func historyLength(t *testing.T, c client.Client, id string) int {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		_, err := it.Next()
		require.NoError(t, err)
		n++
	}
	return n
}
