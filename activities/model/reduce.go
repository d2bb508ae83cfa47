package model

import (
	"encoding/json"
	"fmt"
	"sort"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/activities/transcript"
)

// Limits of a reduced answer, as it travels through history.
const (
	// textInlineMax is the largest text answer kept whole in the message.
	textInlineMax = 32 << 10
	// callInlineMax is the largest call's arguments once its contents are
	// blobs: past it (a Bash command, a path) the call is refused.
	callInlineMax = 32 << 10
	// answerInlineMax bounds all the calls of one answer together.
	answerInlineMax = 128 << 10
)

// reduceAnswer keeps a model answer small enough for history (see
// api.BlobDir): large texts and file contents go to blobs, calls that cannot
// travel or that the length limit cut are refused with the reason.
func reduceAnswer(bs toolkit.Blobs, out *api.ModelResponse) error {
	msg := &out.Message
	if len(msg.Content) > textInlineMax {
		sum, err := bs.Put(msg.Content)
		if err != nil {
			return err
		}
		msg.Content = toolkit.CutUTF8(msg.Content, api.TextHeadInline) + api.TextMarkerSuffix(sum, len(msg.Content))
	}
	if out.FinishReason == string(openai.FinishReasonLength) {
		refuseCutCalls(msg.ToolCalls)
	}
	for i := range msg.ToolCalls {
		if err := ReduceCall(bs, &msg.ToolCalls[i]); err != nil {
			return err
		}
	}
	refuseLargest(msg.ToolCalls)
	return nil
}

// refuseCutCalls refuses the calls an answer cut at the length limit did
// not finish: those whose arguments are not a JSON object, else the last.
func refuseCutCalls(calls []openai.ToolCall) {
	cut := false
	for i := range calls {
		if !isObject(calls[i].Function.Arguments) {
			refuseCut(&calls[i])
			cut = true
		}
	}
	if !cut && len(calls) > 0 {
		refuseCut(&calls[len(calls)-1])
	}
}

func refuseCut(tc *openai.ToolCall) {
	n := len(tc.Function.Arguments)
	why := fmt.Sprintf("your answer was cut at the model's length limit (finish_reason \"length\") while you were writing this call: "+
		"call %s (%s) had %d bytes of arguments when it was cut, so it did not run. "+
		"Retry in smaller steps: for a large file, Write a first part and add the rest with further Edit calls, or split it into several files.",
		tc.ID, tc.Function.Name, n)
	tc.Function.Arguments = cutRefused(api.RefusedArguments(why, n))
}

// cutRefused marks the refusal as one of a cut answer, for the audit.
func cutRefused(args string) string {
	var m map[string]any
	_ = json.Unmarshal([]byte(args), &m)
	m["cut"] = true
	b, _ := json.Marshal(m)
	return string(b)
}

// ReduceCall stores the large contents of a Write or Edit as blobs, and
// refuses a call whose content is over api.MaxBlobField or whose other
// arguments are too large to travel.
func ReduceCall(bs toolkit.Blobs, tc *openai.ToolCall) error {
	args := tc.Function.Arguments
	if len(args) <= api.BlobFieldMin {
		return nil
	}
	if _, refused := api.RefusedReason(json.RawMessage(args)); refused {
		return nil
	}
	var m map[string]json.RawMessage
	if fields := api.BlobFields(tc.Function.Name); len(fields) > 0 && json.Unmarshal([]byte(args), &m) == nil {
		for _, f := range fields {
			var s string
			if json.Unmarshal(m[f], &s) != nil || len(s) <= api.BlobFieldMin {
				continue
			}
			if len(s) > api.MaxBlobField {
				tc.Function.Arguments = api.RefusedArguments(fmt.Sprintf(
					"the %s of this %s call has %d bytes, over custos' cap of %d bytes (%d MiB) for one call; nothing was written. Write it in parts: write the first part, then add the rest with further Edit calls, or split it into several files.",
					f, tc.Function.Name, len(s), api.MaxBlobField, api.MaxBlobField>>20), len(args))
				return nil
			}
			sum, err := bs.Put(s)
			if err != nil {
				return err
			}
			m[f], _ = json.Marshal(api.BlobMarker(sum, len(s)))
		}
		b, _ := json.Marshal(m)
		args = string(b)
	}
	if len(args) > callInlineMax {
		args = api.RefusedArguments(fmt.Sprintf(
			"the arguments of this %s call have %d bytes, over custos' cap of %d bytes for a call's arguments other than file contents; it did not run. "+
				"For a long command, Write a script to a file and run that; keep paths and patterns short.",
			tc.Function.Name, len(tc.Function.Arguments), callInlineMax), len(tc.Function.Arguments))
	}
	tc.Function.Arguments = args
	return nil
}

// refuseLargest refuses the largest calls until the answer's calls fit in
// answerInlineMax together.
func refuseLargest(calls []openai.ToolCall) {
	total := 0
	idx := make([]int, len(calls))
	for i := range calls {
		total += len(calls[i].Function.Arguments)
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		return len(calls[idx[a]].Function.Arguments) > len(calls[idx[b]].Function.Arguments)
	})
	for _, i := range idx {
		if total <= answerInlineMax {
			return
		}
		n := len(calls[i].Function.Arguments)
		calls[i].Function.Arguments = api.RefusedArguments(fmt.Sprintf(
			"this answer's calls have %d bytes of arguments together, over custos' cap of %d bytes for one answer; this call (%d bytes) did not run. Send fewer or smaller calls at once.",
			total, answerInlineMax, n), n)
		total -= n - len(calls[i].Function.Arguments)
	}
}

func isObject(s string) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &m) == nil
}

// expandMessages gives the model its own earlier answers whole: the blobs
// of assistant messages are read back. A refused call stays as it was
// stored (the tool result says why it was refused).
func expandMessages(bs toolkit.Blobs, msgs []openai.ChatCompletionMessage) ([]openai.ChatCompletionMessage, error) {
	var out []openai.ChatCompletionMessage
	for i, m := range msgs {
		if m.Role != openai.ChatMessageRoleAssistant {
			continue
		}
		e, err := expandMessage(bs, m)
		if err != nil {
			return nil, transcript.Errorf("message %d of the conversation: %v", i+1, err)
		}
		if out == nil {
			out = append([]openai.ChatCompletionMessage(nil), msgs...)
		}
		out[i] = e
	}
	if out == nil {
		return msgs, nil
	}
	return out, nil
}

func expandMessage(bs toolkit.Blobs, m openai.ChatCompletionMessage) (openai.ChatCompletionMessage, error) {
	text, err := bs.ExpandText(m.Content)
	if err != nil {
		return m, err
	}
	m.Content = text
	if len(m.ToolCalls) > 0 {
		m.ToolCalls = append([]openai.ToolCall(nil), m.ToolCalls...)
	}
	for i := range m.ToolCalls {
		args, err := bs.ExpandArguments(m.ToolCalls[i].Function.Arguments)
		if err != nil {
			return m, err
		}
		m.ToolCalls[i].Function.Arguments = args
	}
	return m, nil
}
