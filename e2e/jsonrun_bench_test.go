package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/jobevents"
)

// benchRunEnv starts the embedded server, a model answering every job with
// one Glob call and then a short answer, and a worker in another process;
// it returns the environment starter needs.
func benchRunEnv(b *testing.B, h demomodel.Handler) []string {
	srv := testenv.StartServer(b, devserver.Options{UIPort: -1})
	ts := embedded(srv)
	_, base := testenv.StartModel(b, h)
	env := append([]string{"TEMPORAL_ADDRESS=" + ts.FrontendAddr(), "XDG_CONFIG_HOME=" + b.TempDir(), "XDG_STATE_HOME=" + testenv.StateDir(), "HOME=" + b.TempDir()}, testenv.ModelEnv(base)...)
	env = append(env, tlsEnv(ts)...)
	startWorkerProc(b, buildWorker(b), env)
	return env
}

// globThenAnswer answers each job: a Glob call, then "done".
func globThenAnswer(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
	if req.Messages[len(req.Messages)-1].Role == openai.ChatMessageRoleTool {
		return demomodel.Say("done: the files are listed"), nil
	}
	return demomodel.Calls(demomodel.ToolCall("g1", "Glob", map[string]any{"pattern": "*"})), nil
}

// BenchmarkRunOnce is one whole `starter run --once` of a two-turn job
// (a Glob call, an answer) against a worker in another process on the
// embedded server, printing for a terminal and as --json: the cost of the
// JSON renderer is the difference.
func BenchmarkRunOnce(b *testing.B) {
	env := benchRunEnv(b, globThenAnswer)
	bin := buildStarter(b)
	ws := testenv.Workspace(b)
	for _, mode := range []string{"terminal", "json"} {
		b.Run(mode, func(b *testing.B) {
			args := []string{"run", "--once", "--workspace", ws}
			if mode == "json" {
				args = append(args, "--json")
			}
			run := func() {
				cmd := exec.Command(bin, append(args, "list the files")...)
				cmd.Env = append(os.Environ(), env...)
				out, err := cmd.CombinedOutput()
				require.NoError(b, err, "%s", out)
				require.Contains(b, string(out), "done: the files are listed")
			}
			run() // warm up: the worker's caches, the sandbox's first start
			for b.Loop() {
				run()
			}
		})
	}
}

// BenchmarkFirstTextAcrossProcesses is the time from the model endpoint
// receiving the answer's request to `starter run --once --json`'s first
// text event, with the worker in another process (its own hub) on the
// embedded server and on Temporal's dev server, the answer 12 chunks 400 ms
// apart: the endpoint's last chunk goes out 4.4 s after the request.
func BenchmarkFirstTextAcrossProcesses(b *testing.B) {
	for _, server := range []string{"embedded", "temporal-dev"} {
		b.Run(server, func(b *testing.B) { benchFirstText(b, server) })
	}
}

func benchFirstText(b *testing.B, server string) {
	var mu sync.Mutex
	var asked time.Time
	h := func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		mu.Lock()
		asked = time.Now()
		mu.Unlock()
		return demomodel.Reply{Message: demomodel.Say(jsonAnswer).Message, ChunkSize: 8, ChunkDelay: jsonChunkDelay}, nil
	}
	var env []string
	if server == "embedded" {
		env = benchRunEnv(b, h)
	} else {
		addr, _ := startDevServer(b)
		_, base := testenv.StartModel(b, h)
		env = append([]string{"TEMPORAL_ADDRESS=" + addr, "XDG_CONFIG_HOME=" + b.TempDir(), "XDG_STATE_HOME=" + testenv.StateDir(), "HOME=" + b.TempDir()}, testenv.ModelEnv(base)...)
		startWorkerProc(b, buildWorker(b), env)
	}
	bin := buildStarter(b)
	ws := testenv.Workspace(b)
	var firsts []time.Duration
	for b.Loop() {
		cmd := exec.Command(bin, "run", "--once", "--json", "--workspace", ws, "answer")
		cmd.Env = append(os.Environ(), env...)
		stdout, err := cmd.StdoutPipe()
		require.NoError(b, err)
		require.NoError(b, cmd.Start())
		var first time.Time
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if e, err := jobevents.Unmarshal(sc.Bytes()); err == nil && first.IsZero() {
				if t, ok := e.(jobevents.Text); ok && t.Text != "" {
					first = time.Now()
				}
			}
		}
		require.NoError(b, cmd.Wait())
		require.False(b, first.IsZero(), "no text event")
		mu.Lock()
		firsts = append(firsts, first.Sub(asked))
		mu.Unlock()
	}
	sort.Slice(firsts, func(i, j int) bool { return firsts[i] < firsts[j] })
	b.ReportMetric(float64(firsts[len(firsts)/2].Milliseconds()), "ms-first-text-median")
	b.ReportMetric(float64((11 * jsonChunkDelay).Milliseconds()), "ms-last-chunk")
	b.Log(fmt.Sprintf("first text after the request: %s", strings.Trim(fmt.Sprint(firsts), "[]")))
}
