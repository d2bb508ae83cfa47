// Package mcpargs holds the job workflow's pure helpers for MCP tools: a
// tool's fingerprint and a call's arguments as its schema describes them.
// Plain data in, plain data out; it never imports workflows.
package mcpargs

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/workflows/calltext"
)

// Fingerprint identifies what a person approving a tool relies on: its
// description, schema and annotations.
func Fingerprint(t api.MCPTool) string {
	b, _ := json.Marshal([]any{t.Description, t.InputSchema, t.ReadOnly, t.Destructive})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Describe is a call's input as its schema describes it, for the person
// asked: each argument with its title or description.
func Describe(t api.MCPTool, input json.RawMessage) string {
	var schema struct {
		Properties map[string]struct {
			Title       string `json:"title"`
			Description string `json:"description"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(t.InputSchema, &schema)
	var args map[string]json.RawMessage
	if json.Unmarshal(input, &args) != nil {
		return ""
	}
	keys := SortedKeys(input)
	var b strings.Builder
	fmt.Fprintf(&b, "%s (MCP server %q)", t.Tool, t.Server)
	if t.Description != "" {
		fmt.Fprintf(&b, ": %s", calltext.FirstLine(t.Description, 200))
	}
	for _, k := range keys {
		p := schema.Properties[k]
		label := k
		if d := cmp.Or(p.Title, p.Description); d != "" {
			label += " (" + calltext.FirstLine(d, 120) + ")"
		}
		fmt.Fprintf(&b, "\n  %s: %s", label, calltext.FirstLine(string(args[k]), 400))
	}
	return b.String()
}

// SortedKeys are the top-level keys of a JSON object, sorted: read from
// its tokens, so that no map is ranged over (the workflow check flags any
// map iteration).
func SortedKeys(input json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(input))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		k, _ := tok.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}
