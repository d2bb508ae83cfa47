package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mounter is one way of making a sandbox's workspace mounts.
type mounter struct {
	name string
	sb   Sandbox
}

// mounters are the two ways the workspace's mounts are made: by custos'
// mount step, which this test binary carries when it is built with cgo
// (and which must then be on: the probe may not quietly turn it off), and
// by bubblewrap, the way a worker without the step makes them. The tests
// of what the mounts enforce run through both.
func mounters(t *testing.T, sb Sandbox) []mounter {
	t.Helper()
	bw := sb.(*bwrapSandbox)
	plain := *bw
	plain.step = nil
	out := []mounter{{"bwrap-mounts", &plain}}
	if mountInitBuilt {
		require.NotNil(t, bw.step, "this binary carries the mount step, but the probe turned it off: %s", bw.why)
		out = append(out, mounter{"mount-step", bw})
	}
	return out
}

// stepSandbox is the real sandbox with the mount step on.
func stepSandbox(t *testing.T) *bwrapSandbox {
	t.Helper()
	if !mountInitBuilt {
		t.Skip("built without cgo: this binary has no mount step")
	}
	sb := newBwrap(t, Config{}).(*bwrapSandbox)
	require.NotNil(t, sb.step, "the probe turned the mount step off: %s", sb.why)
	return sb
}

// The command the step runs has no privilege left: no capability in any
// set, no new privileges, the seccomp filter loaded; and it gets the
// environment the profile gives it (the bwrap process gets none).
func TestMountStepLeavesTheCommandNoPrivilege(t *testing.T) {
	sb := stepSandbox(t)
	ws := maskTree(t, "secret", "src/a.go")
	res, err := sb.Run(context.Background(), Request{Workspace: ws, Timeout: 20 * time.Second,
		ReadDeny: []string{"secret"}, Argv: bash(`grep -E '^(Cap[A-Za-z]+|NoNewPrivs|Seccomp):' /proc/self/status; echo "HOME=$HOME PWD=$PWD"; env | grep -c . `)})
	require.NoError(t, err)
	require.Zero(t, res.ExitCode, res.Stderr)
	for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		assert.Regexp(t, regexp.MustCompile(`(?m)^`+set+`:\s+0+$`), res.Stdout, "capability set %s", set)
	}
	assert.Regexp(t, `(?m)^NoNewPrivs:\s+1$`, res.Stdout)
	assert.Regexp(t, `(?m)^Seccomp:\s+2$`, res.Stdout, "the seccomp filter is loaded")
	assert.Contains(t, res.Stdout, "HOME="+sbHome+" PWD="+ws)
}

// What the step mounted cannot be undone from inside: not unmounted (the
// command has no capability, and seccomp refuses the calls), not by a new
// user or mount namespace, not by moving a masked file's directory away.
func TestMountStepMountsCannotBeUndone(t *testing.T) {
	sb := stepSandbox(t)
	cases := []struct{ name, script string }{
		{"umount", "umount secret/k; cat secret/k"},
		{"lazy umount", "umount -l secret/k; cat secret/k"},
		{"umount the pin", "umount -l secret; cat secret/k"},
		{"new user namespace", "unshare -Urm sh -c 'umount -l secret/k; cat secret/k'"},
		{"new mount namespace", "unshare -m sh -c 'umount -l secret/k; cat secret/k'"},
		{"move the directory away", "mv secret s2; cat s2/k"},
		{"bind over the mask", "mount --bind src/a.go secret/k; cat secret/k"},
		{"python umount2", `python3 -c 'import ctypes; l=ctypes.CDLL(None); print(l.umount2(b"secret/k", 2))'; cat secret/k`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := maskTree(t, "secret/k", "src/a.go")
			res, err := sb.Run(context.Background(), Request{Workspace: ws, Timeout: 20 * time.Second,
				ReadDeny: []string{"secret/k"}, Argv: bash(tc.script)})
			require.NoError(t, err)
			assert.NotContains(t, res.Stdout, "content of secret/k", "stderr: %s", res.Stderr)
			b, err := os.ReadFile(filepath.Join(ws, "secret/k"))
			require.NoError(t, err)
			assert.Contains(t, string(b), "content of secret/k", "the masked file is untouched on the host")
		})
	}
}

// A mount the step cannot make stops the run before the command: a path
// of the plan that became a symbolic link since it was planned is refused,
// not followed, and the command never runs.
func TestMountStepFailsClosed(t *testing.T) {
	sb := stepSandbox(t)
	ws := maskTree(t, "secret", "elsewhere")
	var undo cleanups
	defer undo.run()
	req := Request{Workspace: ws, Argv: bash("echo ran > ran.txt"), ReadDeny: []string{"secret"}}
	p, err := sb.planProfile(ws, req, &undo)
	require.NoError(t, err)
	require.True(t, p.Step)
	// The plan names secret; swap it for a link, as a racing host process
	// could.
	require.NoError(t, os.Remove(filepath.Join(ws, "secret")))
	require.NoError(t, os.Symlink("elsewhere", filepath.Join(ws, "secret")))
	err = runStep(t, sb, p, &undo, func(f *runFiles) { require.NoError(t, f.feedPlan(p)) })
	assert.Contains(t, err.Error(), "mount over "+filepath.Join(ws, "secret"))
	assert.NoFileExists(t, filepath.Join(ws, "ran.txt"), "the command must not run")
}

// runStep runs p's bwrap command line, feeding the step its plan with
// feed once bubblewrap has started, as run does, and returns the step's
// failure, which the callers expect.
func runStep(t *testing.T, sb *bwrapSandbox, p bwrapProfile, undo *cleanups, feed func(*runFiles)) error {
	t.Helper()
	files, err := openRunFiles(p, sb.step)
	require.NoError(t, err)
	defer files.close()
	cmd, _, start, err := sb.command(bwrapArgs(p), p.bwrapEnv(), files.child(), undo)
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, start())
	files.closeChild()
	feed(files)
	_ = cmd.Wait()
	err = stepFailed(files.stepR)
	require.Error(t, err, "stderr: %s", stderr.String())
	return err
}

// The step runs the command only on a whole plan, one that ends with its
// end record: the host writes the plan while bubblewrap starts, and one
// cut short (a planning that failed, a writer gone mid-way) must not pass
// for a plan with fewer mounts, nor must one that goes on past its end.
func TestMountStepNeedsTheWholePlan(t *testing.T) {
	sb := stepSandbox(t)
	ws := maskTree(t, "secret/k")
	secret := filepath.Join(ws, "secret/k")
	tests := []struct{ name, plan, want string }{
		{"nothing", "", "the mount plan is missing or incomplete"},
		{"no end", "F" + secret + "\x00", "the mount plan is missing or incomplete"},
		{"cut inside a record", "F" + secret + "\x00Z\x00F" + secret, "the mount plan is missing or incomplete"},
		{"records after the end", "Z\x00F" + secret + "\x00Z\x00", "malformed mount plan"},
		{"an end with a path", "F" + secret + "\x00Zx\x00", "the mount plan is missing or incomplete"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var undo cleanups
			defer undo.run()
			req := Request{Workspace: ws, Argv: bash("cat secret/k > ran.txt")}
			p, err := sb.planProfile(ws, req, &undo)
			require.NoError(t, err)
			err = runStep(t, sb, p, &undo, func(f *runFiles) {
				_, err := io.WriteString(f.planW, tc.plan)
				require.NoError(t, err)
				f.dropPlan()
			})
			assert.Contains(t, err.Error(), tc.want)
			assert.NoFileExists(t, filepath.Join(ws, "ran.txt"), "the command must not run")
		})
	}
}

// Both ways of starting the command set the same rlimits: prlimit in front
// of it, or the step before it execs the command.
func TestSandboxSetsTheLimits(t *testing.T) {
	cfg := Config{CPUSeconds: 7, MemoryBytes: 300 << 20, FileSizeBytes: 5 << 20, NProc: 77}
	want := map[string][2]string{
		"Max core file size": {"0", "0"},
		"Max cpu time":       {"7", "8"},
		"Max address space":  {fmt.Sprint(300 << 20), fmt.Sprint(300 << 20)},
		"Max file size":      {fmt.Sprint(5 << 20), fmt.Sprint(5 << 20)},
		"Max processes":      {"77", "77"},
	}
	for _, m := range mounters(t, newBwrap(t, cfg)) {
		t.Run(m.name, func(t *testing.T) {
			res, err := m.sb.Run(context.Background(), Request{Workspace: t.TempDir(), Argv: []string{"cat", "/proc/self/limits"}, Timeout: 20 * time.Second})
			require.NoError(t, err)
			require.Zero(t, res.ExitCode, res.Stderr)
			for name, lim := range want {
				assert.Regexp(t, `(?m)^`+name+`\s+`+lim[0]+`\s+`+lim[1]+`\s`, res.Stdout, name)
			}
		})
	}
}

// A command that cannot be executed is the command's result (the shell's
// exit codes, the reason on stderr), not a failed sandbox, with either
// way of starting it.
func TestSandboxCommandNotFound(t *testing.T) {
	for _, m := range mounters(t, newBwrap(t, Config{})) {
		t.Run(m.name, func(t *testing.T) {
			res, err := m.sb.Run(context.Background(), Request{Workspace: t.TempDir(), Argv: []string{"custos-no-such-program"}, Timeout: 20 * time.Second})
			require.NoError(t, err)
			assert.Equal(t, 127, res.ExitCode)
			assert.Contains(t, res.Stderr, "custos-no-such-program")
		})
	}
}
