package mcptest

import (
	"context"
	"os"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addHanging adds the tools that never answer: hang waits for ever,
// ignoring the client's cancellation, while the server goes on serving
// other requests; freeze stops the whole server (SIGSTOP to itself), so
// that it answers nothing at all any more, as a deadlocked one would.
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
}
