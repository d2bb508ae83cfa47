//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkGuardedRun20k is a whole guarded Bash call in a git repository
// of 20,000 files (2,000 directories of 10), with the workspace overlay and
// without it (the command writing to the workspace, the check walking the
// whole workspace after it):
//
//   - write: a command that writes a file and nothing git reads, which the
//     overlay applies without the check's walk;
//   - commit: `git commit`, which writes into .git, so the check runs on the
//     merged view, in its helper, before anything is applied.
func BenchmarkGuardedRun20k(b *testing.B) {
	sb := newBwrap(b, Config{}).(*bwrapSandbox)
	if !sb.overlay {
		b.Fatalf("the workspace overlay is off: %s", sb.why)
	}
	ws := mustEvalB(b, b.TempDir())
	for d := range 2000 {
		dir := filepath.Join(ws, fmt.Sprintf("pkg%02d", d/100), fmt.Sprintf("m%02d", d/10%10), fmt.Sprintf("d%d", d%10))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 10 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", f)), []byte("package x\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=u", "-c", "user.email=u@x.invalid", "commit", "-qm", "base"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = ws
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatal(err, string(out))
		}
	}
	direct := *sb
	direct.overlay = false
	ctx := context.Background()
	for _, c := range []struct{ name, script string }{
		{"write", "echo x >> notes.txt"},
		{"commit", "git -c user.name=u -c user.email=u@x.invalid commit -q --allow-empty -m x"},
	} {
		for _, v := range []struct {
			name string
			sb   *bwrapSandbox
		}{{"overlay", sb}, {"direct", &direct}} {
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				for b.Loop() {
					res, err := v.sb.Run(ctx, Request{Workspace: ws, Argv: []string{"/bin/sh", "-c", c.script}})
					if err != nil || res.ExitCode != 0 || len(res.HostConfig) > 0 {
						b.Fatalf("%v %+v", err, res)
					}
				}
			})
		}
	}
}
