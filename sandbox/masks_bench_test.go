package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/custos-dev/custos/sandbox/masks"
)

// BenchmarkRunTrueMasks is the cost of the deny-rule masks: `true` through
// Sandbox.Run with 50 Read-deny and 50 Edit-deny paths in effect (10
// directories of 5 + 5 denied and 20 other files: 110 mounts with the
// pins), the same run without rules, and bare bwrap (the same profile,
// invoked directly). The last sub-benchmark reports the ratios of the
// three, measured in the same run.
func BenchmarkRunTrueMasks(b *testing.B) {
	sb := newBwrap(b, Config{}).(*bwrapSandbox)
	ws := mustEvalB(b, b.TempDir())
	var readDeny, editDeny []string
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
	ctx := context.Background()
	run := func(b *testing.B, req Request) time.Duration {
		for b.Loop() {
			res, err := sb.Run(ctx, req)
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("%v %+v", err, res)
			}
		}
		return b.Elapsed() / time.Duration(b.N)
	}
	var bare, plain, masked time.Duration
	b.Run("bwrap-bare", func(b *testing.B) {
		for b.Loop() {
			runBareBwrap(b, sb, ws)
		}
		bare = b.Elapsed() / time.Duration(b.N)
	})
	b.Run("run-no-rules", func(b *testing.B) {
		plain = run(b, Request{Workspace: ws, Argv: []string{"true"}})
	})
	b.Run("run-50-read-50-edit", func(b *testing.B) {
		masked = run(b, Request{Workspace: ws, Argv: []string{"true"}, ReadDeny: readDeny, EditDeny: editDeny})
		if bare > 0 && plain > 0 {
			b.ReportMetric(float64(masked)/float64(plain), "x-no-rules")
			b.ReportMetric(float64(masked)/float64(bare), "x-bwrap-bare")
			b.ReportMetric(float64(plain)/float64(bare), "no-rules-x-bare")
		}
	})
	// The expansion alone (walk + plan), without running anything.
	b.Run("expand-only", func(b *testing.B) {
		for b.Loop() {
			if _, err := masks.Expand(ws, readDeny, editDeny); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func mustEvalB(b *testing.B, p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		b.Fatal(err)
	}
	return r
}
