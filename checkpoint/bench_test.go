package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fill writes n files of about 100 bytes under dir, 100 to a directory,
// each ending in tag.
func fill(tb testing.TB, dir string, n int, tag string) {
	tb.Helper()
	for i := range n {
		d := filepath.Join(dir, fmt.Sprintf("d%d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		data := fmt.Sprintf("%090d %s\n", i, tag)
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.txt", i)), []byte(data), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkRecordUpper is the recording of an upper layer of 1,000
// changed files, by phase: the walk with both sides stored, and the
// commit (sync and record).
func BenchmarkRecordUpper(b *testing.B) {
	ws, s := b.TempDir(), Store{Dir: b.TempDir()}
	fill(b, ws, 1000, "base")
	var walk, commit time.Duration
	for i := range b.N {
		upper := b.TempDir()
		fill(b, upper, 1000, fmt.Sprint(i))
		t0 := time.Now()
		r, err := s.Start(Call{Job: "bench", Turn: i + 1, Call: "c", Tool: "Bash"}, ws)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.FromUpper(upper); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := r.Commit(); err != nil {
			b.Fatal(err)
		}
		walk, commit = walk+t1.Sub(t0), commit+time.Since(t1)
		r.Close()
	}
	b.ReportMetric(float64(walk.Milliseconds())/float64(b.N), "ms-walk/op")
	b.ReportMetric(float64(commit.Milliseconds())/float64(b.N), "ms-commit/op")
}
