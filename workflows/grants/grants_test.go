package grants

import (
	"strings"
	"testing"
	"time"

	"github.com/custos-dev/custos/workflows/jobapi"
)

func TestEndRefusesWhatCannotBeGiven(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if end, err := End(jobapi.GrantSpec{For: "30m"}, now); err != nil || !end.Equal(now.Add(30*time.Minute)) {
		t.Errorf("End(30m) = %v, %v", end, err)
	}
	for _, g := range []jobapi.GrantSpec{
		{Scope: "world", For: "1m"}, {}, {For: "1m", Until: now.Add(time.Hour)}, {For: "soon"}, {For: "-1m"},
		{For: "1000h"}, {Until: now.Add(-time.Minute)}, {Until: now.Add(1000 * time.Hour)},
	} {
		if _, err := End(g, now); err == nil {
			t.Errorf("End(%+v) gave a grant", g)
		}
	}
	if Scope(jobapi.GrantSpec{}) != jobapi.ScopeJob || Rule(jobapi.GrantSpec{Rule: " "}, "Bash(npm test)") != "Bash(npm test)" {
		t.Error("Scope or Rule do not default")
	}
}

func TestDetailsNameTheRevokeUpdate(t *testing.T) {
	var b strings.Builder
	Details(&b, nil)
	if b.Len() != 0 {
		t.Errorf("Details of no grants wrote %q", b.String())
	}
	Details(&b, []jobapi.Grant{{ID: "g1", Rule: "Bash(npm test)", Scope: "job", By: "ann"}})
	if s := b.String(); !strings.Contains(s, "### Grants (1)") || !strings.Contains(s, `{"grantId":"g1","by":"web-ui","channel":"web-ui"}`) {
		t.Errorf("Details = %q", s)
	}
}
