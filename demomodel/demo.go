package demomodel

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// DemoNote is the file the demo model asks to write in the workspace.
const DemoNote = "CUSTOS_DEMO.md"

// DemoCommand is the shell command the demo model asks to run.
const DemoCommand = "ls -la && wc -l " + DemoNote

const demoIntro = "I am custos' offline demo model (no OPENAI_API_KEY is set), so I follow a fixed script instead of thinking."

// Demo is the model custos uses when no OPENAI_API_KEY is set. It is stateless:
// every answer is derived from the conversation it is sent (the turn after the
// latest user message), so a job keeps going across worker restarts and
// continue-as-new. The script shows every approval path:
//
//  1. Glob "**/*" (read-only, allowed without asking);
//  2. Read README.md, or the first file the Glob result lists;
//  3. Write CUSTOS_DEMO.md, a note about the task and the files seen (needs approval);
//  4. Bash "ls -la && wc -l CUSTOS_DEMO.md" (needs approval);
//  5. a final answer saying which steps were approved or denied.
//
// Steps whose tool the request does not offer are skipped. Argument names are
// taken from the offered tool schemas when they have them.
func Demo() Handler {
	return func(req openai.ChatCompletionRequest) (Reply, error) {
		return demoReply(req), nil
	}
}

// demoTurn is what the demo model has done since the latest user message.
type demoTurn struct {
	req     openai.ChatCompletionRequest
	task    string
	calls   map[string]openai.ToolCall // tool name → the demo's latest call of it
	results map[string]string          // tool call id → tool result content
	turns   int                        // assistant messages since the task
}

func demoReply(req openai.ChatCompletionRequest) Reply {
	t := newDemoTurn(req)
	if t.task == "" {
		return Say(demoIntro + " I did not find a task in the conversation: send one as a user message.")
	}
	if _, done := t.calls["Glob"]; !done && t.offers("Glob") {
		return t.call("Let me look at the files in the workspace.",
			"Glob", map[string]any{t.param("Glob", "pattern", "glob"): "**/*"})
	}
	if _, done := t.calls["Read"]; !done && t.offers("Read") {
		if file := pickFile(t.globFiles()); file != "" {
			return t.call("Let me read "+file+".", "Read", map[string]any{t.param("Read", "file_path", "path", "filePath"): file})
		}
	}
	if _, done := t.calls["Write"]; !done && t.offers("Write") {
		return t.call("I will write a short note about this job to "+DemoNote+"; this needs your approval.",
			"Write", map[string]any{
				t.param("Write", "file_path", "path", "filePath"): DemoNote,
				t.param("Write", "content", "text"):               t.note(),
			})
	}
	if _, done := t.calls["Bash"]; !done && t.offers("Bash") {
		return t.call("Now I will list the workspace and count the note's lines; running a command needs your approval.",
			"Bash", map[string]any{t.param("Bash", "command", "cmd"): DemoCommand})
	}
	return Say(t.summary())
}

func newDemoTurn(req openai.ChatCompletionRequest) *demoTurn {
	t := &demoTurn{req: req, calls: map[string]openai.ToolCall{}, results: map[string]string{}}
	last := -1
	for i, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleUser {
			last = i
		}
	}
	if last < 0 {
		return t
	}
	t.task = strings.TrimSpace(messageText(req.Messages[last]))
	for _, m := range req.Messages[last+1:] {
		switch m.Role {
		case openai.ChatMessageRoleAssistant:
			t.turns++
			for _, tc := range m.ToolCalls {
				t.calls[tc.Function.Name] = tc
			}
		case openai.ChatMessageRoleTool:
			t.results[m.ToolCallID] = messageText(m)
		}
	}
	return t
}

func messageText(m openai.ChatCompletionMessage) string {
	if m.Content != "" || len(m.MultiContent) == 0 {
		return m.Content
	}
	var parts []string
	for _, p := range m.MultiContent {
		if p.Type == openai.ChatMessagePartTypeText {
			parts = append(parts, p.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// offers reports whether the request lists tool; a request without tools gets
// the whole script.
func (t *demoTurn) offers(tool string) bool {
	if len(t.req.Tools) == 0 {
		return true
	}
	return t.schema(tool) != nil
}

// schema returns the properties of tool's parameter schema (nil when the tool is
// not offered, empty when it has no usable schema).
func (t *demoTurn) schema(tool string) map[string]json.RawMessage {
	for _, tl := range t.req.Tools {
		if tl.Function == nil || tl.Function.Name != tool {
			continue
		}
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if b, err := json.Marshal(tl.Function.Parameters); err == nil {
			_ = json.Unmarshal(b, &s)
		}
		if s.Properties == nil {
			s.Properties = map[string]json.RawMessage{}
		}
		return s.Properties
	}
	return nil
}

// param picks the first candidate argument name tool's schema declares, or the
// first candidate (Claude Code's name) when the schema says nothing.
func (t *demoTurn) param(tool string, candidates ...string) string {
	props := t.schema(tool)
	for _, c := range candidates {
		if _, ok := props[c]; ok {
			return c
		}
	}
	return candidates[0]
}

func (t *demoTurn) call(text, tool string, args map[string]any) Reply {
	if len(t.calls) == 0 {
		text = demoIntro + " " + text
	}
	// The id comes from the conversation, not the server's counter: after a
	// worker restart the counter starts again and would reuse ids already in
	// the conversation.
	id := fmt.Sprintf("call_demo_%d_%s", t.turns+1, strings.ToLower(tool))
	r := Calls(ToolCall(id, tool, args))
	r.Message.Content = text
	return r
}

// result is the tool result of the demo's call of tool ("" if none).
func (t *demoTurn) result(tool string) (string, bool) {
	tc, ok := t.calls[tool]
	if !ok {
		return "", false
	}
	res, ok := t.results[tc.ID]
	return res, ok
}

// globFiles lists the paths in the Glob result: one per line, skipping notes
// such as "No files found" or "[200 of 512 matches shown…]".
func (t *demoTurn) globFiles() []string {
	res, _ := t.result("Glob")
	if denied, _ := isDenial(res); denied || strings.HasPrefix(res, "Error") {
		return nil
	}
	var files []string
	for _, line := range strings.Split(res, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "[") || strings.HasPrefix(line, "(") ||
			strings.HasSuffix(line, "/") || line == "No files found" {
			continue
		}
		files = append(files, line)
	}
	return files
}

// pickFile prefers a top-level README, then any README, then the first file.
func pickFile(files []string) string {
	for _, f := range files {
		if strings.HasPrefix(strings.ToUpper(f), "README") {
			return f
		}
	}
	for _, f := range files {
		if strings.HasPrefix(strings.ToUpper(path.Base(f)), "README") {
			return f
		}
	}
	if len(files) > 0 {
		return files[0]
	}
	return ""
}

func (t *demoTurn) note() string {
	var b strings.Builder
	b.WriteString("# custos demo\n\n")
	b.WriteString("Written by custos' offline demo model (no OPENAI_API_KEY was set).\n\n")
	fmt.Fprintf(&b, "## Task\n\n%s\n\n", shorten(t.task, 500))
	files := t.globFiles()
	fmt.Fprintf(&b, "## Files seen (%d)\n\n", len(files))
	for i, f := range files {
		if i == 20 {
			fmt.Fprintf(&b, "- … and %d more\n", len(files)-20)
			break
		}
		fmt.Fprintf(&b, "- %s\n", f)
	}
	if _, ok := t.calls["Read"]; ok {
		res, _ := t.result("Read")
		lines := strings.Count(res, "\n")
		if res != "" && !strings.HasSuffix(res, "\n") {
			lines++
		}
		fmt.Fprintf(&b, "\nI read %s (%s).\n", t.readPath(), t.status("Read", fmt.Sprintf("%d lines shown", lines)))
	}
	return b.String()
}

// readPath is the file the demo's Read call asked for.
func (t *demoTurn) readPath() string {
	var args map[string]any
	_ = json.Unmarshal([]byte(t.calls["Read"].Function.Arguments), &args)
	for _, k := range []string{"file_path", "path", "filePath"} {
		if v, ok := args[k].(string); ok {
			return v
		}
	}
	return "a file"
}

// status describes what became of the demo's call of tool.
func (t *demoTurn) status(tool, ok string) string {
	res, has := t.result(tool)
	if !has {
		return "no result came back"
	}
	if denied, reason := isDenial(res); denied {
		if reason != "" {
			return "denied: " + reason
		}
		return "denied"
	}
	if strings.HasPrefix(res, "Error") {
		return "approved, but it failed: " + shorten(res, 200)
	}
	return ok
}

// isDenial recognises custos' structured result for a refused call: the
// whole result is a JSON object {"approved":false, "reason": …}. A file that
// merely contains that text (a README quoting it) is not a denial.
func isDenial(res string) (bool, string) {
	var d struct {
		Approved *bool  `json:"approved"`
		Reason   string `json:"reason"`
	}
	if json.Unmarshal([]byte(res), &d) == nil && d.Approved != nil {
		return !*d.Approved, d.Reason
	}
	return false, ""
}

func (t *demoTurn) summary() string {
	var b strings.Builder
	b.WriteString(demoIntro + "\n\n")
	fmt.Fprintf(&b, "Task: %s\n\n", shorten(t.task, 200))
	b.WriteString("What happened:\n")
	if _, ok := t.calls["Glob"]; ok {
		fmt.Fprintf(&b, "- Glob **/*: %s\n", t.status("Glob", countFiles(len(t.globFiles()))))
	}
	if _, ok := t.calls["Read"]; ok {
		fmt.Fprintf(&b, "- Read %s: %s\n", t.readPath(), t.status("Read", "done"))
	}
	if _, ok := t.calls["Write"]; ok {
		fmt.Fprintf(&b, "- Write %s: %s\n", DemoNote, t.status("Write", "approved and written"))
	}
	if _, ok := t.calls["Bash"]; ok {
		fmt.Fprintf(&b, "- Bash `%s`: %s\n", DemoCommand, t.status("Bash", "approved and run"))
	}
	if len(t.calls) == 0 {
		b.WriteString("- nothing: no tools were offered\n")
	}
	b.WriteString("\nSet OPENAI_API_KEY (and optionally OPENAI_BASE_URL) to run a real model.")
	return b.String()
}

func shorten(s string, n int) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n]) + "…"
}

func countFiles(n int) string {
	if n == 1 {
		return "found 1 file"
	}
	return fmt.Sprintf("found %d files", n)
}
