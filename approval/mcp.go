package approval

import "strings"

// MCPPrefix starts the name of every MCP server tool: mcp__SERVER__TOOL.
// Rules name one tool (mcp__github__create_issue) or all of a server's
// (mcp__github, or mcp__github__*).
const MCPPrefix = "mcp__"

// MCPTool splits an MCP tool's name into its server and tool; ok is false
// for any other name. A server's name never holds "__", so the first one
// after the prefix ends it.
func MCPTool(name string) (server, tool string, ok bool) {
	rest, found := strings.CutPrefix(name, MCPPrefix)
	if !found {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	if !ok || server == "" || tool == "" {
		return "", "", false
	}
	return server, tool, true
}

// mcpServerKey is the key under which a rule about all of a server's
// tools is indexed: the rule's own tool for mcp__SERVER, or mcp__SERVER
// for mcp__SERVER__*.
func mcpRuleTool(tool string) string {
	if s, ok := strings.CutSuffix(tool, "__*"); ok && strings.HasPrefix(s, MCPPrefix) && !strings.Contains(s[len(MCPPrefix):], "__") {
		return s
	}
	return tool
}

// rulesFor are the indexes of a rule set's rules about tool: its own, and
// for an MCP tool those about all of its server's tools.
func (s *ruleSet) rulesFor(tool string) []int {
	own := s.byTool[tool]
	server, _, ok := MCPTool(tool)
	if !ok {
		return own
	}
	all := s.byTool[MCPPrefix+server]
	if len(all) == 0 {
		return own
	}
	return append(append([]int{}, own...), all...)
}

// readOnly reports whether layer 2 lets the call run without asking: one
// of custos' read-only tools, or an MCP tool its server declares
// read-only (and not destructive) when the user's own settings trust that
// server (the workflow sets MCPReadOnly only then).
func (c Call) readOnly() bool {
	if readOnlyTools[c.Tool] {
		return true
	}
	_, _, mcp := MCPTool(c.Tool)
	return mcp && c.MCPReadOnly
}
