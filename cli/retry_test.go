package cli_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
)

// A job whose key is refused waits: status says why and what to fix,
// `starter retry` makes it call again at once, and once the job no longer
// waits retry says there is nothing to retry.
func TestRetryAParkedJob(t *testing.T) {
	const task = "cli test: the key is refused until it is fixed"
	var fixed atomic.Bool
	c := jobEnv(t, task, func(openai.ChatCompletionRequest) (demomodel.Reply, error) {
		if !fixed.Load() {
			return demomodel.Fail(http.StatusUnauthorized, "Incorrect API key provided"), nil
		}
		return demomodel.Say("done after the key was fixed"), nil
	})
	id := startDetached(t, testenv.Workspace(t), task)
	require.Eventually(t, func() bool {
		st, err := testenv.Status(c, id)
		return err == nil && st.ModelWait != nil
	}, pendingWait, 50*time.Millisecond, "the job never waited for the endpoint")

	code, out, errOut := runApp(t, context.Background(), "status", id)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "state:     waiting for the model endpoint")
	assert.Contains(t, out, "the endpoint refuses the key: set OPENAI_API_KEY on")
	assert.Contains(t, out, "last error: ")
	assert.Contains(t, out, "try now: starter retry "+id)

	fixed.Store(true)
	start := time.Now()
	code, out, errOut = runApp(t, context.Background(), "retry", id)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, id+": calling the model endpoint again now (failed attempts so far: 1; last error: ")
	res := testenv.Finished(t, c, id, time.Minute)
	assert.Equal(t, "done after the key was fixed", res.Answer)
	assert.Less(t, time.Since(start), 4*time.Second, "sooner than the 5 s backoff")

	code, _, errOut = runApp(t, context.Background(), "retry", id)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "cannot retry "+id+": the job has ended (completed)")
}
