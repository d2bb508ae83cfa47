package workflows

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
)

// The model's LSP call runs without asking, as Read's does (layer 2), in
// plan mode too, its server in the sandbox; a Read deny rule on its file
// denies it at layer 1, and a denied file never shows in an answer.
func TestPipelineLSP(t *testing.T) {
	tests := []struct {
		name     string
		mode     approval.Mode
		input    map[string]any
		decision approval.Decision
		layer    approval.Layer
		contains []string
		excludes []string
	}{
		{name: "definition runs without asking", input: map[string]any{"operation": "definition", "file_path": "main.go", "line": 5, "column": 27},
			decision: approval.Allow, layer: approval.LayerReadOnly, contains: []string{"lib/lib.go:4:6: func Hello() string { return \"hi\" }"}},
		{name: "plan mode lets it run", mode: approval.ModePlan, input: map[string]any{"operation": "symbols", "file_path": "lib/lib.go"},
			decision: approval.Allow, layer: approval.LayerReadOnly, contains: []string{"function Hello"}},
		{name: "a Read deny rule on its file denies it", input: map[string]any{"operation": "symbols", "file_path": "secret/s.go"},
			decision: approval.Deny, layer: approval.LayerRules, excludes: []string{"Token"}},
		// The sandbox masks the denied file from the server itself (the
		// activity's own filter is tested with a server on the host).
		{name: "references never show a denied file", input: map[string]any{"operation": "references", "file_path": "lib/lib.go", "line": 4, "column": 6},
			decision: approval.Allow, layer: approval.LayerReadOnly, contains: []string{"main.go:5:27: func main() { println(lib.Hello()) }"}, excludes: []string{"secret/"}},
		{name: "malformed arguments are refused before anything runs", input: map[string]any{"operation": "definition", "file_path": "main.go", "line": "five"},
			decision: approval.Deny, layer: approval.LayerRules, contains: []string{"invalid arguments"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, demomodel.Script(
				demomodel.Calls(call("l", "LSP", tt.input)),
				demomodel.Say("done"),
			), withSettings(`{"permissions":{"deny":["Read(secret/**)"]}}`))
			h.writeFile("go.mod", "module example.com/m\n\ngo 1.22\n")
			h.writeFile("main.go", "package main\n\nimport \"example.com/m/lib\"\n\nfunc main() { println(lib.Hello()) }\n")
			h.writeFile("lib/lib.go", "package lib\n\n// Hello greets.\nfunc Hello() string { return \"hi\" }\n")
			h.writeFile("secret/s.go", "package secret\n\nimport \"example.com/m/lib\"\n\n// Token is secret.\nvar Token = lib.Hello()\n")
			h.input.Mode = tt.mode
			_, err := h.run()
			require.NoError(t, err)
			d := h.decisions()["l"]
			assert.Equal(t, tt.decision, d.Decision, d.Reason)
			assert.Equal(t, tt.layer, d.Layer)
			assert.Zero(t, d.WaitMillis, "nobody was asked")
			out := h.toolResults()["l"]
			for _, s := range tt.contains {
				assert.Contains(t, out, s)
			}
			for _, s := range tt.excludes {
				assert.NotContains(t, out, s)
			}
		})
	}
}

// A job whose history was recorded before LSP was a tool replays with
// what it was given then: a call named LSP is an unknown tool, denied at
// layer 1, and nothing runs.
func TestLSPBeforeItWasATool(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(call("l", "LSP", map[string]any{"operation": "symbols", "file_path": "a.go"})),
		demomodel.Say("done"),
	))
	h.writeFile("a.go", "package a\n")
	h.env.OnGetVersion(lspToolVersion, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	_, err := h.run()
	require.NoError(t, err)
	d := h.decisions()["l"]
	assert.Equal(t, approval.Deny, d.Decision)
	assert.Equal(t, approval.LayerRules, d.Layer)
	assert.Contains(t, d.Reason, `unknown tool "LSP"`)
	assert.NotContains(t, h.toolResults()["l"], "package a")
}
