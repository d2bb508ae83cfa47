package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Worker Deployment Versioning as docs/upgrades.md tells operators to use
// it: a job started on release v1 waits for approval while v2 is rolled out
// and made current. New jobs run on v2; the waiting job stays pinned to v1:
// with v1's workers gone, v2's workers do not touch it, however long it
// waits; once a v1 worker is back, it finishes there.
func TestPinnedJobFinishesOnItsRelease(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	deployment := fmt.Sprintf("custos-test-%d", time.Now().UnixNano())
	// Each release has its own model endpoint, so which release served a
	// model call is plain from which endpoint got it.
	handler := func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		for _, m := range req.Messages {
			if m.Role == openai.ChatMessageRoleTool {
				return demomodel.Say("finished"), nil
			}
		}
		if strings.Contains(req.Messages[len(req.Messages)-1].Content, "wait for me") {
			return demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "v.txt", "content": "v"})), nil
		}
		return demomodel.Say("finished"), nil
	}
	modelV1, baseV1 := testenv.StartModel(t, handler)
	modelV2, baseV2 := testenv.StartModel(t, handler)
	cfg := t.TempDir()
	start := func(build, base string) *app.Workers {
		return testenv.StartWorkers(t, c, base, app.Options{UserConfigDir: cfg,
			Versioning: app.Versioning{DeploymentName: deployment, BuildID: build}})
	}
	ctx := context.Background()
	makeCurrent := func(build string) {
		dh := c.WorkerDeploymentClient().GetHandle(deployment)
		// The version exists once its workers have polled.
		require.Eventually(t, func() bool {
			_, err := dh.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: build})
			return err == nil
		}, time.Minute, 200*time.Millisecond, "setting %s current", build)
	}
	jobIn := func(task string) jobapi.JobInput {
		return jobapi.JobInput{Once: true, Task: task, Workspace: testenv.Workspace(t)}
	}
	// The task queues now belong to this deployment; on a server the tests
	// share (CUSTOS_E2E_TEMPORAL_ADDRESS), hand them back to unversioned
	// workers, or the next test's jobs would wait for v2.
	t.Cleanup(func() {
		_, err := c.WorkerDeploymentClient().GetHandle(deployment).SetCurrentVersion(context.Background(),
			client.WorkerDeploymentSetCurrentVersionOptions{BuildID: "", IgnoreMissingTaskQueues: true})
		assert.NoError(t, err, "handing the task queues back to unversioned workers")
	})

	v1 := start("v1", baseV1)
	makeCurrent("v1")
	pinned := testenv.StartJob(t, c, deployment+"-pinned", jobIn("wait for me"))
	testenv.WaitPending(t, c, pinned.GetID(), "w1", pendingWait)

	start("v2", baseV2)
	makeCurrent("v2")
	fresh := testenv.StartJob(t, c, deployment+"-fresh", jobIn("a new job"))
	gctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	require.NoError(t, fresh.Get(gctx, nil))
	assert.Equal(t, "v2", buildOf(t, c, fresh.GetID()), "new jobs start on the current release")

	// v1 is retired: the waiting job is approved, and nobody runs it.
	v1.Stop()
	v2Before := len(modelV2.Requests())
	require.NoError(t, c.SignalWorkflow(ctx, pinned.GetID(), "", jobapi.ApprovalSignal,
		jobapi.ApprovalDecision{CallID: "w1", Decision: "allow", By: "e2e"}))
	require.Never(t, func() bool { return len(modelV2.Requests()) > v2Before }, 3*time.Second, 100*time.Millisecond,
		"a v2 worker ran the job pinned to v1")

	// A v1 worker again (a straggler, or the operator scaling v1 back up
	// until its jobs drain): the job finishes there.
	v1Before := len(modelV1.Requests())
	start("v1", baseV1)
	require.NoError(t, pinned.Get(gctx, nil))
	assert.Greater(t, len(modelV1.Requests()), v1Before, "the pinned job's last model call ran on v1")
	assert.Equal(t, v2Before, len(modelV2.Requests()))
	assert.Equal(t, "v1", buildOf(t, c, pinned.GetID()))
}

// buildOf is the build ID a job is (or was last) pinned to.
func buildOf(t *testing.T, c client.Client, id string) string {
	t.Helper()
	d, err := c.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	vi := d.GetWorkflowExecutionInfo().GetVersioningInfo()
	require.NotNil(t, vi, "job %s has versioning info", id)
	assert.Equal(t, enumspb.VERSIONING_BEHAVIOR_PINNED, vi.GetBehavior())
	return vi.GetDeploymentVersion().GetBuildId()
}
