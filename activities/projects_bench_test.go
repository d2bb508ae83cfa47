package activities

import (
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/sandbox"
)

// BenchmarkProjectTests times real projects' own test commands the way a
// job runs them, a Bash call in a running worker (the Bash activity, its
// sandbox and its checks after the command), against the same command on the
// host, in turn, in one run: the figure the sandbox is held to (warm, within
// 1.2× of the host) on the path every Bash call of a job takes.
// scripts/bench-projects.sh times whole `starter sandbox exec` processes and
// the peers; a whole process also pays the start of custos' binary, which a
// worker pays once.
//
// CUSTOS_BENCH_PROJECTS names the projects' directories (space-separated),
// prepared as that script says: their dependencies already in the host's
// caches, no network needed. Each is copied, the copy's command is run once
// on the host and once in the sandbox to warm both, and then b.N times
// each, in turn. The command is the script's: go test -count=1 ./... for a
// go.mod, npm test for a package.json, python3 -m unittest for a
// pyproject.toml or setup.py, make test for a Makefile. A run that fails
// fails the benchmark, with its output.
//
//	CUSTOS_BENCH_PROJECTS="/work/bench-projects/objx /work/bench-projects/jsmn" \
//	  go test ./activities -run '^$' -bench ProjectTests -benchtime 5x
func BenchmarkProjectTests(b *testing.B) {
	dirs := strings.Fields(os.Getenv("CUSTOS_BENCH_PROJECTS"))
	if len(dirs) == 0 {
		b.Skip("CUSTOS_BENCH_PROJECTS names no project (see the benchmark's comment)")
	}
	sb, err := sandbox.New(sandbox.Config{FailIfUnavailable: true, CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sandbox.WaitIdle(sb) })
	tools := &Tools{Sandbox: sb, Logger: slog.New(slog.DiscardHandler)}
	for _, dir := range dirs {
		command := projectTestCommand(b, dir)
		b.Run(filepath.Base(dir), func(b *testing.B) {
			ws := filepath.Join(b.TempDir(), filepath.Base(dir))
			if out, err := exec.Command("cp", "-a", dir, ws).CombinedOutput(); err != nil {
				b.Fatalf("copy %s: %v\n%s", dir, err, out)
			}
			host := func() time.Duration {
				cmd := exec.Command("bash", "-c", command)
				// The toolchain the sandbox picks (Go's default), not
				// one a GOTOOLCHAIN of the caller's switches to.
				cmd.Dir, cmd.Env = ws, append(os.Environ(), "GOTOOLCHAIN=auto")
				start := time.Now()
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("on the host, %s: %v\n%s", command, err, out)
				}
				return time.Since(start)
			}
			input, _ := json.Marshal(bashInput{Command: command})
			job := func() time.Duration {
				start := time.Now()
				res, err := tools.Bash(b.Context(), api.ToolRequest{Workspace: ws, Input: input})
				took := time.Since(start)
				if err != nil || res.IsError {
					b.Fatalf("in the sandbox, %s: %v\n%s", command, err, res.Output)
				}
				return took
			}
			host()
			job()
			var hosts, jobs []time.Duration
			b.ResetTimer()
			for range b.N {
				hosts = append(hosts, host())
				jobs = append(jobs, job())
			}
			b.StopTimer()
			h, j := median(hosts), median(jobs)
			b.ReportMetric(h.Seconds(), "host-s")
			b.ReportMetric(j.Seconds(), "job-s")
			b.ReportMetric(j.Seconds()/h.Seconds(), "job-x-host")
		})
	}
}

// projectTestCommand is the test command bench-projects.sh would run in dir.
func projectTestCommand(b *testing.B, dir string) string {
	has := func(names ...string) bool {
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
				return true
			}
		}
		return false
	}
	switch {
	case has("go.mod"):
		return "go test -count=1 ./..."
	case has("package.json"):
		return "npm test"
	case has("pyproject.toml", "setup.py"):
		return "/usr/bin/python3 -m unittest"
	case has("Makefile", "makefile", "GNUmakefile"):
		return "make test"
	}
	b.Fatalf("no test command known for %s", dir)
	return ""
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
