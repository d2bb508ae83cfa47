package sandbox

import (
	"context"
	"testing"
)

// BenchmarkProvision is what toolchain provisioning adds to a command
// (issue 16 §5: under 1 ms): planning alone (detection, the workspace
// cache's lock, the git identity, go.mod), and `true` through Sandbox.Run
// in a workspace of every toolchain, provisioned and bare, side by side.
func BenchmarkProvision(b *testing.B) {
	sb := newBwrap(b, Config{}).(*bwrapSandbox)
	ws := b.TempDir()
	for _, f := range []string{"go.mod", "package.json", "Cargo.toml", "pom.xml", "pyproject.toml"} {
		write(b, ws, f, "\n")
	}
	for _, d := range []string{"cmd", "internal", "docs", "web", "scripts", "api", "pkg", "test"} {
		write(b, ws, d+"/README", "\n")
	}
	ctx := context.Background()
	b.Run("plan", func(b *testing.B) {
		for b.Loop() {
			pr, err := sb.prov.plan(ws, Request{Workspace: ws})
			if err != nil {
				b.Fatal(err)
			}
			sb.prov.release(pr)
		}
	})
	for _, c := range []struct {
		name string
		bare bool
	}{{"run-bare", true}, {"run-provisioned", false}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				res, err := sb.Run(ctx, Request{Workspace: ws, Argv: []string{"true"}, bare: c.bare})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%v %+v", err, res)
				}
			}
		})
	}
}
