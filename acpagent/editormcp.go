package acpagent

import (
	"fmt"

	acp "github.com/coder/acp-go-sdk"

	"github.com/custos-dev/custos/internal/statedir"
	"github.com/custos-dev/custos/mcpservers"
)

// editorServers checks the MCP servers the editor passes in session/new:
// each is the user's own, run as the settings' mcpServers are (package
// mcpservers: in the sandbox, behind the six layers, its tools
// mcp__SERVER__TOOL), for job only. A malformed entry, an SSE or ACP
// transport (custos serves stdio and streamable HTTP) or a name given
// twice is the request's error, naming the entry.
func editorServers(job string, in []acp.McpServer) ([]mcpservers.Server, error) {
	var out []mcpservers.Server
	seen := map[string]bool{}
	for i, s := range in {
		e, err := editorEntry(s)
		if err == nil {
			if seen[e.Name] {
				err = fmt.Errorf("the name %q is given twice", e.Name)
			}
			seen[e.Name] = true
		}
		var srv mcpservers.Server
		if err == nil {
			srv, err = mcpservers.EditorServer(job, e)
		}
		if err != nil {
			return nil, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("mcpServers[%d] (%q): %v", i, e.Name, err)})
		}
		out = append(out, srv)
	}
	return out, nil
}

// editorEntry is s as package mcpservers takes an entry.
func editorEntry(s acp.McpServer) (mcpservers.EditorEntry, error) {
	switch {
	case s.Stdio != nil:
		e := mcpservers.EditorEntry{Name: s.Stdio.Name, Type: "stdio", Command: s.Stdio.Command, Args: s.Stdio.Args}
		if len(s.Stdio.Env) > 0 {
			e.Env = map[string]string{}
		}
		for _, v := range s.Stdio.Env {
			e.Env[v.Name] = v.Value
		}
		return e, nil
	case s.Http != nil:
		e := mcpservers.EditorEntry{Name: s.Http.Name, Type: "http", URL: s.Http.Url}
		if len(s.Http.Headers) > 0 {
			e.Headers = map[string]string{}
		}
		for _, h := range s.Http.Headers {
			e.Headers[h.Name] = h.Value
		}
		return e, nil
	case s.Sse != nil:
		return mcpservers.EditorEntry{Name: s.Sse.Name}, fmt.Errorf("the SSE transport is not served: custos runs stdio and streamable HTTP servers")
	}
	return mcpservers.EditorEntry{}, fmt.Errorf("no transport custos serves (stdio or http)")
}

// names are the servers' names, for the job's input (never their entries).
func names(servers []mcpservers.Server) []string {
	var out []string
	for _, s := range servers {
		out = append(out, s.Name)
	}
	return out
}

// stateDir is custos' state directory, where the job's editor entries go
// for its worker to read: the worker's when it runs on this machine.
func (a *agent) stateDir() (string, error) {
	if a.o.StateDir != "" {
		return a.o.StateDir, nil
	}
	return statedir.Dir()
}

// keepEditorServers writes job's editor entries (secrets included) to
// its file in the state directory, owner only; nothing of them goes into
// the job's history. The worker reads them there: one on another machine
// does not see them, and the job's notes say so.
func (a *agent) keepEditorServers(job string, servers []mcpservers.Server) error {
	if len(servers) == 0 {
		return nil
	}
	state, err := a.stateDir()
	if err == nil {
		err = mcpservers.WriteEditorServers(state, job, servers)
	}
	if err != nil {
		return acp.NewInternalError(map[string]any{"error": "keep the editor's MCP servers: " + err.Error()})
	}
	if a.o.Route != nil {
		a.o.Logger.Info("acp: the editor's MCP servers are kept in this machine's state directory: a worker on another machine does not see them (the job says so)",
			"servers", fmt.Sprint(names(servers)))
	}
	return nil
}

// forgetEditorServers removes job's entries when its start failed.
func (a *agent) forgetEditorServers(job string) {
	if state, err := a.stateDir(); err == nil {
		if err := mcpservers.RemoveEditorServers(state, job); err != nil {
			a.o.Logger.Warn("acp: the editor's MCP servers of a job that did not start", "job", job, "err", err)
		}
	}
}
