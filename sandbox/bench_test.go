package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/custos-dev/custos/sandbox/sysview"
)

// BenchmarkRunTrue is the start-up cost of one Bash call, `true`, side by
// side, in one workspace (10 directories of 30 files):
//
//   - bwrap-unshared-floor: bubblewrap with everything unshared and the
//     host's root read-only, the least a bubblewrap sandbox costs;
//   - bwrap-direct: bubblewrap invoked directly with the exact arguments
//     Sandbox.Run would pass (the same profile: mounts, protected paths,
//     seccomp, prlimit in front of the command), without Run's plumbing;
//   - sandbox.Run: the whole call (profile, pipes, status, the pids cgroup
//     when root), probe excluded;
//   - sandbox.Run-100-deny-rules: the same with 50 Read-deny and 50
//     Edit-deny rules, each naming a file (110 mounts with the pins);
//   - exec.Command: `true` without any sandbox.
//
// Both mount the workspace's overlay (sandbox/hostguard); ratios'
// overlay-ms is what it adds to Run (Run with it, against Run without it).
//
// The last sub-benchmark, ratios, reports the ratios the goals are
// stated in (run-x-direct ≤ 1.2, direct-x-floor ≤ 2, rules-x-none ≤ 1.5)
// and the medians they come from; and, for the stricter reading of the
// first two, bwrap-x-floor (bubblewrap's own run with the exact profile,
// without the planning before it, against the floor) and run-x-bwrap (Run
// against that run alone).
func BenchmarkRunTrue(b *testing.B) {
	sb := newBwrap(b, Config{}).(*bwrapSandbox)
	ws, readDeny, editDeny := denyRulesWorkspace(b)
	ctx := context.Background()
	floor := func(b *testing.B) {
		cmd := exec.Command(sb.bwrap, "--ro-bind", "/", "/", "--unshare-all", "--new-session", "--die-with-parent", "true")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatal(err, string(out))
		}
	}
	var execTimes []time.Duration
	direct := func(b *testing.B) { execTimes = append(execTimes, runBareBwrap(b, sb, ws)) }
	runReq := func(req Request) func(b *testing.B) {
		return func(b *testing.B) {
			res, err := sb.Run(ctx, req)
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("%v %+v", err, res)
			}
		}
	}
	plain := runReq(Request{Workspace: ws, Argv: []string{"true"}})
	// The same call writing straight to the workspace: what the overlay
	// (sandbox/hostguard) costs.
	noOverlay := func(b *testing.B) {
		off := *sb
		off.overlay = false
		res, err := off.Run(ctx, Request{Workspace: ws, Argv: []string{"true"}})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%v %+v", err, res)
		}
	}
	rules := runReq(Request{Workspace: ws, Argv: []string{"true"}, ReadDeny: readDeny, EditDeny: editDeny})
	loop := func(f func(*testing.B)) func(*testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				f(b)
			}
		}
	}
	b.Run("bwrap-unshared-floor", loop(floor))
	b.Run("bwrap-direct", loop(direct))
	b.Run("sandbox.Run", loop(plain))
	b.Run("sandbox.Run-100-deny-rules", loop(rules))
	b.Run("exec.Command", loop(func(b *testing.B) {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}))
	// The ratios, from medians of the five taken in turn (one of each per
	// iteration), so that a machine whose load changes between the
	// sub-benchmarks above still compares like with like. ns/op is twenty
	// rounds of the five.
	b.Run("ratios", func(b *testing.B) {
		fs := []func(*testing.B){floor, direct, plain, rules, noOverlay}
		ds := make([][]time.Duration, len(fs))
		execTimes = nil
		for range 20 * b.N {
			for i, f := range fs {
				t0 := time.Now()
				f(b)
				ds[i] = append(ds[i], time.Since(t0))
			}
		}
		med := make([]float64, len(fs))
		for i, d := range ds {
			slices.Sort(d)
			med[i] = float64(d[len(d)/2])
		}
		b.ReportMetric(med[0]/1e6, "floor-ms")
		b.ReportMetric(med[1]/1e6, "direct-ms")
		b.ReportMetric(med[2]/1e6, "run-ms")
		b.ReportMetric(med[3]/1e6, "rules-ms")
		b.ReportMetric(med[2]/med[1], "run-x-direct")
		b.ReportMetric(med[1]/med[0], "direct-x-floor")
		b.ReportMetric(med[3]/med[2], "rules-x-none")
		b.ReportMetric((med[2]-med[4])/1e6, "overlay-ms")
		// bubblewrap's own run alone, of bwrap-direct: the profile without
		// custos' planning and undoing on the host around it.
		slices.Sort(execTimes)
		bw := float64(execTimes[len(execTimes)/2])
		b.ReportMetric(bw/1e6, "bwrap-ms")
		b.ReportMetric(bw/med[0], "bwrap-x-floor")
		b.ReportMetric(med[2]/bw, "run-x-bwrap")
	})
}

// denyRulesWorkspace is a workspace of 10 directories of 30 files, and 50
// Read-deny and 50 Edit-deny rules, 5 + 5 files of each directory.
func denyRulesWorkspace(b *testing.B) (ws string, readDeny, editDeny []string) {
	ws = mustEvalB(b, b.TempDir())
	for d := 0; d < 10; d++ {
		dir := filepath.Join(ws, fmt.Sprintf("pkg%d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < 30; f++ {
			name := fmt.Sprintf("f%d.go", f)
			if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
			rel := fmt.Sprintf("pkg%d/%s", d, name)
			switch {
			case f < 5:
				readDeny = append(readDeny, rel)
			case f < 10:
				editDeny = append(editDeny, rel)
			}
		}
	}
	return ws, readDeny, editDeny
}

// runBareBwrap runs `true` under bwrap with the exact argument vector Run
// would use (planProfile, bwrapArgs, the same files at the same fds), but
// without Run's plumbing (pids cgroup, status reading, output capture,
// the kill sequence): the baseline of the sandbox benchmarks. What
// planProfile sets up (placeholders) is undone as Run does, so every
// iteration sees the same workspace. It returns how long bwrap itself
// ran, from its start to its end.
func runBareBwrap(b *testing.B, sb *bwrapSandbox, ws string) time.Duration {
	var undo cleanups
	defer undo.run()
	p, err := sb.planProfile(ws, Request{Workspace: ws, Argv: []string{"true"}}, &undo)
	if err != nil {
		b.Fatal(err)
	}
	if sb.overlay {
		// The same overlay as Run's, from the same pool, given back as the
		// merge of its (empty) upper layer leaves it.
		if p.Overlay, err = sb.overlays.Take(sb.cfg.guard(), ws); err != nil {
			b.Fatal(err)
		}
		defer sb.overlays.Give(ws, p.Overlay)
	}
	files, err := openRunFiles(p, sb.step)
	if err != nil {
		b.Fatal(err)
	}
	defer files.close()
	if err := files.feedPlan(p); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(sb.bwrap, bwrapArgs(p)...)
	cmd.Env = p.bwrapEnv()
	cmd.ExtraFiles = files.child()
	t0 := time.Now()
	err = cmd.Start()
	files.closeChild()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
	ran := time.Since(t0)
	if err := stepFailed(files.stepR); err != nil {
		b.Fatal(err)
	}
	return ran
}

// BenchmarkPlanProfile is the host side of a call's start-up, before
// bubblewrap runs: the system mounts (the /etc view, its trees checked
// against their last listing), the masks, the protected paths and the
// toolchains of the 10x30-file workspace; and systemMountsFor alone.
func BenchmarkPlanProfile(b *testing.B) {
	sb := newBwrap(b, Config{}).(*bwrapSandbox)
	ws, _, _ := denyRulesWorkspace(b)
	b.Run("planProfile", func(b *testing.B) {
		for b.Loop() {
			var undo cleanups
			if _, err := sb.planProfile(ws, Request{Workspace: ws, Argv: []string{"true"}}, &undo); err != nil {
				b.Fatal(err)
			}
			undo.run()
		}
	})
	b.Run("systemMounts", func(b *testing.B) {
		for b.Loop() {
			sysview.MountsFor(ws)
		}
	})
}
