package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/lsp"
	"github.com/custos-dev/custos/sandbox"
)

// The LSP tool on this repository against gopls driven directly: the
// tool's path is the activity (argument check, path guard, deny rules,
// server in the sandbox, filtered and rendered answer); "direct" is the
// same gopls over the same client code on the host, with no pool,
// sandbox or filter. Both ask about toolkit.ResolveTarget where read.go calls it
// once both servers have loaded and diagnosed the whole workspace.
//
//	go test -run '^$' -bench 'BenchmarkLSP$' -benchtime 100x -count 6 ./activities
//
// Others editing the repository while it runs make both servers load
// again; a copy measures the servers rather than the edits:
//
//	git archive HEAD | tar -x -C "$DIR"; CUSTOS_LSP_BENCH_WORKSPACE=$DIR go test ...

// repoRoot is the workspace measured: CUSTOS_LSP_BENCH_WORKSPACE, or this
// repository.
func repoRoot(b *testing.B) string {
	root := os.Getenv("CUSTOS_LSP_BENCH_WORKSPACE")
	if root == "" {
		_, file, _, _ := runtime.Caller(0)
		root = filepath.Dir(filepath.Dir(file))
	}
	root, err := filepath.EvalSymlinks(root)
	if err != nil {
		b.Fatal(err)
	}
	return root
}

// benchTarget is the position asked about: the call of toolkit.ResolveTarget in
// activities/read.go, 1-based as the model gives it.
func benchTarget(b *testing.B, root string) (path, text string, line, col int) {
	path = filepath.Join(root, "activities", "read.go")
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	text = string(raw)
	for i, l := range strings.Split(text, "\n") {
		if j := strings.Index(l, "ResolveTarget("); j >= 0 {
			return path, text, i + 1, len([]rune(l[:j])) + 1
		}
	}
	b.Fatal("ResolveTarget not found in read.go")
	return
}

// benchSandbox is a sandbox whose workspace caches outlive the run, as a
// worker's do: the sandboxed gopls fills its module cache (from the
// host's, through the file proxy) and its own cache once, not on every
// run.
func benchSandbox(b *testing.B) sandbox.Sandbox {
	sb, err := sandbox.New(sandbox.Config{FailIfUnavailable: true, CacheDir: filepath.Join(os.TempDir(), "custos-lsp-bench-cache")})
	if err != nil {
		b.Fatal(err)
	}
	return sb
}

// lspWarmCalls is how many times each side answers each operation after
// loading and before any is timed: the first answers fill caches of
// their own (the references' reverse dependencies, the files shown).
const lspWarmCalls = 30

// lspBench is both servers, loaded and warm. They serve every run of
// BenchmarkLSP in the process (-count), as a worker's serve every call,
// and are closed by TestMain.
type lspBench struct {
	root, path, text string
	line, col        int
	pos              lsp.Position
	tools            *Tools
	starts           atomic.Int32 // servers the tool's pool started
	direct           *lsp.Pool
	c                *lsp.Client // gopls on the host
	tc               *lsp.Client // the tool's gopls, in the sandbox
}

var (
	lspBenchMu sync.Mutex
	lspBenched *lspBench
)

// closeLSPBench stops the benchmark's servers, if it started them.
func closeLSPBench() {
	lspBenchMu.Lock()
	defer lspBenchMu.Unlock()
	if lspBenched != nil {
		lspBenched.tools.LSPServers.Close()
		lspBenched.direct.Close()
		sandbox.WaitIdle(lspBenched.tools.Sandbox)
		lspBenched = nil
	}
}

// warmLSP is the benchmark's servers, started and warmed by the first
// run that asks.
func warmLSP(b *testing.B) *lspBench {
	lspBenchMu.Lock()
	defer lspBenchMu.Unlock()
	if lspBenched != nil {
		return lspBenched
	}
	lb := &lspBench{root: repoRoot(b)}
	lb.path, lb.text, lb.line, lb.col = benchTarget(b, lb.root)
	lb.pos, _ = lsp.Convert(lb.text, lb.line, lb.col)
	sb := benchSandbox(b)
	sandboxed := SandboxStarter(sb)
	lb.tools = &Tools{Sandbox: sb, LSPServers: lsp.NewPool(func(ctx context.Context, s lsp.Spec) (*lsp.Process, error) {
		lb.starts.Add(1)
		return sandboxed(ctx, s)
	})}
	lb.direct = lsp.NewPool(lsp.HostStarter)
	t0 := time.Now()
	// The tool's first call starts its server, as a job's would; then
	// both are left to load and diagnose the workspace, side by side.
	lb.paths()[0].do(b, "definition")
	argv, _ := lsp.Command(nil, "go")
	tc, err := lb.tools.LSPServers.Client(context.Background(), lsp.Spec{Argv: argv, Workspace: lb.root})
	if err != nil {
		b.Fatal(err)
	}
	lb.tc = tc
	lb.c = directClient(b, lb.direct, lb.root)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, c := range []*lsp.Client{tc, lb.c} {
		wg.Go(func() { errs[i] = c.Loaded(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	b.Logf("both servers loaded the workspace in %v", time.Since(t0).Round(time.Second))
	// The first answers start work of their own (the references'
	// reverse dependencies): warm, then wait for the quiet.
	for range lspWarmCalls {
		for _, op := range []string{"definition", "references"} {
			for _, call := range lb.paths() {
				call.do(b, op)
			}
		}
	}
	waitQuiet(b)
	b.Logf("both servers warm and quiet after %v", time.Since(t0).Round(time.Second))
	if n := lb.starts.Load(); n != 1 {
		b.Fatalf("the tool's pool started %d servers, want the one loaded", n)
	}
	lspBenched = lb
	return lb
}

// waitQuiet waits until both servers have stopped working in the
// background: loaded is not idle. gopls indexes the module cache
// (GOMODCACHE: the host's for the direct one, the workspace's in the
// sandbox) apart from any progress it reports, and until that index is
// written once, every new gopls does it again, minutes of CPU that slow
// its answers. Quiet is each using under 2 % of a core for 5 s running.
func waitQuiet(b *testing.B) {
	const window, busy = 5 * time.Second, 100 * time.Millisecond
	deadline := time.Now().Add(30 * time.Minute)
	prev, err := goplsCPU()
	if err != nil {
		b.Fatal(err)
	}
	for since := time.Now(); ; {
		time.Sleep(time.Second)
		now, err := goplsCPU()
		if err != nil {
			b.Fatal(err)
		}
		if now.direct-prev.direct > busy || now.sandboxed-prev.sandboxed > busy {
			prev, since = now, time.Now()
		} else if time.Since(since) >= window {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the servers are still busy after 30 minutes (CPU: %+v)", now)
		}
	}
}

// serversCPU is the CPU time the benchmark's gopls processes have used,
// the go commands they ran included.
type serversCPU struct{ direct, sandboxed time.Duration }

// goplsCPU reads it from /proc: the direct gopls is this process's child,
// the sandboxed one runs further down, below bubblewrap.
func goplsCPU() (serversCPU, error) {
	type proc struct {
		ppid  int
		comm  string
		ticks int64
	}
	procs := map[int]proc{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return serversCPU{}, err
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		i := bytes.LastIndexByte(raw, ')')
		if err != nil || i < 0 {
			continue // gone meanwhile
		}
		// After the comm: state ppid ... utime(14) stime cutime cstime.
		f := strings.Fields(string(raw[i+1:]))
		ppid, _ := strconv.Atoi(f[1])
		var ticks int64
		for _, k := range []int{11, 12, 13, 14} {
			n, _ := strconv.ParseInt(f[k], 10, 64)
			ticks += n
		}
		procs[pid] = proc{ppid: ppid, comm: string(raw[bytes.IndexByte(raw, '(')+1 : i]), ticks: ticks}
	}
	var cpu serversCPU
	var direct, sandboxed int
	const tick = 10 * time.Millisecond // USER_HZ, 100 on Linux
	for pid, p := range procs {
		if p.comm != "gopls" {
			continue
		}
		switch {
		case p.ppid == os.Getpid():
			cpu.direct += time.Duration(p.ticks) * tick
			direct++
		case descends(pid, os.Getpid(), func(pid int) int { return procs[pid].ppid }):
			cpu.sandboxed += time.Duration(p.ticks) * tick
			sandboxed++
		}
	}
	if direct != 1 || sandboxed < 1 {
		return cpu, fmt.Errorf("found %d direct and %d sandboxed gopls processes, want 1 and 1", direct, sandboxed)
	}
	return cpu, nil
}

// descends reports whether pid runs below ancestor.
func descends(pid, ancestor int, parent func(int) int) bool {
	for p := parent(pid); p > 1; p = parent(p) {
		if p == ancestor {
			return true
		}
	}
	return false
}

func BenchmarkLSP(b *testing.B) {
	lb := warmLSP(b)
	for _, op := range []string{"definition", "references"} {
		// Each iteration makes one call each way, timed apart, and one
		// more direct: tool, direct, sandboxed, direct. Every call so
		// follows a call to the other server, whose threads have gone
		// to sleep meanwhile: a call right after one to the same server
		// finds it awake and is answered 0.1-0.2 ms sooner. (Turning
		// A B C, B C A, ... had the sandboxed server asked right after
		// the tool two calls in three, the tool after the sandboxed one
		// call in three and the direct one never: its "sandboxed" was
		// mostly awake, the others mostly not.) Interleaved, not runs
		// one after the other: on a machine others share, load shifts
		// within seconds, and two runs would compare the load as much
		// as the paths. Medians, not means: a neighbour's build stalls a
		// few calls of either path by tens of milliseconds.
		b.Run(op, func(b *testing.B) {
			paths := lb.paths()
			took := make([][]time.Duration, len(paths))
			cpu0, err := goplsCPU()
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				for _, k := range []int{0, 2, 1, 2} {
					t0 := time.Now()
					paths[k].do(b, op)
					took[k] = append(took[k], time.Since(t0))
				}
			}
			cpu1, err := goplsCPU()
			if err != nil {
				b.Fatal(err)
			}
			// What each server worked per call, background work included:
			// a server busy with something else shows here.
			ms := float64(time.Millisecond)
			b.ReportMetric(float64(cpu1.sandboxed-cpu0.sandboxed)/float64(len(took[0])+len(took[1]))/ms, "sandboxed-cpu-ms/call")
			b.ReportMetric(float64(cpu1.direct-cpu0.direct)/float64(len(took[2]))/ms, "direct-cpu-ms/call")
			p50 := make([]time.Duration, len(paths))
			for k, p := range paths {
				p50[k] = median(took[k])
				b.ReportMetric(float64(p50[k].Microseconds())/1000, p.name+"-p50-ms")
			}
			b.ReportMetric(float64(p50[0])/float64(p50[2]), "tool/direct")
			b.ReportMetric(0, "ns/op") // several calls and their bookkeeping: not a figure of any
		})
	}
	if n := lb.starts.Load(); n != 1 {
		b.Fatalf("the tool's pool started %d servers, want the one loaded", n)
	}
}

// benchPath is one way of asking: its name in the metrics and the call.
type benchPath struct {
	name string
	do   func(b *testing.B, op string)
}

// paths are the three ways each iteration asks: the tool (the activity,
// its server in the sandbox); that same server asked by its client
// without the activity, which tells the sandbox's cost from the
// activity's; gopls on the host. The tool is first, direct last.
func (lb *lspBench) paths() []benchPath {
	// The model's arguments are made before the clock starts, as the
	// other paths' position is: what the model sends is not the tool's
	// work (formatting them took 1-3 µs of a call).
	input := map[string]json.RawMessage{}
	for _, op := range []string{"definition", "references"} {
		input[op] = json.RawMessage(fmt.Sprintf(
			`{"operation":%q,"file_path":"activities/read.go","line":%d,"column":%d}`, op, lb.line, lb.col))
	}
	return []benchPath{
		{"tool", func(b *testing.B, op string) {
			toolCall(b, lb.tools, api.ToolRequest{Workspace: lb.root, Input: input[op]})
		}},
		{"sandboxed", func(b *testing.B, op string) { directCall(b, lb.tc, op, lb.path, lb.text, lb.pos) }},
		{"direct", func(b *testing.B, op string) { directCall(b, lb.c, op, lb.path, lb.text, lb.pos) }},
	}
}

// BenchmarkLSPCold is the first answer of a new server: start, handshake,
// loading the packages, answering (gopls' own file cache stays warm, as it
// does on a worker between restarts).
func BenchmarkLSPCold(b *testing.B) {
	root := repoRoot(b)
	path, text, line, col := benchTarget(b, root)
	sb := benchSandbox(b)
	b.Cleanup(func() { sandbox.WaitIdle(sb) })
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
	if err != nil || res.IsError || !strings.Contains(res.Output, "activities/toolkit/tools.go:") {
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

// BenchmarkLSPGuards is the activity's own work around the server for
// one definition on this repository, with no server: the path guard and
// Read deny rules on the file asked about, its text, and the result's file
// (toolkit/tools.go) through the guard and the rules, as LSP and its view
// do them. With deny rules as a job has them, anchored ones included
// (each call expands those against the workspace).
//
//	go test ./activities -run '^$' -bench 'BenchmarkLSPGuards' -count 6
func BenchmarkLSPGuards(b *testing.B) {
	root := repoRoot(b)
	result := filepath.Join(root, "activities", "toolkit", "tools.go")
	for _, c := range []struct {
		name string
		deny []string
	}{{"no deny rules", nil}, {"deny rules", []string{".env*", "*.pem", "secrets/**"}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tgt, err := toolkit.ResolveTarget(root, "activities/read.go", false)
				if err != nil {
					b.Fatal(err)
				}
				hide, err := toolkit.NewHider(tgt.WS, c.deny)
				if err != nil {
					b.Fatal(err)
				}
				if msg := toolkit.HiddenTarget("LSP", tgt, hide); msg != "" {
					b.Fatal(msg)
				}
				text, err := readSource(tgt, "activities/read.go")
				if err != nil {
					b.Fatal(err)
				}
				if f := newView(tgt, text, hide).file(result); !f.ok || f.text == "" {
					b.Fatalf("%s not shown", result)
				}
				tgt.Close()
			}
		})
	}
}
