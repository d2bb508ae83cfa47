package api

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/custos-dev/custos/display"
)

// toolNames are custos' tools, in the order the model is offered them
// (package activities defines each one, in this order).
var toolNames = []string{ReadActivity, GlobActivity, GrepActivity, LSPActivity, WriteActivity, EditActivity, BashActivity}

// ToolNames are the tools' names, in the order the model is offered them.
func ToolNames() []string { return append([]string(nil), toolNames...) }

// KnownTool reports whether name is one of the tools.
func KnownTool(name string) bool {
	for _, n := range toolNames {
		if n == name {
			return true
		}
	}
	return false
}

// Bash timeouts, in milliseconds as the model gives them.
const (
	DefaultBashTimeoutMS = 120_000
	MaxBashTimeoutMS     = 600_000
)

// CheckBashTimeout is the rule for a Bash call's timeout (milliseconds, nil
// when the call gives none): the default when none is given; an error when
// out of range, which the tool refuses.
func CheckBashTimeout(ms *int) (time.Duration, error) {
	if ms == nil {
		return DefaultBashTimeoutMS * time.Millisecond, nil
	}
	if *ms <= 0 || *ms > MaxBashTimeoutMS {
		return 0, fmt.Errorf("timeout is in milliseconds and must be between 1 and %d, got %d", MaxBashTimeoutMS, *ms)
	}
	return time.Duration(*ms) * time.Millisecond, nil
}

// BashTimeout is how long a Bash call's command may run, read from its input
// by the rule the tool applies (the workflow sizes the activity's deadline
// with it). An input the tool would refuse gets the default: the tool
// answers it at once.
func BashTimeout(input json.RawMessage) time.Duration {
	// Bash's parameters, decoded leniently: a field of the wrong type is
	// an input the tool refuses.
	var in struct {
		Command     string `json:"command"`
		Timeout     *int   `json:"timeout"`
		Description string `json:"description"`
	}
	if json.Unmarshal(input, &in) != nil {
		return DefaultBashTimeoutMS * time.Millisecond
	}
	d, err := CheckBashTimeout(in.Timeout)
	if err != nil {
		return DefaultBashTimeoutMS * time.Millisecond
	}
	return d
}

// maxSummary bounds Summarize's answer: the characters shown of a longer
// one, head and tail.
const maxSummary = 100

// Summarize gives a one-line human summary of a tool call ("Read README.md",
// "Bash: go test ./...") for activity summaries, the terminal, status and
// the channels. It is display text (display.Line): what the model wrote is
// shown with line breaks, control characters, escape sequences and
// invisible characters escaped, and a long summary keeps its head and its
// tail, so a command's end never disappears. It never fails: malformed
// input is summarized as such.
func Summarize(tool string, input json.RawMessage) string {
	var args map[string]any
	if err := json.Unmarshal(input, &args); err != nil || args == nil {
		return clip(tool + " (invalid arguments)")
	}
	str := func(k string) string {
		s, _ := args[k].(string)
		return s
	}
	var s string
	switch tool {
	case ReadActivity:
		s = "Read " + str("file_path")
		if off, ok := args["offset"].(float64); ok && off > 1 {
			s += fmt.Sprintf(" from line %d", int(off))
		}
	case GlobActivity:
		s = "Glob " + str("pattern")
		if p := str("path"); p != "" {
			s += " in " + p
		}
	case GrepActivity:
		s = `Grep "` + str("pattern") + `"`
		if p := str("path"); p != "" {
			s += " in " + p
		}
		if g := str("glob"); g != "" {
			s += " (" + g + ")"
		}
	case LSPActivity:
		s = "LSP " + str("operation") + " " + str("file_path")
		if line, ok := args["line"].(float64); ok {
			s += fmt.Sprintf(":%d", int(line))
			if col, ok := args["column"].(float64); ok {
				s += fmt.Sprintf(":%d", int(col))
			}
		}
	case WriteActivity:
		s = "Write " + str("file_path")
	case EditActivity:
		s = "Edit " + str("file_path")
		if b, _ := args["replace_all"].(bool); b {
			s += " (replace all)"
		}
	case BashActivity:
		s = "Bash: " + str("command")
	case TaskTool:
		s = taskSummary(str("description"), str("subagent_type"), str("isolation"))
	default:
		compact, _ := json.Marshal(args) // map keys are sorted: deterministic
		s = tool + " " + string(compact)
	}
	return clip(s)
}

// clip makes s one line of display text, at most maxSummary characters
// of it shown.
func clip(s string) string {
	return display.Line(s, maxSummary)
}
