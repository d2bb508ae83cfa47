package activities

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/mcpservers"
)

// editorServers adds to res the MCP servers an editor passed the job
// (req.EditorServers, their entries in the job's file on this host,
// mcpservers.WriteEditorServers): their names, never their entries. A
// name the settings serve already is the settings' server (the listing
// says so); entries this host does not have are named in the notes.
func (s *Settings) editorServers(res *api.LoadSettingsResult, req api.LoadSettingsRequest) {
	if len(req.EditorServers) == 0 || req.JobID == "" {
		return
	}
	state, err := s.stateDir()
	if err != nil {
		res.MCPNotes = append(res.MCPNotes, "the editor's MCP servers: "+err.Error())
		return
	}
	servers, found, err := mcpservers.LoadEditorServers(state, req.JobID)
	switch {
	case err != nil:
		res.MCPNotes = append(res.MCPNotes, err.Error()+": they are not used")
		return
	case !found:
		res.MCPNotes = append(res.MCPNotes, fmt.Sprintf("the editor's MCP servers (%s) are not used: their entries are not on this worker's host. "+
			"starter acp keeps them in its own state directory, and this worker's is another (a worker on another machine), "+
			"or the job's earlier run ended, which removed them. Run starter acp where the job's worker runs, "+
			"or add the servers to the mcpServers of your settings (docs/mcp.md)", strings.Join(req.EditorServers, ", ")))
		return
	}
	for _, srv := range servers {
		if !slices.Contains(res.MCPServers, srv.Name) {
			res.MCPServers = append(res.MCPServers, srv.Name)
		}
	}
}

// ForgetJob removes an ended job's editor servers: their entry file (their
// secrets) and their running servers.
func (m *MCP) ForgetJob(_ context.Context, req api.MCPForgetJobRequest) error {
	return m.Pool.ForgetJob(req.Job)
}
