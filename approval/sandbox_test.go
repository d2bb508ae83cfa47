package approval

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/custos-dev/custos/hooks"
)

func TestSandboxDenies(t *testing.T) {
	env := Env{Workspace: "/home/user/project", Home: "/home/user"}
	p, err := Compile(Settings{Permissions: Permissions{
		Deny: []string{
			"Read(.env)", "Read(secrets/)", "Read(./config/db.yml)", "Read(~/.ssh/**)", `Read(re:\.pem$)`,
			"Edit(go.mod)", "Write(dist/**)", "Edit(.env)", "Read(.env)",
			"Bash(rm:*)", "Glob(x)", "WebFetch",
		},
		Allow: []string{"Read(public/**)", "Edit"},
		Ask:   []string{"Read(notes.md)"},
	}}, env)
	if err != nil {
		t.Fatal(err)
	}
	p, err = p.WithRule(ListDeny, "Edit(learned.txt)")
	if err != nil {
		t.Fatal(err)
	}
	read, edit := p.SandboxDenies()
	wantRead := []string{".env", "secrets/**", "config/db.yml", "/home/user/.ssh/**", `re:\.pem$`}
	wantEdit := []string{"go.mod", "dist/**", ".env", "learned.txt"}
	if !reflect.DeepEqual(read, wantRead) {
		t.Errorf("read = %q, want %q", read, wantRead)
	}
	if !reflect.DeepEqual(edit, wantEdit) {
		t.Errorf("edit = %q, want %q", edit, wantEdit)
	}

	p, err = Compile(Settings{Permissions: Permissions{Deny: []string{"Read", "Edit(*)"}}}, env)
	if err != nil {
		t.Fatal(err)
	}
	read, edit = p.SandboxDenies()
	if !reflect.DeepEqual(read, []string{"**"}) || !reflect.DeepEqual(edit, []string{"**"}) {
		t.Errorf("rules without specifier: read %q edit %q, want **", read, edit)
	}
}

// SandboxDeniesOf parses the rules as Compile does: the same lists, and the
// same error for a rule that does not parse.
func TestSandboxDeniesOf(t *testing.T) {
	env := Env{Workspace: "/home/user/project", Home: "/home/user"}
	tests := []struct {
		name    string
		deny    []string
		wantErr string
	}{
		{name: "paths and patterns", deny: []string{"Read(.env)", "Read(secrets/)", "Edit(go.mod)", "Write(dist/**)", "Bash(rm:*)"}},
		{name: "no specifier", deny: []string{"Read", "Edit(*)"}},
		{name: "none"},
		{name: "malformed rule", deny: []string{"Read(.env)", "Edit(unclosed"}, wantErr: "Edit(unclosed"},
		{name: "bad regexp", deny: []string{`Read(re:(()`}, wantErr: "re:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Settings{Permissions: Permissions{Deny: tc.deny}}
			read, edit, err := SandboxDeniesOf(s, env)
			p, cerr := Compile(s, env)
			if tc.wantErr != "" {
				if err == nil || cerr == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v (Compile: %v), want one naming %q", err, cerr, tc.wantErr)
				}
				if err.Error() != cerr.Error() {
					t.Errorf("err = %q, Compile's = %q", err, cerr)
				}
				return
			}
			if err != nil || cerr != nil {
				t.Fatalf("err = %v, Compile: %v", err, cerr)
			}
			wantRead, wantEdit := p.SandboxDenies()
			if !reflect.DeepEqual(read, wantRead) || !reflect.DeepEqual(edit, wantEdit) {
				t.Errorf("read %q edit %q, Compile's policy: read %q edit %q", read, edit, wantRead, wantEdit)
			}
		})
	}
}

// Without an OS sandbox, Bash is refused unless the user allowed unconfined
// runs; then every Bash call asks a person, whatever rule, mode or hook
// would have allowed it, and denials still deny.
func TestUnconfinedBash(t *testing.T) {
	settings := Settings{Permissions: Permissions{
		Allow: []string{"Bash(echo:*)", "Bash(git status)", "Read"},
		Ask:   []string{"Bash(git push:*)"},
		Deny:  []string{"Bash(curl:*)"},
	}}
	refused := SandboxStatus{Backend: "fallback", Why: "bwrap not found in PATH", Help: "the OS sandbox is not available on this worker (bwrap not found in PATH), so commands are refused. To fix it: install bubblewrap", Unconfined: true}
	allowed := refused
	allowed.AllowUnconfined = true
	confined := SandboxStatus{Backend: "bwrap"}
	allowHook := &hooks.Result{Decision: "allow", Hook: "h"}
	rewriteHook := &hooks.Result{Hook: "h", ModifiedInput: json.RawMessage(`{"command":"echo rewritten"}`)}
	tests := []struct {
		name   string
		sb     SandboxStatus
		call   Call
		mode   Mode
		hook   *hooks.Result // what layer 4 decided, if the rules leave the call open
		want   Decision      // of Decide
		human  bool
		rule   string
		reason string // substring of the verdict or ask reason
	}{
		{name: "isolated: allow rule allows", sb: confined, call: bashCall("echo hi"), want: Allow},
		{name: "old history without status: allow rule allows", call: bashCall("echo hi"), want: Allow},
		{name: "refused: allowed command", sb: refused, call: bashCall("echo hi"), want: Deny, rule: RuleSandboxRequired, reason: "install bubblewrap"},
		{name: "refused: bypass mode", sb: refused, call: bashCall("ls"), mode: ModeBypass, want: Deny, rule: RuleSandboxRequired},
		{name: "refused: hook allow", sb: refused, call: bashCall("ls"), hook: allowHook, want: Deny, rule: RuleSandboxRequired},
		{name: "refused: read tool unaffected", sb: refused, call: Call{Tool: "Read", Input: json.RawMessage(`{"file_path":"a.go"}`)}, want: Allow},
		{name: "allowed: allow rule asks", sb: allowed, call: bashCall("echo hi"), want: Ask, human: true, rule: RuleUnconfined, reason: "WITHOUT OS isolation"},
		{name: "allowed: exact allow rule asks", sb: allowed, call: bashCall("git status"), want: Ask, human: true, reason: "always need a person"},
		{name: "allowed: bypass mode asks", sb: allowed, call: bashCall("ls"), mode: ModeBypass, want: Ask, human: true, reason: "bwrap not found"},
		{name: "allowed: acceptEdits asks", sb: allowed, call: bashCall("echo x > a.txt"), mode: ModeAcceptEdits, want: Ask, human: true},
		{name: "allowed: hook allow still asks", sb: allowed, call: bashCall("ls"), hook: allowHook, want: Ask, human: true},
		{name: "allowed: hook rewrite to an allowed command still asks", sb: allowed, call: bashCall("ls"), hook: rewriteHook, want: Ask, human: true},
		{name: "allowed: ask rule keeps its reason", sb: allowed, call: bashCall("git push origin"), want: Ask, human: true, reason: "ask rule Bash(git push:*)"},
		{name: "allowed: user deny still denies", sb: allowed, call: bashCall("curl x"), want: Deny, rule: "Bash(curl:*)"},
		{name: "allowed: system deny still denies", sb: allowed, call: bashCall("rm -rf /"), want: Deny, rule: "rm-critical"},
		{name: "allowed: plan mode denies", sb: allowed, call: bashCall("echo hi"), mode: ModePlan, want: Deny},
		{name: "allowed: dontAsk denies instead of asking", sb: allowed, call: bashCall("echo hi"), mode: ModeDontAsk, want: Deny, reason: "dontAsk"},
		{name: "allowed: read tool unaffected", sb: allowed, call: Call{Tool: "Read", Input: json.RawMessage(`{"file_path":"a.go"}`)}, want: Allow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := testEnv
			env.Sandbox = tc.sb
			p, err := Compile(settings, env)
			if err != nil {
				t.Fatal(err)
			}
			pre := decideWith(p, tc.call, tc.mode, tc.hook)
			if pre.Verdict.Decision != tc.want || pre.NeedsHuman != tc.human {
				t.Fatalf("Decide = %+v (human %v), want %s (human %v)", pre.Verdict, pre.NeedsHuman, tc.want, tc.human)
			}
			if tc.rule != "" && pre.Verdict.Rule != tc.rule && !(tc.human && tc.rule == RuleUnconfined) {
				t.Errorf("rule = %q, want %q", pre.Verdict.Rule, tc.rule)
			}
			if text := pre.Verdict.Reason + " | " + pre.AskReason; !strings.Contains(text, tc.reason) {
				t.Errorf("reason %q does not contain %q", text, tc.reason)
			}
			if tc.human && !strings.Contains(pre.AskReason, "WITHOUT OS isolation") {
				t.Errorf("the person is not told the command runs unconfined: %q", pre.AskReason)
			}
		})
	}
}

func TestUserOnly(t *testing.T) {
	in := Settings{Permissions: Permissions{Allow: []string{"Bash(ls)"}}, Sandbox: SandboxSettings{AllowUnsandboxed: true, Env: []string{"A"}}}
	got, dropped := UserOnly(in)
	want := Settings{Permissions: Permissions{Allow: []string{"Bash(ls)"}}, Sandbox: SandboxSettings{Env: []string{"A"}}}
	if !reflect.DeepEqual(got, want) || len(dropped) != 1 || !strings.Contains(dropped[0], "sandbox.allowUnsandboxed") {
		t.Errorf("UserOnly = %+v, %q; want %+v and allowUnsandboxed named", got, dropped, want)
	}
	if got, dropped := UserOnly(want); !reflect.DeepEqual(got, want) || dropped != nil {
		t.Errorf("UserOnly without allowUnsandboxed = %+v, %q; want it unchanged", got, dropped)
	}
}
