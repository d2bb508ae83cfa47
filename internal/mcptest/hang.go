package mcptest

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addHanging adds the tools that never answer: hang waits for ever,
// ignoring the client's cancellation, while the server goes on serving
// other requests; freeze stops the whole server (SIGSTOP to itself), so
// that it answers nothing at all any more, as a deadlocked one would; deaf
// never answers and ignores SIGTERM from then on, appending a line to
// $HOME/deaf.log every 10 ms (a server writing its home) until it is
// killed.
func addHanging(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answer (cancellation ignored)."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			select {}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "freeze", Description: "Stop the whole server: it answers nothing any more."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			select {}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "deaf", Description: "Never answer, ignore SIGTERM, keep writing the home."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			signal.Ignore(syscall.SIGTERM)
			home, _ := os.UserHomeDir()
			f, err := os.OpenFile(filepath.Join(home, "deaf.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
			if err != nil {
				return fail(err)
			}
			for {
				_, _ = f.WriteString("still here\n")
				time.Sleep(10 * time.Millisecond)
			}
		})
}
