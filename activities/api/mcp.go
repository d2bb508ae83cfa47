package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/custos-dev/custos/netpolicy"
)

// The MCP activities run on the workspace's host, where its servers are.
const (
	MCPToolsActivity = "MCPTools" // the tools of the workspace's MCP servers
	MCPCallActivity  = "MCPCall"  // one call of one of them
)

// MCPToolsRequest asks for the tools of a workspace's MCP servers. Have is
// the hash of the listing the job already holds: an unchanged listing
// comes back as Same, without the tools (which would only grow history).
type MCPToolsRequest struct {
	Workspace string           `json:"workspace"`
	Network   netpolicy.Policy `json:"network,omitzero"`
	ReadDeny  []string         `json:"readDeny,omitempty"`
	EditDeny  []string         `json:"editDeny,omitempty"` // for a server that writes the workspace
	Have      string           `json:"have,omitempty"`
	// Job is set for a job an editor passed MCP servers
	// (JobInput.EditorServers): its servers join the workspace's.
	Job string `json:"job,omitempty"`
}

// MCPForgetJobActivity removes a job's editor servers when it ends: their
// entry file and their running servers.
const MCPForgetJobActivity = "MCPForgetJob"

// MCPForgetJobRequest names the ended job.
type MCPForgetJobRequest struct {
	Workspace string `json:"workspace"`
	Job       string `json:"job"`
}

// MCPToolsResult is a listing. Notes say which servers were left out, and
// why (never what their entries hold: no commands, no secrets).
type MCPToolsResult struct {
	Tools []MCPTool `json:"tools,omitempty"`
	Notes []string  `json:"notes,omitempty"`
	Hash  string    `json:"hash"`
	Same  bool      `json:"same,omitempty"`
}

// MCPTool is one server tool as the job knows it.
type MCPTool struct {
	Name        string          `json:"name"` // mcp__SERVER__TOOL
	Server      string          `json:"server"`
	Tool        string          `json:"tool"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
	ReadOnly    bool            `json:"readOnly,omitempty"`
	Destructive bool            `json:"destructive,omitempty"`
	// Trusted: the user's own settings trust the server.
	Trusted bool `json:"trusted,omitempty"`
	// CallTimeout is the server's bound on one call (its entry's
	// "callTimeout"; 0: the default), for the call's activity timeout.
	CallTimeout time.Duration `json:"callTimeout,omitempty"`
}

// MCPCallRequest is one call: a ToolRequest (Input is the arguments) with
// the tool's name, and the limits its server runs under.
type MCPCallRequest struct {
	ToolRequest
	Tool     string           `json:"tool"` // mcp__SERVER__TOOL
	ReadOnly bool             `json:"readOnly,omitempty"`
	Network  netpolicy.Policy `json:"network,omitzero"`
}

// MCPInterruptedErrorType is the error type of a call whose server died
// while it ran, for a tool that may have changed something: it is not
// retried, and the model is told it was interrupted.
const MCPInterruptedErrorType = "MCPInterrupted"

// CheckMCPArguments checks a call's arguments against its tool's input
// schema, as the server published it: an object, and valid. A schema custos
// cannot read refuses every call (fail closed), with the reason.
func CheckMCPArguments(schema, input json.RawMessage) error {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Errorf("the tool's input schema cannot be read: %w", err)
	}
	rs, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: false})
	if err != nil {
		return fmt.Errorf("the tool's input schema cannot be used: %w", err)
	}
	var args any
	if err := json.Unmarshal(input, &args); err != nil {
		return fmt.Errorf("the arguments are not JSON: %w", err)
	}
	if _, ok := args.(map[string]any); !ok {
		return errors.New("the arguments are not a JSON object")
	}
	if err := rs.Validate(args); err != nil {
		return err
	}
	return nil
}
