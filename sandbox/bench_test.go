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
		for b.Loop() {
			runBareBwrap(b, sb, ws)
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

// runBareBwrap runs `true` under bwrap with the profile Run would use, but
// without Run's plumbing (prlimit, cgroup, status reading): the baseline of
// the sandbox benchmarks. The protected-path placeholders are made and
// removed as Run does, so every iteration sees the same workspace.
func runBareBwrap(b *testing.B, sb *bwrapSandbox, ws string) {
	passwd, group := identityFiles()
	status, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer status.Close()
	pw, err := dataPipe(passwd)
	if err != nil {
		b.Fatal(err)
	}
	defer pw.Close()
	gr, err := dataPipe(group)
	if err != nil {
		b.Fatal(err)
	}
	defer gr.Close()
	prot := planProtected(ws)
	if err := prot.prepare(); err != nil {
		b.Fatal(err)
	}
	defer prot.removePlaceholders()
	p := bwrapProfile{Workspace: ws, TmpSize: sb.cfg.TmpSizeBytes, System: systemMounts(), Protected: prot.mounts, Command: []string{"true"}}
	cmd := exec.Command(sb.bwrap, bwrapArgs(p)...)
	cmd.ExtraFiles = []*os.File{status, pw, gr}
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatal(err, string(out))
	}
}
