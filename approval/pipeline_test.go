package approval

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/custos-dev/custos/hooks"
)

// Decide weighs what layers 1-3 and the hooks found. A hook's decision comes
// in as data; its rewrite is judged by layers 1-3 again, so no hook gets a
// command past a deny rule, and an ask rule or dontAsk still has the last word.
func TestDecideWeighsLayers(t *testing.T) {
	p, err := Compile(Settings{Permissions: Permissions{
		Allow: []string{"Bash(echo:*)"},
		Ask:   []string{"Bash(git push:*)"},
		Deny:  []string{"Bash(curl:*)"},
	}}, Env{Workspace: testEnv.Workspace, Home: testEnv.Home, Sandbox: SandboxStatus{Backend: "bwrap"}})
	if err != nil {
		t.Fatal(err)
	}
	rewrite := func(decision hooks.Decision, cmd string) *hooks.Result {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return &hooks.Result{Hook: "h", Decision: decision, ModifiedInput: in}
	}
	tests := []struct {
		name      string
		call      Call
		mode      Mode
		hook      *hooks.Result
		want      Decision
		layer     Layer
		human     bool
		modified  bool
		reasonHas string
	}{
		{name: "rules allow, hooks not consulted", call: bashCall("echo hi"), want: Allow, layer: LayerRules},
		{name: "rules deny, hooks not consulted", call: bashCall("curl x"), want: Deny, layer: LayerRules},
		{name: "no hook decided: a person", call: bashCall("make"), want: Ask, layer: LayerHuman, human: true},
		{name: "no hook decided, dontAsk: denied", call: bashCall("make"), mode: ModeDontAsk, want: Deny, layer: LayerMode, reasonHas: "dontAsk"},
		{name: "hook allows", call: bashCall("make"), hook: &hooks.Result{Hook: "h", Decision: "allow"}, want: Allow, layer: LayerHook},
		{name: "hook denies with its reason", call: bashCall("make"), hook: &hooks.Result{Hook: "h", Decision: "deny", Reason: "no make today"}, want: Deny, layer: LayerHook, reasonHas: "no make today"},
		{name: "hook deny without reason", call: bashCall("make"), hook: &hooks.Result{Hook: "h", Decision: "deny"}, want: Deny, layer: LayerHook, reasonHas: "denied by hook"},
		{name: "hook asks with its reason", call: bashCall("make"), hook: &hooks.Result{Hook: "h", Decision: "ask", Reason: "check this"}, want: Ask, layer: LayerHuman, human: true, reasonHas: "check this"},
		{name: "hook allow cannot pass an ask rule", call: bashCall("git push origin"), hook: &hooks.Result{Hook: "h", Decision: "allow"}, want: Ask, layer: LayerHuman, human: true, reasonHas: "git push"},
		{name: "rewrite into a denied command is denied", call: bashCall("make"), hook: rewrite("allow", "curl evil"), want: Deny, layer: LayerRules, modified: true},
		{name: "rewrite into a system-denied command is denied", call: bashCall("make"), hook: rewrite("allow", "rm -rf /"), want: Deny, layer: LayerRules, modified: true},
		{name: "rewrite into an ask-rule command asks", call: bashCall("make"), hook: rewrite("allow", "git push x"), want: Ask, layer: LayerHuman, human: true, modified: true},
		{name: "rewrite into an allowed command runs it", call: bashCall("make"), hook: rewrite("", "echo safe"), want: Allow, layer: LayerRules, modified: true},
		{name: "rewrite to allowed but hook denies", call: bashCall("make"), hook: rewrite("deny", "echo safe"), want: Deny, layer: LayerHook, modified: true},
		{name: "rewrite into a non-object is denied", call: bashCall("make"), hook: &hooks.Result{Hook: "h", ModifiedInput: json.RawMessage(`"rm -rf /"`)}, want: Deny, layer: LayerHook, reasonHas: "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pre := decideWith(p, tc.call, tc.mode, tc.hook)
			if pre.Verdict.Decision != tc.want || pre.Verdict.Layer != tc.layer || pre.NeedsHuman != tc.human {
				t.Fatalf("Decide = %+v (human %v), want %s at %s (human %v)", pre.Verdict, pre.NeedsHuman, tc.want, tc.layer, tc.human)
			}
			if pre.Modified != tc.modified {
				t.Errorf("modified = %v, want %v", pre.Modified, tc.modified)
			}
			if tc.modified && string(pre.Input) != string(tc.hook.ModifiedInput) {
				t.Errorf("input = %s, want the rewrite %s", pre.Input, tc.hook.ModifiedInput)
			}
			if !tc.modified && string(pre.Input) != string(tc.call.Input) {
				t.Errorf("input = %s, want the model's %s", pre.Input, tc.call.Input)
			}
			if text := pre.Verdict.Reason + " | " + pre.AskReason; !strings.Contains(text, tc.reasonHas) {
				t.Errorf("reason %q does not contain %q", text, tc.reasonHas)
			}
		})
	}
}

// decideWith is layers 1-4 as the workflow runs them, with hook as what
// layer 4 decides when the rules leave the call open ("" mode: default).
func decideWith(p *Policy, c Call, m Mode, hook *hooks.Result) Prelim {
	if m == "" {
		m = ModeDefault
	}
	found := Findings{Rules: p.Evaluate(c, m)}
	if found.Rules.Open() {
		found.Hook = hook
	}
	return Decide(c, m, p.Evaluate, found)
}

// A job's mode: the one asked for, else the settings' default, else default,
// with Claude Code's alias resolved (an unresolved alias would match no mode).
func TestResolveMode(t *testing.T) {
	tests := []struct {
		requested, settings Mode
		want                Mode
		err                 bool
	}{
		{"", "", ModeDefault, false},
		{"", ModePlan, ModePlan, false},
		{ModeAcceptEdits, ModePlan, ModeAcceptEdits, false},
		{"bypassPermissions", "", ModeBypass, false},
		{"", "dontask", ModeDontAsk, false},
		{"yolo", ModePlan, "", true},
	}
	for _, tc := range tests {
		got, err := ResolveMode(tc.requested, tc.settings)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ResolveMode(%q, %q) = %q, %v; want %q (error %v)", tc.requested, tc.settings, got, err, tc.want, tc.err)
		}
	}
}
