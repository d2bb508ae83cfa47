package policyreplay

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/hooks"
)

const guardName = "PreToolUse[0].hooks[0] ./guard.sh"

func withGuard(s approval.Settings) approval.Settings {
	s.Hooks = hooks.Config{"PreToolUse": {{Matcher: "Bash|Write", Hooks: []hooks.HookSpec{{Type: "command", Command: "./guard.sh"}}}}}
	return s
}

func allowing(rules ...string) approval.Settings {
	return approval.Settings{Permissions: approval.Permissions{Allow: rules}}
}

func denying(rules ...string) approval.Settings {
	return approval.Settings{Permissions: approval.Permissions{Deny: rules}}
}

// Layer 4 in a replay: the hooks' recorded answers stand while the proposal
// runs the same hooks; a hook that never saw a call makes it not
// replayable; system hooks are judged again; a rewrite is checked again.
func TestReplayHookOutcomes(t *testing.T) {
	bash := func(cmd string) json.RawMessage { return mustJSON(map[string]string{"command": cmd}) }
	hookDenied := approval.AuditRecord{Tool: "Bash", Input: bash("curl https://x.test"), Decision: approval.Deny,
		Layer: approval.LayerHook, Hook: guardName, HookDecision: hooks.Deny, Reason: "no network", Mode: approval.ModeDefault}
	hookAsked := approval.AuditRecord{Tool: "Bash", Input: bash("make deploy"), Decision: approval.Allow,
		Layer: approval.LayerHuman, Hook: guardName, HookDecision: hooks.Ask, Approver: "alice", Mode: approval.ModeDefault}
	oldAsked := hookAsked
	oldAsked.HookDecision, oldAsked.Mode = "", ""
	rewritten := approval.AuditRecord{Tool: "Bash", OriginalInput: bash("make-safe"), Input: bash("echo rewritten"), Modified: true,
		Decision: approval.Allow, Layer: approval.LayerHook, Hook: guardName, HookDecision: hooks.Allow, Mode: approval.ModeDefault}
	ruleAllowed := approval.AuditRecord{Tool: "Bash", Input: bash("ls -la"), Decision: approval.Allow, Layer: approval.LayerRules,
		Rule: "Bash(ls:*)", Mode: approval.ModeDefault}
	protectedWrite := approval.AuditRecord{Tool: "Write", Input: mustJSON(map[string]string{"file_path": ".git/hooks/pre-commit", "content": "x"}),
		Decision: approval.Deny, Layer: approval.LayerHook, Hook: "system:protected-paths", HookDecision: hooks.Deny, Mode: approval.ModeDefault}

	for _, tc := range []struct {
		name      string
		rec       approval.AuditRecord
		now, next approval.Settings
		want      Kind // "": unchanged
		note      string
	}{
		{name: "a hook's denial stands with the same hook", rec: hookDenied, now: withGuard(approval.Settings{}), next: withGuard(approval.Settings{})},
		{name: "an allow rule decides before the hook", rec: hookDenied, now: withGuard(approval.Settings{}),
			next: withGuard(allowing("Bash(curl:*)")), want: DenialAllowed},
		{name: "the hook removed: a person is asked", rec: hookDenied, now: withGuard(approval.Settings{}), next: approval.Settings{}, want: DenialAsks},
		{name: "a hook's ask, a person's yes: still asks", rec: hookAsked, now: withGuard(approval.Settings{}), next: withGuard(approval.Settings{})},
		{name: "an older record: the hook's answer assumed ask", rec: oldAsked,
			now:  withGuard(approval.Settings{Permissions: approval.Permissions{DefaultMode: approval.ModeDontAsk}}),
			next: withGuard(approval.Settings{}), want: ApprovalDenied, note: "answer assumed ask"},
		{name: "a rewrite is checked again by the rules", rec: rewritten, now: withGuard(approval.Settings{}),
			next: withGuard(denying("Bash(echo:*)")), want: AllowedDenied},
		{name: "the model's own input is what layer 1 sees", rec: rewritten, now: withGuard(approval.Settings{}),
			next: withGuard(denying("Bash(make-safe)")), want: AllowedDenied},
		{name: "a call the hook never saw", rec: ruleAllowed, now: withGuard(allowing("Bash(ls:*)")), next: withGuard(approval.Settings{}), want: NotReplayable},
		{name: "a new hook for a call that asked", rec: hookAsked, now: approval.Settings{}, next: withGuard(approval.Settings{}), want: NotReplayable},
		{name: "a system hook is judged again", rec: protectedWrite, now: withGuard(approval.Settings{}), next: withGuard(approval.Settings{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.rec
			rec.Seq, rec.JobID, rec.CallID, rec.Time = 2, "job-h", "h1", time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
			env := &approval.Env{Workspace: "/srv/app", Home: "/home/dev", Sandbox: approval.SandboxStatus{Backend: "bwrap"}}
			jobs := []Job{{ID: "job-h", Workspace: "/srv/app", Records: []approval.AuditRecord{{Seq: 1, JobID: "job-h", Event: "sandbox", Env: env}, rec}}}
			rep, err := Replay(jobs, Fixed{Now: tc.now, New: tc.next}, Options{})
			require.NoError(t, err)
			require.Equal(t, 1, rep.Calls)
			var got Kind
			var notes []string
			if len(rep.Changes) == 1 {
				got, notes = rep.Changes[0].Kind, rep.Changes[0].Notes
			}
			assert.Equal(t, tc.want, got, "%+v", rep.Changes)
			if tc.note != "" {
				assert.Contains(t, strings.Join(notes, "; "), tc.note)
			}
		})
	}
}
