package inbox

import (
	"fmt"
	"strings"
	"time"

	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Everything below comes from the model or the job (task, summaries,
// commands, previews, paths, call IDs, rules) and is untrusted. It reaches
// the page in two layers: package display first, which turns escape
// sequences, invisible and look-alike characters into visible ⟨…⟩ escapes
// (what a person reads is what runs), then html/template, which escapes
// for HTML, attributes and URLs by context. Nothing here is ever marked
// template.HTML.

// Limits of what the page shows, in characters: longer texts show their
// head and their tail (display.Line), never only the head.
const (
	maxName     = 200
	maxTask     = 300
	maxReason   = 500
	maxRule     = 500
	maxPreview  = 400 // lines
	maxWorkPath = 300
	// An answer's lines, and each line's characters.
	maxAnswerLines     = 200
	maxAnswerLineChars = 2000
)

// pageView is what the templates render.
type pageView struct {
	Prefix  string
	CSRF    string
	By      string // the name answers go with unless the person sets one
	ByFixed bool   // the name comes from the person's token: not editable
	List    listView
}

// listView is the part of the page the event stream replaces.
type listView struct {
	Version uint64
	Calls   int
	Err     string
	At      string
	Jobs    []jobView
}

type jobView struct {
	ID        string // raw, for the answer's address (sent back as data)
	Shown     string // rendered for reading
	Parent    string // a subagent's parent job, rendered ("" for none)
	Task      string
	Workspace string
	Host      string
	Calls     []callView
	Grants    []grantView
	// Waiting: the job answered and waits for the next message; Answer
	// is its last answer, as lines for reading.
	Waiting bool
	Answer  string
}

type callView struct {
	Key     string // job + "/" + call: the element's identity across redraws
	Job     string // raw IDs, sent back as data, never shown
	Call    string
	ShownID string
	Tool    string
	Summary string
	Reason  string
	Rule    string
	// Quorum: the call needs several approvals; Always, Never and grants
	// would be refused by the job, so they are not offered.
	Quorum   bool
	Preview  []previewLine
	Diff     bool
	Deadline string // RFC 3339, for the countdown
	Left     string // "42 s", as rendered
	Asked    string
}

type previewLine struct {
	Class string // add, del, hunk, meta or ""
	Text  string
}

type grantView struct {
	Job   string
	ID    string
	Rule  string
	Scope string
	By    string
	Until string
	Used  string // "not used yet", "used once", "used 3 times"
}

// newListView renders a snapshot for the page at now.
func newListView(s Snapshot, now time.Time) listView {
	lv := listView{Version: s.Version, Calls: s.Calls(), Err: display.Line(s.Err, maxReason), At: s.At.UTC().Format("15:04:05 UTC")}
	for _, j := range s.Jobs {
		jv := jobView{ID: j.ID, Shown: display.Line(j.ID, maxName), Parent: display.Line(j.Parent, maxName), Task: taskLine(j.Task),
			Workspace: display.Line(j.Workspace, maxWorkPath), Host: display.Line(j.Host, maxName),
			Waiting: j.WaitsForMessage(), Answer: display.Block(j.LastAnswer, maxAnswerLines, maxAnswerLineChars)}
		for _, p := range j.Calls {
			jv.Calls = append(jv.Calls, newCallView(j.ID, p, now))
		}
		for _, g := range j.Grants {
			jv.Grants = append(jv.Grants, grantView{Job: j.ID, ID: g.ID, Rule: display.Line(g.Rule, maxRule),
				Scope: display.Line(g.Scope, maxName), By: who(g.By, g.Channel), Until: g.Until.UTC().Format("2006-01-02 15:04 UTC"), Used: used(g.Uses)})
		}
		lv.Jobs = append(lv.Jobs, jv)
	}
	return lv
}

func newCallView(job string, p jobapi.PendingAsk, now time.Time) callView {
	diff := p.Tool == "Write" || p.Tool == "Edit"
	return callView{
		Key: job + "/" + p.CallID, Job: job, Call: p.CallID, ShownID: display.Line(p.CallID, maxName),
		Tool: display.Line(p.Tool, maxName), Summary: display.SafeLine(p.Summary),
		Reason: display.Line(p.Reason, maxReason), Rule: display.Line(p.Rule, maxRule), Quorum: len(p.Quorum) > 0,
		Preview: previewLines(p.Preview, diff), Diff: diff,
		Deadline: p.Deadline.UTC().Format(time.RFC3339Nano), Left: left(p.Deadline, now),
		Asked: p.AskedAt.UTC().Format("15:04:05 UTC"),
	}
}

// previewLines splits a preview into lines, classed for a diff. The
// preview was rendered by the workflow (display.Block), so it goes through
// display.Safe: text already rendered stays as it is, anything a browser
// would not show as itself is escaped.
func previewLines(preview string, diff bool) []previewLine {
	if preview == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(display.Safe(preview), "\n"), "\n")
	if len(lines) > maxPreview {
		left := len(lines) - maxPreview
		lines = append(lines[:maxPreview-1:maxPreview-1], fmt.Sprintf("⟨… %d lines left out …⟩", left+1))
	}
	out := make([]previewLine, len(lines))
	for i, l := range lines {
		// Safe, not Line: the text is rendered already (Line would escape
		// its ⟨ a second time); the workflow's Block bounded each line.
		out[i] = previewLine{Text: l}
		if diff {
			out[i].Class = diffClass(l)
		}
	}
	return out
}

func diffClass(l string) string {
	switch {
	case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		return "meta"
	case strings.HasPrefix(l, "@@"):
		return "hunk"
	case strings.HasPrefix(l, "+"):
		return "add"
	case strings.HasPrefix(l, "-"):
		return "del"
	}
	return ""
}

// left is how long until a deadline, as the page first shows it (the
// script counts down from there).
func left(deadline, now time.Time) string {
	d := deadline.Sub(now).Round(time.Second)
	if d <= 0 {
		return "timing out"
	}
	return d.String()
}

func taskLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return display.Line(first, maxTask)
}

func who(by, channel string) string {
	s := display.Line(by, maxName)
	if s == "" {
		s = "someone"
	}
	if channel != "" {
		s += " via " + display.Line(channel, maxName)
	}
	return s
}

func used(n int) string {
	switch n {
	case 0:
		return "not used yet"
	case 1:
		return "used once"
	}
	return fmt.Sprintf("used %d times", n)
}
