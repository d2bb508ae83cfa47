package mcpservers

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// memoryRound is one write and read-back of the memory server: an entity
// made, the graph read (it must hold the entity), the entity deleted (so
// every round sees a graph of the same size).
func memoryRound(b *testing.B, i int, call func(tool string, args any) string) {
	name := fmt.Sprintf("e%d", i)
	call("create_entities", map[string]any{"entities": []map[string]any{{"name": name, "entityType": "t", "observations": []string{"o"}}}})
	if out := call("read_graph", map[string]any{}); !strings.Contains(out, `"`+name+`"`) {
		b.Fatalf("read_graph does not hold %s: %s", name, out)
	}
	call("delete_entities", map[string]any{"entityNames": []string{name}})
}

// BenchmarkMemoryServer: the official memory server's write and read-back
// through custos (the pool: the server in its sandbox, its file in its
// home) against the same server run directly by an SDK client.
func BenchmarkMemoryServer(b *testing.B) {
	bin := memoryServer(b)
	b.Run("custos", func(b *testing.B) {
		r := newRig(b, map[string]any{"mcpServers": map[string]any{"memory": map[string]any{
			"command": bin, "env": map[string]string{"MEMORY_FILE_PATH": "${HOME}/memory.jsonl"}}}})
		call := func(tool string, args any) string {
			out, err := r.callOn(b, "memory", tool, args)
			require.NoError(b, err)
			return out
		}
		memoryRound(b, -1, call) // warm: the server started
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			memoryRound(b, i, call)
		}
	})
	b.Run("direct", func(b *testing.B) {
		cmd := exec.Command(bin)
		cmd.Env = []string{"MEMORY_FILE_PATH=" + filepath.Join(b.TempDir(), "memory.jsonl"), "PATH=/usr/bin:/bin"}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		require.NoError(b, err)
		defer cs.Close()
		call := func(tool string, args any) string {
			raw, _ := json.Marshal(args)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(raw)})
			require.NoError(b, err)
			require.False(b, res.IsError)
			var out []string
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					out = append(out, tc.Text)
				}
			}
			return strings.Join(out, "\n")
		}
		memoryRound(b, -1, call)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			memoryRound(b, i, call)
		}
	})
}
