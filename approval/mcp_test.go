package approval

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMCPToolNames(t *testing.T) {
	for _, tc := range []struct {
		name, server, tool string
		ok                 bool
	}{
		{"mcp__github__create_issue", "github", "create_issue", true},
		{"mcp__my-db__query__raw", "my-db", "query__raw", true},
		{"mcp__github", "", "", false},
		{"mcp____x", "", "", false},
		{"mcp__github__", "", "", false},
		{"Read", "", "", false},
		{"MCP__github__x", "", "", false},
	} {
		server, tool, ok := MCPTool(tc.name)
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.Equal(t, tc.server, server, tc.name)
		assert.Equal(t, tc.tool, tool, tc.name)
	}
}

func TestMCPCallsThroughTheLayers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		perms    Permissions
		mode     Mode
		call     Call
		decision Decision
		layer    Layer
	}{
		{"no rule: a person is asked", Permissions{}, ModeDefault,
			Call{Tool: "mcp__gh__create_issue", Input: []byte(`{"title":"x"}`)}, Continue, ""},
		{"read-only hint of a trusted server: layer 2", Permissions{}, ModeDefault,
			Call{Tool: "mcp__gh__list_issues", Input: []byte(`{}`), MCPReadOnly: true}, Allow, LayerReadOnly},
		{"the hint never makes a custos tool read-only", Permissions{}, ModeDefault,
			Call{Tool: "Bash", Input: []byte(`{"command":"make"}`), MCPReadOnly: true}, Continue, ""},
		{"deny a whole server", Permissions{Deny: []string{"mcp__gh"}}, ModeDefault,
			Call{Tool: "mcp__gh__list_issues", Input: []byte(`{}`), MCPReadOnly: true}, Deny, LayerRules},
		{"deny a whole server, star form", Permissions{Deny: []string{"mcp__gh__*"}}, ModeDefault,
			Call{Tool: "mcp__gh__create_issue", Input: []byte(`{}`)}, Deny, LayerRules},
		{"a server's rule is not another server's", Permissions{Deny: []string{"mcp__gh"}}, ModeDefault,
			Call{Tool: "mcp__gh2__create_issue", Input: []byte(`{}`)}, Continue, ""},
		{"allow one tool", Permissions{Allow: []string{"mcp__gh__create_issue"}}, ModeDefault,
			Call{Tool: "mcp__gh__create_issue", Input: []byte(`{"title":"x"}`)}, Allow, LayerRules},
		{"allow one tool, not its neighbour", Permissions{Allow: []string{"mcp__gh__create_issue"}}, ModeDefault,
			Call{Tool: "mcp__gh__delete_repo", Input: []byte(`{}`)}, Continue, ""},
		{"ask on the server wins over allow on the tool", Permissions{Ask: []string{"mcp__gh"}, Allow: []string{"mcp__gh__create_issue"}}, ModeDefault,
			Call{Tool: "mcp__gh__create_issue", Input: []byte(`{}`)}, Ask, LayerRules},
		{"a specifier custos cannot read denies all (fail closed)", Permissions{Deny: []string{"mcp__gh__create_issue(repo=x)"}}, ModeDefault,
			Call{Tool: "mcp__gh__create_issue", Input: []byte(`{"repo":"y"}`)}, Deny, LayerRules},
		{"... and allows none", Permissions{Allow: []string{"mcp__gh__create_issue(repo=x)"}}, ModeDefault,
			Call{Tool: "mcp__gh__create_issue", Input: []byte(`{"repo":"x"}`)}, Continue, ""},
		{"input that is not an object is denied", Permissions{}, ModeDefault,
			Call{Tool: "mcp__gh__create_issue", Input: []byte(`"rm -rf /"`)}, Deny, LayerRules},
		{"plan mode: a trusted read-only tool runs", Permissions{}, ModePlan,
			Call{Tool: "mcp__gh__list_issues", Input: []byte(`{}`), MCPReadOnly: true}, Allow, LayerReadOnly},
		{"plan mode: any other is denied, allow rule or not", Permissions{Allow: []string{"mcp__gh"}}, ModePlan,
			Call{Tool: "mcp__gh__create_issue", Input: []byte(`{}`)}, Deny, LayerMode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, Settings{Permissions: tc.perms})
			v := p.Evaluate(tc.call, tc.mode)
			assert.Equal(t, tc.decision, v.Decision, v.Reason)
			assert.Equal(t, tc.layer, v.Layer, v.Reason)
		})
	}
}
