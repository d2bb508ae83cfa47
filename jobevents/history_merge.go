package jobevents

import (
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// History is a job's conversation as events: the transcript's (msgs, as
// FromTranscript gives them) for what it holds, then the journal's
// events it does not hold, in the journal's order, each step once. A
// journal's result or refusal of a call the transcript holds takes the
// transcript's place (it keeps a Write's old text, who refused); the
// journal's other steps from before the last one the transcript holds
// (its notes, parks and errors of those turns) are left out, but for a
// person's message the transcript does not hold yet.
func History(msgs []openai.ChatCompletionMessage, turns []jobapi.TurnSeq, journal []jobapi.Event) []Event {
	h := newHistory(msgs, turns, journal)
	out := h.transcript
	fresh := h.freshMessages()
	for i, e := range h.journal {
		if isMessage(e) {
			if fresh[i] {
				out = append(out, e)
			}
			continue
		}
		if i >= h.cut && !h.given(e) {
			out = append(out, e)
		}
	}
	return out
}

// history is what History merges.
type history struct {
	msgs       []openai.ChatCompletionMessage
	turns      []jobapi.TurnSeq
	seqOf      map[int]int // a turn's answer's seq
	transcript []Event
	journal    []Event
	called     map[string]bool // calls the transcript holds
	answered   map[string]bool // calls whose result (or refusal) it holds
	cut        int             // the journal's events before it are the transcript's
}

func newHistory(msgs []openai.ChatCompletionMessage, turns []jobapi.TurnSeq, journal []jobapi.Event) *history {
	h := &history{msgs: msgs, turns: turns, seqOf: map[int]int{}, transcript: FromTranscript(msgs, turns),
		called: map[string]bool{}, answered: map[string]bool{}}
	for _, t := range turns {
		h.seqOf[t.Turn] = t.Seq
	}
	for _, e := range h.transcript {
		switch e := e.(type) {
		case ToolCall:
			h.called[e.Call] = true
		case ToolResult:
			h.answered[e.Call] = true
		case Decision:
			h.answered[e.Call] = true
		}
	}
	better := map[string]Event{}
	for i, je := range journal {
		e := FromJournal(je)
		h.journal = append(h.journal, e)
		if h.holds(e) {
			h.cut = i + 1
		}
		switch e := e.(type) {
		case ToolResult:
			if h.answered[e.Call] && (e.Output != "" || e.Diff != nil) {
				better[e.Call] = e
			}
		case Decision:
			if h.answered[e.Call] && e.Decision != approval.Allow {
				better[e.Call] = e
			}
		}
	}
	for i, e := range h.transcript {
		if b, ok := better[callOf(e)]; ok {
			h.transcript[i] = b
		}
	}
	return h
}

// holds says whether the transcript holds a journal event that marks
// the journal's progress: a model turn, a final answer, a call's result
// or refusal.
func (h *history) holds(e Event) bool {
	switch e := e.(type) {
	case Model:
		s, ok := h.seqOf[e.Turn]
		return ok && s <= len(h.msgs)
	case Answer:
		s, ok := h.seqOf[e.Turn]
		return ok && s >= 2 && s <= len(h.msgs) && len(h.msgs[s-1].ToolCalls) == 0 && h.msgs[s-1].Content == e.Text
	case ToolResult:
		return h.answered[e.Call]
	case Decision:
		return e.Decision != approval.Allow && h.answered[e.Call]
	}
	return false
}

// given says whether the transcript gave e already (a call it holds, its
// result, a turn it holds).
func (h *history) given(e Event) bool {
	switch e := e.(type) {
	case ToolCall:
		return h.called[e.Call]
	case Decision:
		return h.answered[e.Call]
	case Waiting:
		return h.answered[e.Call]
	case ToolResult:
		return h.answered[e.Call]
	case Model, Answer:
		return h.holds(e)
	}
	return false
}

// freshMessages marks the journal's people's messages the transcript
// does not hold: those past the count of its messages of the same text
// after the journal's first turn's answer (what was said before that is
// not in the journal), or after the answer its first message followed
// when that is earlier (a job started without a task: its first message,
// turn 0, is in the journal and the transcript alike).
func (h *history) freshMessages() map[int]bool {
	first := -1
	for _, e := range h.journal {
		if t := turnOf(e); t > 0 {
			first = t
			break
		}
	}
	for _, e := range h.journal {
		if _, ok := messageText(e); ok {
			if t := turnOf(e); first < 0 || t < first {
				first = t
			}
			break
		}
	}
	bound := 0
	for _, t := range h.turns {
		if t.Turn <= first && t.Seq > bound {
			bound = t.Seq
		}
	}
	held := map[string]int{}
	for seq := bound + 1; seq <= len(h.msgs); seq++ {
		if m := h.msgs[seq-1]; m.Role == openai.ChatMessageRoleUser {
			held[m.Content]++
		}
	}
	fresh := map[int]bool{}
	for i, e := range h.journal {
		text, ok := messageText(e)
		if !ok {
			continue
		}
		if held[text] > 0 {
			held[text]--
			continue
		}
		fresh[i] = true
	}
	return fresh
}

// messageText is what a person said, when e is a person's message.
func messageText(e Event) (string, bool) {
	n, ok := e.(Note)
	if !ok || n.Kind != "message" {
		return "", false
	}
	who, text, ok := strings.Cut(n.Text, ": ")
	if !ok || strings.HasSuffix(who, " refused") {
		return "", false
	}
	return text, true
}

func isMessage(e Event) bool {
	_, ok := messageText(e)
	return ok
}

// callOf is the call a result or a decision is of ("" for other events).
func callOf(e Event) string {
	switch e := e.(type) {
	case ToolResult:
		return e.Call
	case Decision:
		return e.Call
	}
	return ""
}

// turnOf is the journal turn of e (0: none).
func turnOf(e Event) int {
	switch e := e.(type) {
	case Model:
		return e.Turn
	case ToolCall:
		return e.Turn
	case Decision:
		return e.Turn
	case Waiting:
		return e.Turn
	case ToolResult:
		return e.Turn
	case Answer:
		return e.Turn
	case Park:
		return e.Turn
	case Error:
		return e.Turn
	case Note:
		return e.Turn
	}
	return 0
}
