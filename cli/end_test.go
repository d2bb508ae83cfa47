package cli_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
)

// starter end of a job that has ended already gives that as its answer,
// not the server's error for an Update to a closed workflow.
func TestEndOfAnEndedJobSaysItHasEnded(t *testing.T) {
	const task = "cli test: end a job twice"
	jobEnv(t, task, demomodel.Script(demomodel.Say("ONLY answer")))
	ws := testenv.Workspace(t)
	id := "custos-cli-end-twice"
	code, out, errOut := runApp(t, context.Background(), "run", "--workspace", ws, "--id", id, task)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "ONLY answer")

	code, out, errOut = runApp(t, context.Background(), "end", id)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, id+" ended after 1 turns")

	code, out, errOut = runApp(t, context.Background(), "end", id)
	assert.NotEqual(t, 0, code, out)
	assert.Contains(t, errOut, "the job has already ended")
	assert.NotContains(t, errOut, "workflow execution already completed")
}
