package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testbin"
	"github.com/custos-dev/custos/internal/testenv"
)

// starterAt runs the starter binary against srv as a person's shell would
// (no terminal) and returns its exit code, stdout and stderr.
func starterAt(t testing.TB, srv *testServer, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(buildStarter(t), args...)
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+srv.FrontendAddr(), "TEMPORAL_PROFILE=", "TEMPORAL_NAMESPACE=",
		"TEMPORAL_CONFIG_FILE="+filepath.Join(t.TempDir(), "none.toml"), "XDG_CONFIG_HOME="+t.TempDir(),
		"XDG_STATE_HOME="+testenv.StateDir())
	if srv.certs.CA != "" {
		cmd.Env = append(cmd.Env, tlsEnv(srv)...)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		require.NoError(t, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// temporalCLIAt runs the Temporal CLI against srv.
func temporalCLIAt(t *testing.T, srv *testServer, args ...string) string {
	t.Helper()
	conn := []string{"--address", srv.FrontendAddr()}
	if srv.certs.CA != "" {
		conn = srv.TLSFiles().TemporalCLIFlags(srv.FrontendAddr())
	}
	cmd := exec.Command(testbin.Temporal(t), append(append(args, conn...), "--namespace", "default")...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "temporal %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// A schedule made with starter is a Temporal Schedule (the Temporal CLI
// lists it); a triggered run is an ordinary job named after it whose Write
// waits for a person like any job's and is approved with starter approve;
// a run due while it waits is skipped, and describe counts it; pause,
// unpause and delete show in describe and list.
func TestScheduleRunsJobsAskedLikeAnyOther(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	_, base := testenv.StartModel(t, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "report.txt", "content": "nightly\n"})),
		demomodel.Say("report written"),
	))
	ws := testenv.Workspace(t)
	// A host of its own holding just this workspace: on a server the suite
	// shares (PostgreSQL), a worker of an earlier test may still count as a
	// live host holding "/" for 90 s, and starter routes a job to the host
	// whose root is the longest.
	testenv.StartWorkers(t, c, base, app.Options{Host: "schedule-test", Workspaces: []string{ws}})
	name := "nightly-report"
	code, out, errOut := starterAt(t, srv, "schedule", "create", name, "--every", "24h", "--workspace", ws,
		"--approval-timeout", "10m", "write the nightly report")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "schedule "+name+" created: next run ")
	t.Cleanup(func() { _ = c.ScheduleClient().GetHandle(context.Background(), name).Delete(context.Background()) })

	assert.Contains(t, temporalCLIAt(t, srv, "schedule", "list"), name, "the Temporal CLI sees the schedule")
	code, out, errOut = starterAt(t, srv, "schedule", "list", "--json")
	require.Equal(t, 0, code, errOut)
	var listed struct{ Schedules []struct{ Name, Spec string } }
	require.NoError(t, json.Unmarshal([]byte(out), &listed), out)
	require.Len(t, listed.Schedules, 1)
	assert.Equal(t, name, listed.Schedules[0].Name)
	assert.Equal(t, "every 24h0m0s", listed.Schedules[0].Spec)

	code, out, errOut = starterAt(t, srv, "schedule", "trigger", name)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "schedule "+name+" triggered\n", out)
	job := scheduledJobID(t, c, name)
	assert.True(t, strings.HasPrefix(job, name+"-"), "the job's ID starts with the schedule's name: %s", job)
	testenv.WaitPending(t, c, job, "w1", pendingWait)

	// Due again while the first run waits for a person: skipped.
	code, _, errOut = starterAt(t, srv, "schedule", "trigger", name)
	require.Equal(t, 0, code, errOut)
	require.Eventually(t, func() bool {
		_, out, _ := starterAt(t, srv, "schedule", "describe", name)
		return strings.Contains(out, "runs:      1 started, 1 skipped")
	}, time.Minute, 500*time.Millisecond, "the second trigger is skipped and counted")

	code, out, errOut = starterAt(t, srv, "approve", job, "w1", "--by", "carol@test")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "allowed Write report.txt, by carol@test via cli")
	res := testenv.Finished(t, c, job, time.Minute)
	assert.Equal(t, "report written", res.Answer)
	assert.Equal(t, "nightly\n", readFile(t, ws, "report.txt"))

	code, _, errOut = starterAt(t, srv, "schedule", "pause", name)
	require.Equal(t, 0, code, errOut)
	_, out, _ = starterAt(t, srv, "schedule", "describe", name)
	assert.Contains(t, out, "state:     paused")
	assert.Contains(t, out, "workspace: "+ws)
	assert.Contains(t, out, "overlap:   skip")
	assert.Contains(t, out, "recent:    "+job)
	assert.Contains(t, temporalCLIAt(t, srv, "schedule", "describe", "--schedule-id", name), "paused", "the Temporal CLI sees it paused")
	code, _, errOut = starterAt(t, srv, "schedule", "unpause", name)
	require.Equal(t, 0, code, errOut)
	_, out, _ = starterAt(t, srv, "schedule", "describe", name)
	assert.Contains(t, out, "state:     active")
	assert.Contains(t, out, "next run:  ")

	code, out, errOut = starterAt(t, srv, "schedule", "delete", name)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "schedule "+name+" deleted\n", out)
	require.Eventually(t, func() bool {
		_, out, _ := starterAt(t, srv, "schedule", "list")
		return strings.Contains(out, "no schedules")
	}, 30*time.Second, 500*time.Millisecond, "a deleted schedule leaves the list")
	code, _, errOut = starterAt(t, srv, "schedule", "describe", name)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "schedule describe "+name)
}

// scheduledJobID waits for the first job the schedule started.
func scheduledJobID(t *testing.T, c client.Client, name string) string {
	t.Helper()
	var id string
	require.Eventually(t, func() bool {
		d, err := c.ScheduleClient().GetHandle(context.Background(), name).Describe(context.Background())
		if err != nil || len(d.Info.RecentActions) == 0 || d.Info.RecentActions[0].StartWorkflowResult == nil {
			return false
		}
		id = d.Info.RecentActions[0].StartWorkflowResult.WorkflowID
		return true
	}, time.Minute, 200*time.Millisecond, "the schedule starts a job")
	return id
}

// What create refuses, it refuses before anything is made: a name that is
// no safe ID, a cron expression the server would not read or that never
// fires, both or neither of --cron and --every, an unknown mode or overlap
// policy, a workspace whose settings are broken.
func TestScheduleCreateRefusesBadInput(t *testing.T) {
	srv := startServer(t, "")
	ws := testenv.Workspace(t)
	broken := testenv.Workspace(t)
	require.NoError(t, os.MkdirAll(filepath.Join(broken, ".custos"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(broken, ".custos", "settings.json"), []byte(`{"permissions": {"denny": []}}`), 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"x;rm", "--every", "1h"}, `name "x;rm"`},
		{[]string{"-x", "--every", "1h"}, "flag provided but not defined"},
		{[]string{"ok", "--cron", "61 * * * *"}, "Minute is not in range"},
		{[]string{"ok", "--cron", "* * *"}, "5-7 fields"},
		{[]string{"ok", "--cron", "0 3 31 2 *"}, "never fires"},
		{[]string{"ok", "--cron", "@daily", "--every", "1h"}, "exactly one of --cron EXPR and --every DUR"},
		{[]string{"ok"}, "exactly one of --cron EXPR and --every DUR"},
		{[]string{"ok", "--every", "1h", "--mode", "yolo"}, "yolo"},
		{[]string{"ok", "--every", "1h", "--overlap", "sometimes"}, `--overlap "sometimes"`},
		{[]string{"ok", "--every", "1h", "--max-tokens", "-1"}, "--max-tokens must not be negative"},
	} {
		args := append([]string{"schedule", "create"}, tc.args...)
		args = append(args, "--workspace", ws, "a task")
		code, out, errOut := starterAt(t, srv, args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, errOut)
		assert.Empty(t, out, "%v", tc.args)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
	code, _, errOut := starterAt(t, srv, "schedule", "create", "ok", "--every", "1h", "--workspace", broken, "a task")
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "the workspace's settings")
	_, out, errOut := starterAt(t, srv, "schedule", "list")
	assert.Equal(t, "no schedules\n", out, errOut)
}

// devServer starts Temporal's own dev server (`temporal server start-dev`,
// the Temporal CLI's) on free ports, in-memory, without TLS.
func devServer(t *testing.T) *testServer {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(testbin.Temporal(t), "server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", strconv.Itoa(port), "--http-port", strconv.Itoa(freePort(t)), "--metrics-port", strconv.Itoa(freePort(t)),
		"--log-level", "error")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	srv := &testServer{addr: "127.0.0.1:" + strconv.Itoa(port)}
	require.Eventually(t, func() bool {
		c, err := client.Dial(client.Options{HostPort: srv.addr, Logger: testenv.TemporalLogger()})
		if err != nil {
			return false
		}
		defer c.Close()
		_, err = c.CheckHealth(context.Background(), nil)
		return err == nil
	}, time.Minute, 200*time.Millisecond, "temporal server start-dev serves")
	return srv
}

// On Temporal's own dev server too: a schedule's triggered run is a job
// that waits for a person, `starter jobs` lists it (status, the call, the
// schedule) from visibility, starter approve answers it, the schedule goes.
func TestJobsAndSchedulesOnTemporalDevServer(t *testing.T) {
	srv := devServer(t)
	c := testenv.Dial(t, srv)
	_, base := testenv.StartModel(t, demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "dev.txt", "content": "dev\n"})),
		demomodel.Say("written on the dev server"),
	))
	testenv.StartWorkers(t, c, base, app.Options{})
	ws := testenv.Workspace(t)
	code, _, errOut := starterAt(t, srv, "schedule", "create", "dev-nightly", "--cron", "@daily", "--workspace", ws,
		"--approval-timeout", "10m", "write on the dev server")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, temporalCLIAt(t, srv, "schedule", "list"), "dev-nightly")
	code, _, errOut = starterAt(t, srv, "schedule", "trigger", "dev-nightly")
	require.Equal(t, 0, code, errOut)
	job := scheduledJobID(t, c, "dev-nightly")
	testenv.WaitPending(t, c, job, "w1", pendingWait)

	waitListed(t, srv, job, "waiting-for-person")
	row := listJobs(t, srv)[job]
	assert.Equal(t, ws, row.Workspace)
	assert.Equal(t, "dev-nightly", row.Schedule)
	require.Len(t, row.Waiting, 1)
	assert.Equal(t, "w1", row.Waiting[0].Call)

	code, _, errOut = starterAt(t, srv, "approve", job, "w1")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "written on the dev server", testenv.Finished(t, c, job, time.Minute).Answer)
	waitListed(t, srv, job, "ended")
	assert.Equal(t, "done", listJobs(t, srv, "--status", "ended")[job].Why)
	code, _, errOut = starterAt(t, srv, "schedule", "delete", "dev-nightly")
	require.Equal(t, 0, code, errOut)
}
