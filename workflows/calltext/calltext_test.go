package calltext

import (
	"slices"
	"testing"

	"github.com/custos-dev/custos/approval"
)

func TestShorteningMarksEveryCut(t *testing.T) {
	if got := FirstLine("npm test\nmore", 100); got != "npm test …" {
		t.Errorf("FirstLine = %q", got)
	}
	if got := FirstLine("abcdef", 3); got != "abc…" {
		t.Errorf("FirstLine cut = %q", got)
	}
	if got := FirstLines("a\nb\nc", 2); got != "a\nb\n…" {
		t.Errorf("FirstLines = %q", got)
	}
	if got := CutRunes("héllo", 2); got != "hé…" {
		t.Errorf("CutRunes = %q", got)
	}
	if got := CutRunes("héllo", 5); got != "héllo" {
		t.Errorf("CutRunes kept = %q", got)
	}
}

func TestCallOrderAndNames(t *testing.T) {
	if got := InCallOrder([]string{"c", "x", "a"}, []string{"a", "b", "c"}); !slices.Equal(got, []string{"a", "c", "x"}) {
		t.Errorf("InCallOrder = %v", got)
	}
	if got := Remove([]string{"a", "b", "a"}, "a"); !slices.Equal(got, []string{"b"}) {
		t.Errorf("Remove = %v", got)
	}
	if got := Who("", "slack"); got != "someone via slack" {
		t.Errorf("Who = %q", got)
	}
	if got := CodeSpan("a`b"); got != "`a'b`" {
		t.Errorf("CodeSpan = %q", got)
	}
	rec := approval.AuditRecord{Decision: approval.Deny, Layer: approval.LayerHuman, Approver: "ann", Rule: "Bash(rm *)", Reason: "no"}
	if got, want := Decision(rec), "deny by "+string(approval.LayerHuman)+" ann (Bash(rm *)): no"; got != want {
		t.Errorf("Decision = %q, want %q", got, want)
	}
}
