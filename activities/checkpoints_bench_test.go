package activities

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/checkpoint"
)

// benchRepo fills ws with files files of about 100 bytes, 100 to a
// directory (d0/f0.txt … ), as a repository's tree.
func benchRepo(b *testing.B, ws string, files int) {
	b.Helper()
	line := strings.Repeat("x", 90) + "\n"
	for i := range files {
		d := filepath.Join(ws, fmt.Sprintf("d%d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.txt", i)), []byte(line), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckpointBash is what recording adds to a Bash call that
// changes 1,000 files of a 20,000-file repository: the same command with
// and without a checkpoint, in turn, in one run (the goal: 5 % or less).
// The background finalizing of the record is not the call's time; it is
// waited for between calls, and reported (ms-finalize/op).
//
//	go test ./activities -run '^$' -bench CheckpointBash -benchtime 10x
func BenchmarkCheckpointBash(b *testing.B) {
	sb := realSandbox(&testing.T{})
	tools := &Tools{Sandbox: sb, Logger: slog.New(slog.DiscardHandler)}
	ws, store := b.TempDir(), b.TempDir()
	b.Cleanup(checkpoint.Wait)
	benchRepo(b, ws, 20000)
	var finalize time.Duration
	run := func(n int, record bool) time.Duration {
		cmd := fmt.Sprintf(`for i in $(seq 0 999); do echo %d >> d$((i/100))/f$i.txt; done`, n)
		req := api.ToolRequest{JobID: "bench", CallID: fmt.Sprintf("c%d", n), Turn: n, Workspace: ws,
			Input: json.RawMessage(fmt.Sprintf(`{"command":%q}`, cmd))}
		if record {
			req.Checkpoints = store
		}
		start := time.Now()
		res, err := tools.Bash(b.Context(), req)
		if err != nil || res.IsError {
			b.Fatalf("%v %s", err, res.Output)
		}
		took := time.Since(start)
		// The record's finalizing goes on after the call returns: waited
		// for here, outside the call's time, so that it does not slow
		// the next call down.
		t0 := time.Now()
		checkpoint.Wait()
		finalize += time.Since(t0)
		return took
	}
	run(0, false) // warm
	run(1, true)
	var off, on time.Duration
	finalize = 0
	b.ResetTimer()
	for i := range b.N {
		off += run(2*i+2, false)
		on += run(2*i+3, true)
	}
	b.ReportMetric(float64(off.Milliseconds())/float64(b.N), "ms-off/op")
	b.ReportMetric(float64(on.Milliseconds())/float64(b.N), "ms-on/op")
	b.ReportMetric(100*(float64(on)/float64(off)-1), "%-added")
	b.ReportMetric(float64(finalize.Milliseconds())/float64(b.N), "ms-finalize/op")
}

// BenchmarkCheckpointFileTools is what recording adds to a Write and an
// Edit of a 10 KB file, with and without a checkpoint, in turn.
//
//	go test ./activities -run '^$' -bench CheckpointFileTools -benchtime 200x
func BenchmarkCheckpointFileTools(b *testing.B) {
	tools := &Tools{Logger: slog.New(slog.DiscardHandler)}
	for _, tool := range []string{api.WriteActivity, api.EditActivity} {
		b.Run(tool, func(b *testing.B) {
			ws, store := b.TempDir(), b.TempDir()
			body := strings.Repeat("a line of the file, as code has them\n", 280)
			if err := os.WriteFile(filepath.Join(ws, "f.txt"), []byte(body+"v0\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			call := func(n int, record bool) time.Duration {
				input := fmt.Sprintf(`{"file_path":"f.txt","content":%q}`, fmt.Sprintf("%sv%d\n", body, n))
				fn := tools.Write
				if tool == api.EditActivity {
					input = fmt.Sprintf(`{"file_path":"f.txt","old_string":"v%d\n","new_string":"v%d\n"}`, n-1, n)
					fn = tools.Edit
				}
				req := api.ToolRequest{JobID: "bench", CallID: fmt.Sprintf("c%d", n), Turn: n, Workspace: ws, Input: json.RawMessage(input)}
				if record {
					req.Checkpoints = store
				}
				start := time.Now()
				res, err := fn(b.Context(), req)
				if err != nil || res.IsError {
					b.Fatalf("%v %s", err, res.Output)
				}
				return time.Since(start)
			}
			var off, on time.Duration
			for i := range b.N {
				off += call(2*i+1, false)
				on += call(2*i+2, true)
			}
			b.ReportMetric(float64(off.Microseconds())/float64(b.N), "µs-off/op")
			b.ReportMetric(float64(on.Microseconds())/float64(b.N), "µs-on/op")
			b.ReportMetric(100*(float64(on)/float64(off)-1), "%-added")
		})
	}
}
