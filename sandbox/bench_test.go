package sandbox

import (
	"context"
	"os"
	"os/exec"
	"testing"
)

// BenchmarkRunTrue compares the cost of `true` through Sandbox.Run (probe
// excluded; includes prlimit, status pipe, generated passwd/group and, as
// root, the pids cgroup), bwrap invoked directly with the same profile, and a
// plain exec.Command.
func BenchmarkRunTrue(b *testing.B) {
	sbAny := newBwrap(b, Config{})
	sb := sbAny.(*bwrapSandbox)
	ws := b.TempDir()
	ctx := context.Background()

	b.Run("sandbox.Run", func(b *testing.B) {
		for b.Loop() {
			res, err := sb.Run(ctx, Request{Workspace: ws, Argv: []string{"true"}})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("%v %+v", err, res)
			}
		}
	})
	b.Run("bwrap-direct", func(b *testing.B) {
		passwd, group := identityFiles()
		for b.Loop() {
			status, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			pw, err := dataPipe(passwd)
			if err != nil {
				b.Fatal(err)
			}
			gr, err := dataPipe(group)
			if err != nil {
				b.Fatal(err)
			}
			// The protected-path placeholders as Run makes and removes them,
			// so every iteration sees the same workspace.
			prot := planProtected(ws)
			if err := prot.prepare(); err != nil {
				b.Fatal(err)
			}
			args := append(sb.profileArgs(ws, false, "", "", 3, 4, 5), "--", "true")
			cmd := exec.Command(sb.bwrap, args...)
			cmd.ExtraFiles = []*os.File{status, pw, gr}
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatal(err, string(out))
			}
			prot.removePlaceholders()
			status.Close()
			pw.Close()
			gr.Close()
		}
	})
	b.Run("exec.Command", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
