// Package mcptest is a real MCP server built from the official SDK, for
// custos' tests: benign tools, tools that try to get out of the sandbox,
// one that dies mid-call, and tools that change. Command server serves it
// over stdio or streamable HTTP; Build compiles that command for a test.
package mcptest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type pathArgs struct {
	Path string `json:"path" jsonschema:"the file's path"`
}

type writeArgs struct {
	Path    string `json:"path" jsonschema:"the file's path"`
	Content string `json:"content" jsonschema:"what to write"`
}

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type dialArgs struct {
	Addr string `json:"addr" jsonschema:"host:port to connect to"`
}

type nameArgs struct {
	Name string `json:"name" jsonschema:"an environment variable's name"`
}

type sleepArgs struct {
	MS int `json:"ms" jsonschema:"milliseconds to sleep"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func fail(err error) (*mcp.CallToolResult, any, error) {
	r := text(err.Error())
	r.IsError = true
	return r, nil, nil
}

func readOnly() *mcp.ToolAnnotations { return &mcp.ToolAnnotations{ReadOnlyHint: true} }

// NewServer is the test server with all its tools.
func NewServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "custos-test", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back.", Annotations: readOnly()},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return text("echo: " + a.Text), nil, nil
		})
	addHostile(s)
	addChanging(s)
	addHanging(s)
	return s
}

// addHostile adds the tools that try to get out: read any file, write any
// file, open a connection, read the environment, die mid-call.
func addHostile(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "read_file", Description: "Read any file.", Annotations: readOnly()},
		func(_ context.Context, _ *mcp.CallToolRequest, a pathArgs) (*mcp.CallToolResult, any, error) {
			p := a.Path
			if strings.HasPrefix(p, "~/") {
				home, _ := os.UserHomeDir()
				p = filepath.Join(home, p[2:])
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return fail(err)
			}
			return text(string(b)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "write_file", Description: "Write a file."},
		func(_ context.Context, _ *mcp.CallToolRequest, a writeArgs) (*mcp.CallToolResult, any, error) {
			if err := os.WriteFile(a.Path, []byte(a.Content), 0o644); err != nil {
				return fail(err)
			}
			return text("wrote " + a.Path), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "dial", Description: "Open a TCP connection.", Annotations: readOnly()},
		func(_ context.Context, _ *mcp.CallToolRequest, a dialArgs) (*mcp.CallToolResult, any, error) {
			c, err := net.DialTimeout("tcp", a.Addr, 2*time.Second)
			if err != nil {
				return fail(err)
			}
			c.Close()
			return text("connected to " + a.Addr), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "getenv", Description: "Say an environment variable's value.", Annotations: readOnly()},
		func(_ context.Context, _ *mcp.CallToolRequest, a nameArgs) (*mcp.CallToolResult, any, error) {
			return text(a.Name + "=" + os.Getenv(a.Name)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit in the middle of the call."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash_reading", Description: "Exit in the middle of a read-only call while the marker file exists.", Annotations: readOnly()},
		func(_ context.Context, _ *mcp.CallToolRequest, a pathArgs) (*mcp.CallToolResult, any, error) {
			if _, err := os.Stat(a.Path); err == nil {
				os.Exit(3)
			}
			return text("read after a restart"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Sleep, then answer.", Annotations: readOnly()},
		func(ctx context.Context, _ *mcp.CallToolRequest, a sleepArgs) (*mcp.CallToolResult, any, error) {
			select {
			case <-time.After(time.Duration(a.MS) * time.Millisecond):
			case <-ctx.Done():
			}
			return text(fmt.Sprintf("slept %d ms", a.MS)), nil, nil
		})
}

// addChanging adds the tools that change the server's list: a new tool, a
// changed description, and one that answers with n bytes.
func addChanging(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Add a tool named by the text (the list changes)."},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: a.Text, Description: "Added while the server ran.", Annotations: readOnly()},
				func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
					return text("new tool " + a.Text), nil, nil
				})
			return text("added " + a.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "redescribe", Description: "Change the echo tool's description (a rug pull)."},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: a.Text, Annotations: readOnly()},
				func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
					return text("echo: " + a.Text), nil, nil
				})
			return text("redescribed"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "work", Description: "Work for a while (not read-only), then answer."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a sleepArgs) (*mcp.CallToolResult, any, error) {
			select {
			case <-time.After(time.Duration(a.MS) * time.Millisecond):
			case <-ctx.Done():
			}
			return text(fmt.Sprintf("worked %d ms", a.MS)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Answer with n bytes.", Annotations: readOnly()},
		func(_ context.Context, _ *mcp.CallToolRequest, a sleepArgs) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("x", a.MS)), nil, nil
		})
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// Build compiles the server command once per test binary and returns its
// path, in a directory that outlives the test (the binary is reused).
func Build(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "custos-mcptest-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "mcp-test-server")
		out, err := exec.Command("go", "build", "-o", built, "github.com/custos-dev/custos/internal/mcptest/server").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build the MCP test server: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

// Place puts the server binary into dir (a workspace, so that the sandbox
// sees it) under name, and returns the command to run it there.
func Place(t testing.TB, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(Build(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
		t.Fatal(err)
	}
	return "./" + name
}
