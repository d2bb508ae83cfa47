package jobevents

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// The schema and the Go types agree: every type has a definition whose
// properties are its JSON fields (and "type"), required exactly when the
// field is not omitempty; the schema names no type Go does not have.
func TestSchemaMatchesTheTypes(t *testing.T) {
	var s struct {
		OneOf []struct {
			Ref string `json:"$ref"`
		} `json:"oneOf"`
		Defs map[string]struct {
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(Schema, &s))
	var names []string
	for _, e := range Types {
		names = append(names, e.Type())
		def, ok := s.Defs[e.Type()]
		require.True(t, ok, "the schema has no definition of %s", e.Type())
		props, required := []string{"type"}, []string{"type"}
		rt := reflect.TypeOf(e)
		for i := range rt.NumField() {
			name, opts, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			props = append(props, name)
			if opts != "omitempty" {
				required = append(required, name)
			}
		}
		slices.Sort(props)
		slices.Sort(required)
		got := slices.Sorted(func(yield func(string) bool) {
			for k := range def.Properties {
				if !yield(k) {
					return
				}
			}
		})
		assert.Equal(t, props, got, "%s: properties", e.Type())
		req := slices.Clone(def.Required)
		slices.Sort(req)
		assert.Equal(t, required, req, "%s: required", e.Type())
	}
	var refs []string
	for _, o := range s.OneOf {
		refs = append(refs, strings.TrimPrefix(o.Ref, "#/$defs/"))
	}
	assert.ElementsMatch(t, names, refs, "oneOf names every type")
	var diff struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Properties map[string]any `json:"properties"`
				Required   []string       `json:"required"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(Schema, &diff))
	d := diff.Defs["tool_result"].Properties["diff"]
	var props, required []string
	rt := reflect.TypeOf(Diff{})
	for i := range rt.NumField() {
		name, opts, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		props = append(props, name)
		if opts != "omitempty" {
			required = append(required, name)
		}
	}
	assert.ElementsMatch(t, props, slices.Collect(maps.Keys(d.Properties)), "diff: properties")
	assert.ElementsMatch(t, required, d.Required, "diff: required")
	assert.Len(t, s.Defs, len(Types), "no definition without a Go type")
}

// Every event Marshal writes validates; what breaks the schema does not.
func TestValidate(t *testing.T) {
	good := []Event{
		Job{Job: "j", Workspace: "/w"},
		Text{Turn: 2, Attempt: 1, Text: "Hel", Begin: true},
		Thought{Turn: 2, Attempt: 1, Text: "The user wants"},
		Model{Seq: 3, Turn: 1, Text: "Let me look. (calls Read)", Calls: true},
		ToolCall{Seq: 4, Turn: 1, Call: "c1", Tool: "Read", Summary: "Read: a.go", Input: json.RawMessage(`{"file_path":"a.go"}`), InputBytes: 20},
		Decision{Seq: 5, Turn: 1, Call: "c1", Tool: "Read", Decision: approval.Allow, Layer: approval.LayerHuman, By: "ann", Text: "allow by human ann"},
		Waiting{Seq: 6, Turn: 1, Call: "c1", Tool: "Write", Summary: "Write: a.go"},
		ToolResult{Seq: 7, Turn: 1, Call: "c1", Tool: "Read", OK: false, Summary: "Error: no such file"},
		ToolResult{Seq: 7, Turn: 1, Call: "c2", Tool: "Bash", OK: true, Summary: "1 …", Output: "1\n2\n", OutputBytes: 4},
		ToolResult{Seq: 7, Turn: 1, Call: "c3", Tool: "Write", OK: true, Summary: "Updated a", Diff: &Diff{Path: "a", OldText: new(string), NewText: "x", OldKnown: true}},
		Answer{Seq: 8, Turn: 2, Text: "done", Streamed: true},
		Park{Seq: 9, Turn: 2, Reason: "budget", Text: "raise it"},
		Error{Seq: 10, Turn: 2, Text: "hook failed"},
		Note{Seq: 11, Turn: 2, Kind: "mode", Text: "mode plan"},
		Result{Job: "j", Status: StatusDone, Answer: "done", Turns: 2, Usage: jobapi.Usage{ModelCalls: 2, TotalTokens: 10}},
	}
	for _, e := range good {
		b, err := Marshal(e)
		require.NoError(t, err)
		assert.NoError(t, Validate(b), "%s", b)
		back, err := Unmarshal(b)
		require.NoError(t, err)
		if m, ok := e.(Model); ok {
			m.Shown = ""
			e = m
		}
		assert.Equal(t, e, back, "%s round trips", e.Type())
		assert.True(t, strings.HasPrefix(string(b), `{"type":"`+e.Type()+`"`), "%s: type first", b)
	}
	bad := map[string]string{
		"unknown type":         `{"type":"nope"}`,
		"missing required":     `{"type":"job","job":"j"}`,
		"extra property":       `{"type":"job","job":"j","workspace":"/w","x":1}`,
		"wrong type":           `{"type":"text","turn":"2","attempt":1,"text":""}`,
		"not an integer":       `{"type":"text","turn":1.5,"attempt":1,"text":""}`,
		"negative":             `{"type":"text","turn":-1,"attempt":1,"text":""}`,
		"unknown status":       `{"type":"result","job":"j","status":"fine","answer":"","turns":0,"usage":{"modelCalls":0,"promptTokens":0,"completionTokens":0,"totalTokens":0}}`,
		"unknown decision":     `{"type":"decision","seq":1,"turn":1,"call":"c","tool":"t","decision":"maybe","layer":"rules","text":""}`,
		"not JSON":             `{"type":`,
		"diff without newText": `{"type":"tool_result","seq":1,"turn":1,"call":"c","tool":"Write","ok":true,"summary":"","diff":{"path":"a","oldKnown":true}}`,
		"diff extra":           `{"type":"tool_result","seq":1,"turn":1,"call":"c","tool":"Write","ok":true,"summary":"","diff":{"path":"a","newText":"","oldKnown":true,"x":1}}`,
	}
	for name, line := range bad {
		assert.Error(t, Validate([]byte(line)), name)
	}
}
