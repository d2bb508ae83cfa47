package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testbin"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// The attack the owner check stops, replayed: a job of the owner waits for
// approval of a Write; another local user (nobody) tries the Temporal CLI to
// switch the job to bypass and to approve the Write. Both fail and change
// nothing; the owner's CLI, with the flags custos prints, approves it.
func TestAnotherUserCannotDecideTheOwnersJob(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("this test plays another local user and needs root (runuser)")
		}
		t.Skip("needs root to play another local user")
	}
	// A directory everyone may enter: the server's own walls (its 0700
	// certificate directory, mutual TLS) are all that stands in the way.
	base, err := os.MkdirTemp("", "custos-intruder-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	cli := filepath.Join(base, "temporal")
	testbin.LinkOrCopy(t, testbin.Temporal(t), cli)

	srv := startServer(t, filepath.Join(base, "temporal.db"))
	c := testenv.Dial(t, srv)
	run, ws := startWaitingJob(t, c, "owners-job", demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "owner.txt", "content": "the owner decided"})),
		demomodel.Say("done"),
	), "w1")

	ownerFlags := srv.TLSFiles().TemporalCLIFlags(srv.FrontendAddr())
	temporal := func(user string, args ...string) (string, error) {
		argv := append([]string{cli}, args...)
		if user != "" {
			argv = append([]string{"runuser", "-u", user, "--"}, argv...)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + base}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	bypass := []string{"workflow", "signal", "--workflow-id", run.GetID(), "--name", jobapi.ModeSignal,
		"--input", `{"mode":"bypassPermissions"}`, "--command-timeout", "10s"}
	approve := func(by string) []string {
		return []string{"workflow", "signal", "--workflow-id", run.GetID(), "--name", jobapi.ApprovalSignal,
			"--input", `{"callId":"w1","decision":"allow","by":"` + by + `"}`, "--command-timeout", "10s"}
	}
	for _, flags := range [][]string{
		ownerFlags,                        // the owner's files: unreadable
		{"--address", srv.FrontendAddr()}, // plain text
		{"--address", srv.FrontendAddr(), "--tls-disable-host-verification"}, // TLS, no certificate
	} {
		out, err := temporal("nobody", append(bypass, flags...)...)
		require.Error(t, err, "nobody switched the mode: %s", out)
		out, err = temporal("nobody", append(approve("intruder"), flags...)...)
		require.Error(t, err, "nobody approved: %s", out)
	}

	// Nothing changed: the call still waits, in the default mode.
	st, err := testenv.Status(c, run.GetID())
	require.NoError(t, err)
	assert.Equal(t, approval.ModeDefault, st.Mode)
	require.Len(t, st.Pending, 1)
	assert.Equal(t, "w1", st.Pending[0].CallID)

	// The owner, same command, the printed flags.
	out, err := temporal("", append(approve("owner-cli"), ownerFlags...)...)
	require.NoError(t, err, out)
	testenv.Finished(t, c, run.GetID(), time.Minute)
	assert.Equal(t, "the owner decided", readFile(t, ws, "owner.txt"))
	recs, err := activities.ReadAudit(testenv.JobFiles(t, c, run.GetID()).Audit)
	require.NoError(t, err)
	assert.Equal(t, "owner-cli", testenv.Decisions(recs)["w1"].Approver)
	for _, r := range recs {
		assert.NotEqual(t, "intruder", r.Approver)
	}
}
