package acpagent

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/jobevents"
)

// shownCall is a tool call as the editor was shown it.
type shownCall struct {
	tool   string
	diff   []acp.ToolCallContent // a Write's or Edit's, when its input was known
	status acp.ToolCallStatus
}

// send is one session/update; a client gone is the connection's end.
func (s *session) send(u acp.SessionUpdate) {
	err := s.a.conn.SessionUpdate(s.a.ctx, acp.SessionNotification{SessionId: acp.SessionId(s.id), Update: u})
	if err != nil && s.a.ctx.Err() == nil {
		s.a.o.Logger.Warn("acp: session/update not sent", "job", s.id, "err", err)
	}
}

// render turns one job event into the editor's updates. replay: the
// journal read back by session/load (the person's own messages are shown
// too); otherwise live, where the editor shows its own prompt itself.
func (s *session) render(e jobevents.Event, replay bool) {
	s.mu.Lock()
	s.since = max(s.since, seqOf(e))
	s.mu.Unlock()
	switch e := e.(type) {
	case jobevents.Text:
		if e.Text != "" {
			s.send(acp.UpdateAgentMessageText(e.Text))
		}
	case jobevents.Thought:
		// The model's reasoning as the endpoint streams it.
		if e.Text != "" {
			s.send(acp.UpdateAgentThoughtText(e.Text))
		}
	case jobevents.Model:
		if t := saidBeforeCalls(e); t != "" && !e.Streamed {
			s.send(acp.UpdateAgentMessageText(t + "\n\n"))
		}
	case jobevents.Answer:
		if !e.Streamed && e.Text != "" {
			s.send(acp.UpdateAgentMessageText(e.Text))
		}
	case jobevents.ToolCall:
		s.toolCall(e)
	case jobevents.Decision:
		s.decision(e)
	case jobevents.Waiting:
		if !replay {
			go s.ask(e.Call)
		}
	case jobevents.ToolResult:
		s.toolResult(e)
	case jobevents.Park:
		s.send(acp.UpdateAgentThoughtText(fmt.Sprintf("[custos: %s] %s\n", e.Reason, e.Text)))
	case jobevents.Error:
		s.send(acp.UpdateAgentThoughtText("[custos: error] " + e.Text + "\n"))
	case jobevents.Note:
		s.note(e, replay)
	case jobevents.Result:
		if e.Status == jobevents.StatusFailed {
			s.send(acp.UpdateAgentMessageText(fmt.Sprintf("\n\ncustos: job %s failed: %s\n", e.Job, e.Error)))
		}
	}
}

// seqOf is the journal sequence of e (0: live text, the job, its result).
func seqOf(e jobevents.Event) int {
	switch e := e.(type) {
	case jobevents.Model:
		return e.Seq
	case jobevents.ToolCall:
		return e.Seq
	case jobevents.Decision:
		return e.Seq
	case jobevents.Waiting:
		return e.Seq
	case jobevents.ToolResult:
		return e.Seq
	case jobevents.Answer:
		return e.Seq
	case jobevents.Park:
		return e.Seq
	case jobevents.Error:
		return e.Seq
	case jobevents.Note:
		return e.Seq
	}
	return 0
}

// saidBeforeCalls is what a model turn that calls tools said before its
// calls ("" for a final answer: its Answer event gives it).
func saidBeforeCalls(m jobevents.Model) string {
	if !m.Calls {
		return ""
	}
	t := strings.TrimSpace(m.Text)
	if strings.HasPrefix(t, "calls ") {
		return ""
	}
	if i := strings.LastIndex(t, " (calls "); i >= 0 {
		t = t[:i]
	}
	return strings.TrimSpace(t)
}

// toolKinds are ACP's kinds of custos' tools (an MCP tool is "other").
var toolKinds = map[string]acp.ToolKind{
	"Read": acp.ToolKindRead, "LSP": acp.ToolKindRead,
	"Write": acp.ToolKindEdit, "Edit": acp.ToolKindEdit,
	"Bash": acp.ToolKindExecute, "Glob": acp.ToolKindSearch, "Grep": acp.ToolKindSearch,
	"WebFetch": acp.ToolKindFetch, "WebSearch": acp.ToolKindFetch,
}

func kindOf(tool string) acp.ToolKind {
	if k, ok := toolKinds[tool]; ok {
		return k
	}
	return acp.ToolKindOther
}

// callInput is what the editor is shown of a call's arguments.
type callInput struct {
	FilePath  string `json:"file_path"`
	Path      string `json:"path"`
	Content   string `json:"content"`
	OldString string `json:"old_string"`
	NewString string `json:"new_string"`
}

// locations are the file a call names, absolute in the workspace.
func (s *session) locations(in callInput) []acp.ToolCallLocation {
	p := in.FilePath
	if p == "" {
		p = in.Path
	}
	if p == "" {
		return nil
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.ws, p)
	}
	return []acp.ToolCallLocation{{Path: filepath.Clean(p)}}
}

// diffOf is ACP's diff block of a call before it runs: a Write's whole
// new content (its old one is not known yet: the result's diff brings
// it, and says when the file was new) or an Edit's replaced text and its
// replacement.
func diffOf(tool string, in callInput, loc []acp.ToolCallLocation) []acp.ToolCallContent {
	if len(loc) == 0 {
		return nil
	}
	switch tool {
	case "Write":
		return []acp.ToolCallContent{acp.ToolDiffContent(loc[0].Path, in.Content)}
	case "Edit":
		return []acp.ToolCallContent{acp.ToolDiffContent(loc[0].Path, in.NewString, in.OldString)}
	}
	return nil
}

func (s *session) toolCall(e jobevents.ToolCall) {
	var in callInput
	var raw any
	if len(e.Input) > 0 {
		_ = json.Unmarshal(e.Input, &in)
		_ = json.Unmarshal(e.Input, &raw)
	}
	loc := s.locations(in)
	diff := diffOf(e.Tool, in, loc)
	s.mu.Lock()
	s.calls[e.Call] = &shownCall{tool: e.Tool, diff: diff, status: acp.ToolCallStatusPending}
	s.mu.Unlock()
	opts := []acp.ToolCallStartOpt{acp.WithStartKind(kindOf(e.Tool)), acp.WithStartStatus(acp.ToolCallStatusPending)}
	if loc != nil {
		opts = append(opts, acp.WithStartLocations(loc))
	}
	if raw != nil {
		opts = append(opts, acp.WithStartRawInput(raw))
	}
	if diff != nil {
		opts = append(opts, acp.WithStartContent(diff))
	}
	s.send(acp.StartToolCall(acp.ToolCallId(e.Call), titleOf(e.Tool, e.Summary), opts...))
}

func titleOf(tool, summary string) string {
	if summary == "" {
		return tool
	}
	return summary
}

// decision is the pipeline's verdict: an allowed call runs, a denied one
// failed, with the layer (and who) that denied it.
func (s *session) decision(e jobevents.Decision) {
	s.stopAsking(e.Call)
	if e.Decision == approval.Allow {
		s.setStatus(e.Call, acp.ToolCallStatusInProgress, nil)
		return
	}
	why := fmt.Sprintf("denied (layer %s", e.Layer)
	if e.By != "" {
		why += ", by " + e.By
	}
	why += "): " + e.Text
	s.setStatus(e.Call, acp.ToolCallStatusFailed, []acp.ToolCallContent{acp.ToolContent(acp.TextBlock(why))})
}

func (s *session) toolResult(e jobevents.ToolResult) {
	st := acp.ToolCallStatusCompleted
	if !e.OK {
		st = acp.ToolCallStatusFailed
	}
	s.mu.Lock()
	if c := s.calls[e.Call]; c != nil && e.Diff != nil {
		c.diff = s.resultDiff(*e.Diff) // the change made, with its old text
	}
	s.mu.Unlock()
	s.setStatus(e.Call, st, resultContent(e))
}

// resultContent is what the editor is shown of a result: the output's
// excerpt (it says what it cut) or, when the journal kept none, its first
// line; a Write's or Edit's one-line confirmation when its diff shows it.
func resultContent(e jobevents.ToolResult) []acp.ToolCallContent {
	text := e.Output
	if text == "" || (e.Diff != nil && e.OK) {
		text = e.Summary
	}
	if text == "" {
		return nil
	}
	return []acp.ToolCallContent{acp.ToolContent(acp.TextBlock(text))}
}

// resultDiff is ACP's diff block of a change made: the file absolute in
// the workspace, oldText absent for a new file.
func (s *session) resultDiff(d jobevents.Diff) []acp.ToolCallContent {
	loc := s.locations(callInput{FilePath: d.Path})
	if len(loc) == 0 {
		return nil
	}
	c := acp.ToolDiffContent(loc[0].Path, d.NewText)
	c.Diff.OldText = d.OldText
	return []acp.ToolCallContent{c}
}

// setStatus updates a call shown; content, when given, follows its diff.
func (s *session) setStatus(call string, st acp.ToolCallStatus, content []acp.ToolCallContent) {
	s.mu.Lock()
	c := s.calls[call]
	if c == nil {
		c = &shownCall{}
		s.calls[call] = c
	}
	c.status = st
	if content != nil {
		content = append(append([]acp.ToolCallContent(nil), c.diff...), content...)
	}
	s.mu.Unlock()
	opts := []acp.ToolCallUpdateOpt{acp.WithUpdateStatus(st)}
	if content != nil {
		opts = append(opts, acp.WithUpdateContent(content))
	}
	s.send(acp.UpdateToolCall(acp.ToolCallId(call), opts...))
}

// note renders the journal's other steps the editor has a place for: a
// person's message (another channel's live; every one on replay), a mode
// changed from anywhere, what of the MCP servers is not used and why
// (the editor's own among them, on a worker that does not have them).
func (s *session) note(e jobevents.Note, replay bool) {
	switch e.Kind {
	case "message":
		who, text, ok := strings.Cut(e.Text, ": ")
		if !ok || strings.HasSuffix(who, " refused") || (!replay && strings.HasSuffix(who, " via "+Channel)) {
			return // a refused message never reached the model
		}
		if replay {
			s.send(acp.UpdateUserMessageText(text))
			return
		}
		s.send(acp.UpdateUserMessageText(fmt.Sprintf("(%s) %s", who, text)))
	case "mcp":
		s.send(acp.UpdateAgentThoughtText("[custos: mcp] " + e.Text + "\n"))
	case "mode":
		// "mode default -> plan by alice via cli"
		f := strings.Fields(e.Text)
		if len(f) >= 4 && f[0] == "mode" && f[2] == "->" {
			s.send(acp.SessionUpdate{CurrentModeUpdate: &acp.SessionCurrentModeUpdate{CurrentModeId: acp.SessionModeId(f[3])}})
		}
	}
}
