package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/custos-dev/custos/sandbox/protect"
)

// BenchmarkProtectedPlan measures the walk that finds protected paths before
// every Bash call: an empty workspace, and a repository with a submodule, a
// nested repository and 2,000 directories within the search depth (plus
// more below it, not visited).
func BenchmarkProtectedPlan(b *testing.B) {
	empty := b.TempDir()
	big := b.TempDir()
	for i := range 20 {
		for j := range 10 {
			for k := range 10 {
				d := filepath.Join(big, fmt.Sprintf("p%d", i), fmt.Sprintf("q%d", j), fmt.Sprintf("r%d", k), "deep", "deeper", "deepest")
				if err := os.MkdirAll(d, 0o755); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for _, d := range []string{".git/hooks", ".git/modules/sub/hooks", "sub", "vendor/lib/.git/hooks", "pkg/.vscode"} {
		if err := os.MkdirAll(filepath.Join(big, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for _, f := range []string{".git/config", ".git/modules/sub/config", ".git/modules/sub/HEAD", "vendor/lib/.git/config"} {
		if err := os.WriteFile(filepath.Join(big, f), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(big, "sub/.git"), []byte("gitdir: ../.git/modules/sub\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, ws string }{{"empty", empty}, {"repo-2000-dirs", big}} {
		b.Run(c.name, func(b *testing.B) {
			var n int
			for b.Loop() {
				p := protect.NewPlan(c.ws, nil)
				if p.Err != nil {
					b.Fatal(p.Err)
				}
				n = len(p.Mounts)
			}
			b.ReportMetric(float64(n), "mounts")
		})
	}
}
