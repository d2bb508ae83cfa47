package sandbox

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/custos-dev/custos/sandbox/provision"
)

// BenchmarkProvision is what toolchain provisioning adds to a command
// (the cache mounts should cost under 1 ms): planning alone
// (detection, the workspace cache's lock, the git identity, go.mod), and
// `true` through Sandbox.Run in a workspace of every toolchain, bare
// (detection off, "toolchains": []: the workspace's own cache, which also
// holds the placeholders' pool, and the git identity stay) and
// provisioned (every toolchain's read-only host caches and settings on
// top), taken in turn so that a change of load between them does
// not pass for a cost; "added-ms" is the difference of their medians.
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
			pr, err := sb.prov.Plan(ws, provision.Want{}, nil)
			if err != nil {
				b.Fatal(err)
			}
			sb.prov.Release(pr)
		}
	})
	run := func(b *testing.B, bare bool) time.Duration {
		req := Request{Workspace: ws, Argv: []string{"true"}}
		if bare {
			req.Toolchains, req.ToolchainsSet = []string{}, true
		}
		t0 := time.Now()
		res, err := sb.Run(ctx, req)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%v %+v", err, res)
		}
		return time.Since(t0)
	}
	b.Run("run-bare-vs-provisioned", func(b *testing.B) {
		var bare, prov []time.Duration
		for range 20 * b.N {
			bare = append(bare, run(b, true))
			prov = append(prov, run(b, false))
		}
		slices.Sort(bare)
		slices.Sort(prov)
		mb, mp := float64(bare[len(bare)/2]), float64(prov[len(prov)/2])
		b.ReportMetric(mb/1e6, "bare-ms")
		b.ReportMetric(mp/1e6, "provisioned-ms")
		b.ReportMetric((mp-mb)/1e6, "added-ms")
	})
}
