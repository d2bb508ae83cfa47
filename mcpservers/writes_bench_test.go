package mcpservers

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkWritingServer measures a call of the official filesystem
// server: write_file through a writing server (a fresh start, the call,
// the server stopped, its write judged and applied), read_text_file
// through the same (a fresh start and the call), and read_text_file
// through the server without writeWorkspace (warm, workspace read-only).
func BenchmarkWritingServer(b *testing.B) {
	for _, c := range []struct {
		name  string
		write bool
		tool  string
	}{{"write_file/writeWorkspace", true, "write_file"}, {"read_text_file/writeWorkspace", true, "read_text_file"},
		{"read_text_file/read-only", false, "read_text_file"}} {
		b.Run(c.name, func(b *testing.B) {
			r := fsRigB(b, c.write)
			call := func(i int) {
				args := map[string]any{"path": filepath.Join(r.ws, "secret.txt")}
				if c.tool == "write_file" {
					args = map[string]any{"path": filepath.Join(r.ws, "out.txt"), "content": fmt.Sprint(i)}
				}
				in, _ := json.Marshal(args)
				res, err := r.pool.Call(context.Background(), r.ws, "fs", c.tool, in, Limits{})
				if err != nil || res.IsError {
					b.Fatalf("%s: %v %+v", c.tool, err, res)
				}
			}
			call(-1) // warm up: the server started, the caches read
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				call(i)
			}
		})
	}
}
