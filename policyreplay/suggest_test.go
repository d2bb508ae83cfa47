package policyreplay

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
)

// past is one recorded call for a test job: a command (Bash) or a path
// (Edit), and how it ended.
type past struct {
	tool, arg string
	how       string // "yes": a person allowed; "no": a person denied; "timeout"; "rule": allowed by a rule
}

func pastJob(id string, calls []past) Job {
	env := &approval.Env{Workspace: "/srv/app", Home: "/home/dev", Sandbox: approval.SandboxStatus{Backend: "bwrap"}}
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	j := Job{ID: id, Workspace: "/srv/app", Records: []approval.AuditRecord{{Seq: 1, Time: t0, JobID: id, Event: "sandbox", Env: env}}}
	for i, c := range calls {
		in := map[string]string{"command": c.arg}
		if c.tool != "Bash" {
			in = map[string]string{"file_path": c.arg, "old_string": "a", "new_string": "b"}
		}
		raw, _ := json.Marshal(in)
		r := approval.AuditRecord{Seq: i + 2, Time: t0.Add(time.Duration(i) * time.Minute), JobID: id,
			CallID: fmt.Sprintf("call_%d", i), Tool: c.tool, Input: raw, Mode: approval.ModeDefault, Layer: approval.LayerHuman}
		switch c.how {
		case "yes":
			r.Decision, r.Approver, r.WaitMillis = approval.Allow, "alice", 1000
		case "no":
			r.Decision, r.Approver = approval.Deny, "bob"
		case "timeout":
			r.Decision, r.Approver = approval.Deny, "timeout"
		case "sys":
			r.Decision, r.Layer, r.Rule, r.System = approval.Deny, approval.LayerRules, "rm-root", true
		case "rule":
			r.Decision, r.Layer, r.Rule = approval.Allow, approval.LayerRules, "Bash(ls:*)"
		}
		j.Records = append(j.Records, r)
	}
	return j
}

func TestSuggestNarrowestRules(t *testing.T) {
	goTests := []past{{"Bash", "go test ./a", "yes"}, {"Bash", "go test ./a", "yes"}, {"Bash", "go test ./b", "yes"}, {"Bash", "go test -run X ./b", "yes"}}
	edits := []past{{"Edit", "src/api/a.go", "yes"}, {"Edit", "src/api/b.go", "yes"}, {"Edit", "src/db/c.go", "yes"}}
	for _, tc := range []struct {
		name     string
		calls    []past
		deny     []string // the workspace's current deny rules
		min      int
		want     []string
		rejected map[string]string // rule: a part of why
	}{
		{name: "exact rule once it has enough approvals", min: 2, calls: goTests,
			want: []string{"Bash(go test ./a)", "Bash(go test:*)"}},
		{name: "a prefix when no exact rule has enough", min: 3, calls: goTests,
			want: []string{"Bash(go test:*)"}},
		{name: "a denial rules out the broader rule", min: 3,
			calls: append([]past{{"Bash", "go tool pprof x", "no"}}, goTests...),
			want:  []string{"Bash(go test:*)"}, rejected: map[string]string{"Bash(go:*)": "covers a denial"}},
		{name: "a denial spelled with quotes is the same program", min: 3,
			calls: append([]past{{"Bash", "'g'o tool pprof x", "no"}}, goTests...),
			want:  []string{"Bash(go test:*)"}, rejected: map[string]string{"Bash(go:*)": "covers a denial"}},
		{name: "a denial through a wrapper", min: 3,
			calls: append([]past{{"Bash", "timeout 5 go tool pprof x", "no"}}, goTests...),
			want:  []string{"Bash(go test:*)"}, rejected: map[string]string{"Bash(go:*)": "covers a denial"}},
		{name: "a timed-out ask counts as a denial", min: 4,
			calls: append([]past{{"Bash", "go vet ./...", "timeout"}}, goTests...),
			want:  []string{"Bash(go test:*)"}, rejected: map[string]string{"Bash(go:*)": "covers a denial"}},
		{name: "a deny rule that overrides it for an approval", min: 3, calls: goTests, deny: []string{"Bash(go test ./b:*)"},
			want: []string{}, rejected: map[string]string{"Bash(go test:*)": "override", "Bash(go:*)": "override"}},
		{name: "directories of edits, a denied file rules the parent out", min: 2,
			calls: append([]past{{"Edit", "src/secrets/key.go", "no"}}, edits...),
			want:  []string{"Edit(src/api/**)"}, rejected: map[string]string{"Edit(src/**)": "covers a denial"}},
		{name: "a rule a system rule overrides for a denial is not suggested", min: 3,
			calls: []past{{"Bash", "dd if=/dev/zero of=/dev/sda", "sys"},
				{"Bash", "dd if=a.img of=b.img", "yes"}, {"Bash", "dd if=a.img of=c.img", "yes"}, {"Bash", "dd if=a.img of=d.img", "yes"}},
			want: []string{}, rejected: map[string]string{"Bash(dd:*)": "system rule dd-device"}},
		{name: "through a wrapper a system rule denies", min: 3,
			calls: []past{{"Bash", "sudo ls /root", "sys"}, {"Bash", "ls a", "yes"}, {"Bash", "ls a", "yes"}, {"Bash", "ls a", "yes"}, {"Bash", "ls b", "yes"}},
			want:  []string{"Bash(ls a)"}, rejected: map[string]string{"Bash(ls:*)": "system rule privilege-escalation"}},
		{name: "too few approvals: nothing", min: 5, calls: goTests, want: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs := []Job{pastJob("job-1", tc.calls)}
			cur := approval.Settings{Permissions: approval.Permissions{Deny: tc.deny}}
			got, err := Suggest(jobs, Fixed{Now: cur, New: cur}, tc.min)
			require.NoError(t, err)
			var rules []string
			for _, s := range got.Suggestions {
				rules = append(rules, s.Rule)
				assert.GreaterOrEqual(t, len(s.Approvals), tc.min, "%s", s.Rule)
			}
			if rules == nil {
				rules = []string{}
			}
			assert.Equal(t, tc.want, rules)
			why := map[string]string{}
			for _, r := range got.Rejected {
				why[r.Rule] = r.Why
			}
			for rule, part := range tc.rejected {
				assert.Contains(t, why[rule], part, "%s", rule)
			}
			for _, s := range got.Suggestions {
				proveByReplay(t, jobs, cur, s)
			}
		})
	}
}

// proveByReplay replays the record with the suggested rule added: exactly
// its approvals become allowed without asking, and no denial is allowed.
func proveByReplay(t *testing.T, jobs []Job, cur approval.Settings, s Suggestion) {
	t.Helper()
	next := cur
	next.Permissions.Allow = append(append([]string(nil), cur.Permissions.Allow...), s.Rule)
	rep, err := Replay(jobs, Fixed{Now: cur, New: next}, Options{})
	require.NoError(t, err)
	assert.Zero(t, rep.DeniedNowAllowed(), "%s allows a past denial", s.Rule)
	var allowed []int
	for _, c := range rep.Changes {
		if c.Kind == ApprovalAllowed {
			allowed = append(allowed, c.Seq)
		}
	}
	var want []int
	for _, e := range s.Approvals {
		want = append(want, e.Seq)
	}
	assert.Equal(t, want, allowed, "%s: the approvals replay says it allows", s.Rule)
}

// The fixture audit: people approved npm test four times and nothing else
// as often; the rule Always would save covers them.
func TestSuggestOverFixtureAudit(t *testing.T) {
	jobs, err := FromStateDir("testdata/state", Filter{})
	require.NoError(t, err)
	got, err := Suggest(jobs, Fixed{}, 3)
	require.NoError(t, err)
	require.Len(t, got.Suggestions, 1)
	s := got.Suggestions[0]
	assert.Equal(t, "Bash(npm test)", s.Rule)
	assert.Len(t, s.Approvals, 4)
	assert.Equal(t, []string{"/srv/app"}, s.Workspaces)
	proveByReplay(t, jobs, approval.Settings{}, s)
}
