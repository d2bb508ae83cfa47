package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/lsp"
	"github.com/custos-dev/custos/sandbox"
)

// The LSP tool on this repository against gopls driven directly: the
// tool's path is the activity (argument check, path guard, deny rules,
// server in the sandbox, filtered and rendered answer); "direct" is the
// same gopls over the same framing on the host, with no pool, sandbox or
// filter. Both ask about resolveTarget where read.go calls it.
//
//	go test -run '^$' -bench LSP -benchtime 50x ./activities

// repoRoot is this repository.
func repoRoot(b *testing.B) string {
	_, file, _, _ := runtime.Caller(0)
	root, err := filepath.EvalSymlinks(filepath.Dir(filepath.Dir(file)))
	if err != nil {
		b.Fatal(err)
	}
	return root
}

// benchTarget is the position asked about: the call of resolveTarget in
// activities/read.go, 1-based as the model gives it.
func benchTarget(b *testing.B, root string) (path, text string, line, col int) {
	path = filepath.Join(root, "activities", "read.go")
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	text = string(raw)
	for i, l := range strings.Split(text, "\n") {
		if j := strings.Index(l, "resolveTarget("); j >= 0 {
			return path, text, i + 1, len([]rune(l[:j])) + 1
		}
	}
	b.Fatal("resolveTarget not found in read.go")
	return
}

// benchSandbox is a sandbox whose workspace caches outlive the run, as a
// worker's do: the sandboxed gopls fills its module cache (from the
// host's, through the file proxy) once, not on every run.
func benchSandbox(b *testing.B) sandbox.Sandbox {
	sb, err := sandbox.New(sandbox.Config{FailIfUnavailable: true, CacheDir: filepath.Join(os.TempDir(), "custos-lsp-bench-cache")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sandbox.WaitIdle(sb) })
	return sb
}

// lspWarmUp is how long both servers are asked before measuring: long
// enough for gopls' first workspace-wide load and diagnosis, which runs
// in the background after its first answers, to end.
const lspWarmUp = 30 * time.Second

func BenchmarkLSP(b *testing.B) {
	root := repoRoot(b)
	path, text, line, col := benchTarget(b, root)
	sb := benchSandbox(b)
	tools := &Tools{Sandbox: sb, LSPServers: lsp.NewPool(SandboxStarter(sb))}
	b.Cleanup(tools.LSPServers.Close)
	direct := lsp.NewPool(lsp.HostStarter)
	b.Cleanup(direct.Close)
	c := directClient(b, direct, root)
	pos, _ := lsp.Convert(text, line, col)
	ops := []string{"definition", "references"}
	input := func(op string) api.ToolRequest {
		return api.ToolRequest{Workspace: root, Input: json.RawMessage(fmt.Sprintf(
			`{"operation":%q,"file_path":"activities/read.go","line":%d,"column":%d}`, op, line, col))}
	}
	// Warm both before measuring either: started, the packages loaded, the
	// references' reverse dependencies checked and the first
	// workspace-wide diagnosis over, so no server's background work falls
	// into a measurement.
	for start := time.Now(); time.Since(start) < lspWarmUp; {
		for _, op := range ops {
			toolCall(b, tools, input(op))
			directCall(b, c, op, path, text, pos)
		}
	}
	// Each iteration makes one call each way, in turns, timed apart: on
	// a machine others share, load shifts within seconds, and two runs
	// one after the other would compare the load as much as the paths.
	for _, op := range ops {
		// Medians, not means: a neighbour's build stalls a few calls of
		// either path by tens of milliseconds.
		b.Run(op, func(b *testing.B) {
			var tool, direct []time.Duration
			for b.Loop() {
				t0 := time.Now()
				toolCall(b, tools, input(op))
				t1 := time.Now()
				directCall(b, c, op, path, text, pos)
				tool, direct = append(tool, t1.Sub(t0)), append(direct, time.Since(t1))
			}
			t, d := median(tool), median(direct)
			b.ReportMetric(float64(t.Microseconds())/1000, "tool-p50-ms")
			b.ReportMetric(float64(d.Microseconds())/1000, "direct-p50-ms")
			b.ReportMetric(float64(t)/float64(d), "tool/direct")
		})
	}
}

// BenchmarkLSPCold is the first answer of a new server: start, handshake,
// loading the packages, answering (gopls' own file cache stays warm, as it
// does on a worker between restarts).
func BenchmarkLSPCold(b *testing.B) {
	root := repoRoot(b)
	path, text, line, col := benchTarget(b, root)
	sb := benchSandbox(b)
	input := json.RawMessage(fmt.Sprintf(`{"operation":"definition","file_path":"activities/read.go","line":%d,"column":%d}`, line, col))
	b.Run("tool", func(b *testing.B) {
		for b.Loop() {
			tools := &Tools{Sandbox: sb, LSPServers: lsp.NewPool(SandboxStarter(sb))}
			toolCall(b, tools, api.ToolRequest{Workspace: root, Input: input})
			tools.LSPServers.Close()
		}
	})
	b.Run("direct", func(b *testing.B) {
		pos, _ := lsp.Convert(text, line, col)
		for b.Loop() {
			pool := lsp.NewPool(lsp.HostStarter)
			directCall(b, directClient(b, pool, root), "definition", path, text, pos)
			pool.Close()
		}
	})
}

func toolCall(b *testing.B, tools *Tools, req api.ToolRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := tools.LSP(ctx, req)
	if err != nil || res.IsError || !strings.Contains(res.Output, "activities/tools.go:") {
		b.Fatalf("LSP = %+v, %v", res, err)
	}
}

func directClient(b *testing.B, pool *lsp.Pool, root string) *lsp.Client {
	c, err := pool.Client(context.Background(), lsp.Spec{Argv: lsp.Defaults()["go"], Workspace: root})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func directCall(b *testing.B, c *lsp.Client, op, path, text string, pos lsp.Position) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.Sync(path, text); err != nil {
		b.Fatal(err)
	}
	var locs []lsp.Location
	var err error
	if op == "definition" {
		locs, err = c.Definition(ctx, path, pos)
	} else {
		locs, err = c.References(ctx, path, pos)
	}
	if err != nil || len(locs) == 0 {
		b.Fatalf("%s = %v, %v", op, locs, err)
	}
}
