package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// change records, then makes, one call's replacement of each of rels
// with data (as Write and Edit do it: a new file renamed over the old).
func change(tb testing.TB, s Store, ws string, turn int, rels []string, data func(rel string) string) {
	tb.Helper()
	r, err := s.Start(Call{Job: "bench", Turn: turn, Call: fmt.Sprintf("c%d", turn), Tool: "Write"}, ws)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	for _, rel := range rels {
		if err := r.Before(rel); err != nil {
			tb.Fatal(err)
		}
		if err := r.AfterData(rel, []byte(data(rel)), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if err := r.Commit(); err != nil {
		tb.Fatal(err)
	}
	for _, rel := range rels {
		p := filepath.Join(ws, rel)
		if err := os.WriteFile(p+".new", []byte(data(rel)), 0o644); err != nil {
			tb.Fatal(err)
		}
		if err := os.Rename(p+".new", p); err != nil {
			tb.Fatal(err)
		}
	}
	if err := r.Done(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkRewind1000 is a rewind of 1,000 changed files: the plan (each
// file's state checked against what the job left) and putting them back
// (the goal: under 2 s).
//
//	go test ./checkpoint -run '^$' -bench Rewind1000 -benchtime 5x
func BenchmarkRewind1000(b *testing.B) {
	ws, s := b.TempDir(), Store{Dir: b.TempDir()}
	fill(b, ws, 1000, "base")
	var rels []string
	for i := range 1000 {
		rels = append(rels, fmt.Sprintf("d%d/f%d.txt", i/100, i))
	}
	for i := range b.N {
		b.StopTimer()
		change(b, s, ws, 1, rels, func(rel string) string { return fmt.Sprintf("%s changed %d\n", rel, i) })
		b.StartTimer()
		p, err := s.PlanRewind("bench", ws, 0)
		if err != nil || len(p.Conflicts) > 0 {
			b.Fatal(err, p.Conflicts)
		}
		done, err := s.ApplyRewind(ws, p, false)
		if err != nil || done.Restored != 1000 {
			b.Fatal(err, done)
		}
	}
}

// BenchmarkStore100Turns is the checkpoint store of a 100-turn job on a
// repository of 200 source files of 4 KB: each turn edits a line in 3 of
// them, every tenth also writes 5 new files. It reports the store's size
// (objects and records) against the bytes the job's calls wrote.
//
//	go test ./checkpoint -run '^$' -bench Store100Turns -benchtime 1x
func BenchmarkStore100Turns(b *testing.B) {
	for range b.N {
		ws, s := b.TempDir(), Store{Dir: b.TempDir()}
		line := "\tfmt.Println(\"a line of code, as a source file has them\")\n"
		src := map[string]string{}
		for i := range 200 {
			rel := fmt.Sprintf("src%d.go", i)
			src[rel] = fmt.Sprintf("// file %d\n", i) + strings.Repeat(line, 66)
			if err := os.WriteFile(filepath.Join(ws, rel), []byte(src[rel]), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		var written int64
		for turn := 1; turn <= 100; turn++ {
			rels := []string{fmt.Sprintf("src%d.go", turn%200), fmt.Sprintf("src%d.go", (turn*7)%200), fmt.Sprintf("src%d.go", (turn*13)%200)}
			if turn%10 == 0 {
				for k := range 5 {
					rels = append(rels, fmt.Sprintf("new%d_%d.go", turn, k))
				}
			}
			change(b, s, ws, turn, rels, func(rel string) string {
				if _, ok := src[rel]; !ok {
					src[rel] = fmt.Sprintf("// new file %s\n", rel) + strings.Repeat(line, 20)
				}
				src[rel] = strings.Replace(src[rel], line, fmt.Sprintf("\tfmt.Println(%d)\n", turn), 1)
				written += int64(len(src[rel]))
				return src[rel]
			})
		}
		var store int64
		_ = filepath.WalkDir(s.Dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					store += fi.Size()
				}
			}
			return nil
		})
		b.ReportMetric(float64(store)/1024, "KiB-store")
		b.ReportMetric(float64(written)/1024, "KiB-written")
		b.ReportMetric(float64(store)/float64(written), "store/written")
	}
}
