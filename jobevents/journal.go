package jobevents

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"

	"github.com/custos-dev/custos/workflows/jobapi"
)

func decodeAs(t Event, b []byte) (Event, error) {
	v := reflect.New(reflect.TypeOf(t))
	if err := json.Unmarshal(b, v.Interface()); err != nil {
		return nil, fmt.Errorf("decode %s event: %w", t.Type(), err)
	}
	return v.Elem().Interface().(Event), nil
}

// callsSuffix is how the workflow marks a model turn that calls tools.
var callsSuffix = regexp.MustCompile(`(^|\s\()calls [\w, ]+\)?$`)

// parks are the journal's kinds of a job waiting for something other than
// a call's answer.
var parks = map[string]bool{"budget": true, "model-wait": true, "disk-full": true}

// FromJournal is the event a step of the workflow's journal is. A model
// turn's Streamed and an answer's Streamed are the Source's to set.
func FromJournal(e jobapi.Event) Event {
	switch e.Kind {
	case "model":
		return Model{Seq: e.Seq, Turn: e.Turn, Text: e.Text, Calls: callsSuffix.MatchString(e.Text)}
	case "call":
		return ToolCall{Seq: e.Seq, Turn: e.Turn, Call: e.CallID, Tool: e.Tool, Summary: e.Text, Input: e.Input, InputBytes: e.InputBytes}
	case "decision":
		return Decision{Seq: e.Seq, Turn: e.Turn, Call: e.CallID, Tool: e.Tool, Decision: e.Decision, Layer: e.Layer, By: e.By, Text: e.Text}
	case "ask":
		return Waiting{Seq: e.Seq, Turn: e.Turn, Call: e.CallID, Tool: e.Tool, Summary: e.Text}
	case "result":
		r := ToolResult{Seq: e.Seq, Turn: e.Turn, Call: e.CallID, Tool: e.Tool, OK: !e.Failed, Summary: e.Text,
			Output: e.Output, OutputBytes: e.OutputBytes}
		if d := e.Diff; d != nil {
			r.Diff = &Diff{Path: d.Path, OldText: d.OldText, NewText: d.NewText, OldKnown: d.OldKnown, Cut: d.Cut}
		}
		return r
	case "answer":
		if e.CallID == "" {
			return Answer{Seq: e.Seq, Turn: e.Turn, Text: e.Text}
		}
		// A person's approval of a call that needs several: a vote, not
		// the job's answer.
		return Note{Seq: e.Seq, Turn: e.Turn, Kind: "vote", Call: e.CallID, Tool: e.Tool, Text: e.Text}
	case "error":
		return Error{Seq: e.Seq, Turn: e.Turn, Call: e.CallID, Tool: e.Tool, Text: e.Text}
	}
	if parks[e.Kind] {
		return Park{Seq: e.Seq, Turn: e.Turn, Reason: e.Kind, Text: e.Text}
	}
	return Note{Seq: e.Seq, Turn: e.Turn, Kind: e.Kind, Call: e.CallID, Tool: e.Tool, Text: e.Text}
}
