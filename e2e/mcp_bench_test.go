package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/mcptest"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// BenchmarkMCPCall compares one call of an MCP server's tool made three
// ways: by an SDK client straight to the server on the host (sdk-direct);
// through custos in a job on the embedded server, allowed by a rule
// (custos: the time from the call's decision to its result, as the
// workflow records them, so one activity round trip and custos' pool are
// in it); and, for scale, the turns of both jobs. ns/op is per call.
func BenchmarkMCPCall(b *testing.B) {
	server := mcptest.Build(b)
	b.Run("sdk-direct", func(b *testing.B) {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(),
			&mcp.CommandTransport{Command: exec.Command(server)}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("custos", func(b *testing.B) { benchMCPThroughCustos(b) })
}

func benchMCPThroughCustos(b *testing.B) {
	srv := testenv.StartServer(b, devserver.Options{UIPort: -1})
	c := testenv.Dial(b, srv)
	turns, perJob := 0, 0
	_, base := testenv.StartModel(b, func(openai.ChatCompletionRequest) (demomodel.Reply, error) {
		turns++
		if turns > perJob {
			return demomodel.Say("done"), nil
		}
		return demomodel.Calls(demomodel.ToolCall(fmt.Sprintf("m%d", turns), "mcp__t__echo", map[string]any{"text": "hi"})), nil
	})
	user := b.TempDir()
	settings, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"t": map[string]any{"command": "./mcp-server"}},
		"permissions": map[string]any{"allow": []string{"mcp__t__echo"}}})
	if err := os.MkdirAll(filepath.Join(user, "custos"), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(user, "custos", "settings.json"), settings, 0o600); err != nil {
		b.Fatal(err)
	}
	testenv.StartWorkers(b, c, base, app.Options{UserConfigDir: user})
	ws := testenv.Workspace(b)
	mcptest.Place(b, ws, "mcp-server")
	b.ResetTimer()
	var calls []time.Duration
	var whole time.Duration
	// Jobs of at most 20 calls, so that each stays in one run (the events
	// query answers for the current run).
	for done := 0; done < b.N; done += perJob {
		turns, perJob = 0, min(20, b.N-done)
		start := time.Now()
		got := runMCPJob(b, c, ws, perJob)
		whole += time.Since(start)
		calls = append(calls, got...)
	}
	b.StopTimer()
	slices.Sort(calls)
	b.ReportMetric(float64(calls[len(calls)/2].Microseconds())/1000, "call-p50-ms")
	b.ReportMetric(float64(calls[len(calls)*99/100].Microseconds())/1000, "call-p99-ms")
	b.ReportMetric(float64(whole.Microseconds())/1000/float64(b.N), "turn-ms")
}

// runMCPJob runs one job of n MCP calls and returns, per call, the time
// from its decision to its result as the workflow recorded them.
func runMCPJob(b *testing.B, c client.Client, ws string, n int) []time.Duration {
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{TaskQueue: api.TaskQueue},
		jobapi.WorkflowName, jobapi.JobInput{Once: true, Task: "bench", Workspace: ws, MaxTurns: n + 1})
	if err != nil {
		b.Fatal(err)
	}
	if err := run.Get(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	q, err := c.QueryWorkflow(context.Background(), run.GetID(), "", jobapi.EventsQuery, 0)
	if err != nil {
		b.Fatal(err)
	}
	var events []jobapi.Event
	if err := q.Get(&events); err != nil {
		b.Fatal(err)
	}
	decided := map[string]time.Time{}
	var calls []time.Duration
	for _, e := range events {
		switch e.Kind {
		case "decision":
			decided[e.CallID] = e.Time
		case "result":
			if t, ok := decided[e.CallID]; ok {
				calls = append(calls, e.Time.Sub(t))
			}
		}
	}
	if len(calls) != n {
		b.Fatalf("%d calls had a result, want %d", len(calls), n)
	}
	return calls
}
