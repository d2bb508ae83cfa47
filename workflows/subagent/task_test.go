package subagent

import (
	"strings"
	"testing"

	"github.com/custos-dev/custos/activities/api"
)

// A Task call names a defined subagent, the general one ("" or
// general-purpose), or gets why not with the names it could use.
func TestFindNamesTheSubagentOrSaysWhichExist(t *testing.T) {
	agents := []api.Subagent{{Name: "reviewer"}, {Name: "tester"}}
	if a, why := Find(agents, "tester"); a == nil || a.Name != "tester" || why != "" {
		t.Errorf("Find(tester) = %v, %q", a, why)
	}
	for _, name := range []string{"", " ", "general-purpose"} {
		if a, why := Find(agents, name); a != nil || why != "" {
			t.Errorf("Find(%q) = %v, %q, want the general subagent", name, a, why)
		}
	}
	if _, why := Find(agents, "nope"); !strings.Contains(why, `unknown subagent_type "nope"`) || !strings.Contains(why, "reviewer, tester") {
		t.Errorf("Find(nope) says %q", why)
	}
	if _, why := Find(nil, "nope"); !strings.Contains(why, "none is defined") {
		t.Errorf("Find with none defined says %q", why)
	}
}

// A child's answer is told with why it stopped, its files, its commands
// and its tokens, capped at the tool output's limit.
func TestResultTellsTheChildsAnswer(t *testing.T) {
	got := Result("j-task-c1", "look", strings.Repeat("x", 50), "max turns", []string{"a.go", "b.go"}, 2, 123, 10, nil)
	for _, want := range []string{"Subagent j-task-c1 (look) answered (it stopped: max turns):", "xxxxxxxxxx\n[custos: the answer has 50 bytes",
		"Files it changed with Write or Edit: a.go, b.go.", "Commands it ran: 2", "Tokens: 123."} {
		if !strings.Contains(got, want) {
			t.Errorf("Result lacks %q:\n%s", want, got)
		}
	}
	if got := Result("j-task-c1", "look", "ok", "done", nil, 0, 1, 100, nil); strings.Contains(got, "stopped") || strings.Contains(got, "Commands") ||
		!strings.Contains(got, "Write or Edit: none.") {
		t.Errorf("a done child with no changes is told as:\n%s", got)
	}
}
