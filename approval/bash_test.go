package approval

import (
	"encoding/json"
	"path"
	"strings"
	"testing"

	"github.com/custos-dev/custos/approval/programs"
	"github.com/custos-dev/custos/approval/shell"
)

var testEnv = Env{Workspace: "/home/user/project", Home: "/home/user"}

// fixedSettings is the rule set the Bash table is judged against.
var fixedSettings = Settings{Permissions: Permissions{
	Allow: []string{"Bash(npm test:*)", "Bash(git status)", "Bash(ls *)", "Bash(go test *)"},
	Ask:   []string{"Bash(git push *)"},
	Deny:  []string{"Bash(curl *)", "Read(.env*)", "Edit(secrets/**)"},
}}

func bashCall(cmd string) Call {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return Call{Tool: "Bash", Input: in}
}

func mustCompile(t testing.TB, s Settings) *Policy {
	t.Helper()
	p, err := Compile(s, testEnv)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return p
}

// sys marks a Deny that must come from a system preset.
const sys = "system"

func TestBashDecisions(t *testing.T) {
	p := mustCompile(t, fixedSettings)
	tests := []struct {
		cmd  string
		want Decision
		rule string // expected Verdict.Rule (preset name or rule text); "" = don't care
	}{
		// Plain allow rules.
		{"npm test", Allow, "Bash(npm test:*)"},
		{"npm test -- --watch", Allow, ""},
		{"npm   test", Allow, ""},
		{"npm testx", Continue, ""},
		{"npm run test", Continue, ""},
		{"git status", Allow, "Bash(git status)"},
		{"git status --short", Continue, ""},
		{"git  status", Allow, ""},
		{"'git' \"status\"", Allow, ""},
		{"g\\it status", Allow, ""},
		{"/usr/bin/git status", Allow, ""},
		{"ls", Allow, ""},
		{"ls -la", Allow, ""},
		{"ls -la src/../src", Allow, ""},
		{"lsof", Continue, ""},
		{"go test ./...", Allow, ""},
		{"go test", Allow, ""},
		{"go build ./...", Continue, ""},
		// Compound commands: allow needs every part allowed.
		{"ls && git status", Allow, ""},
		{"ls; git status", Allow, ""},
		{"ls\ngit status", Allow, ""},
		{"ls | ls", Allow, ""},
		{"ls || npm test", Allow, ""},
		{"ls & npm test", Allow, ""},
		{"(ls; git status)", Allow, ""},
		{"{ ls; git status; }", Allow, ""},
		{"ls && rm -rf build", Continue, ""},
		{"ls; make", Continue, ""},
		{"ls | grep x", Continue, ""},
		{"if ls; then npm test; fi", Allow, ""},
		{"if ls; then make; fi", Continue, ""},
		{"for f in a b; do ls $f; done", Allow, ""},
		{"while ls; do git status; done", Allow, ""},
		{"case x in x) ls;; esac", Allow, ""},
		{"case x in x) make;; esac", Continue, ""},
		{"f() { make; }; ls", Continue, ""},
		// Deny beats allow; any part denied denies.
		{"curl http://example.com", Deny, "Bash(curl *)"},
		{"ls && curl http://x", Deny, "Bash(curl *)"},
		{"ls | curl -d @- http://x", Deny, ""},
		{"ls; /usr/bin/curl x", Deny, ""},
		{"c''url x", Deny, ""},
		{"\"curl\" x", Deny, ""},
		{"cu\\rl x", Deny, ""},
		{"env curl x", Deny, ""},
		{"env -i FOO=1 curl x", Deny, ""},
		{"timeout 10 curl x", Deny, ""},
		{"timeout -s KILL 10s curl x", Deny, ""},
		{"nice -n 5 curl x", Deny, ""},
		{"nohup curl x", Deny, ""},
		{"time curl x", Deny, ""},
		{"command curl x", Deny, ""},
		{"builtin exec curl x", Deny, ""},
		{"exec curl x", Deny, ""},
		{"stdbuf -o0 curl x", Deny, ""},
		{"xargs curl < urls", Deny, ""},
		{"echo $(curl x)", Deny, ""},
		{"echo `curl x`", Deny, ""},
		{"echo \"$(curl x)\"", Deny, ""},
		{"cat <(curl x)", Deny, ""},
		{"x=$(curl x)", Deny, ""},
		{"bash -c 'curl x'", Deny, ""},
		{"sh -c \"ls && curl x\"", Deny, ""},
		{"zsh -c 'curl x'", Deny, ""},
		{"bash -lc 'curl x'", Deny, ""},
		{"eval curl x", Deny, ""},
		{"eval 'curl x'", Deny, ""},
		{"bash <<EOF\ncurl x\nEOF", Deny, ""},
		{"sh <<'EOF'\nls\ncurl x\nEOF", Deny, ""},
		{"find . -exec curl {} \\;", Deny, ""},
		{"if true; then curl x; fi", Deny, ""},
		{"f() { curl x; }", Deny, ""},
		{"curl", Deny, ""},
		{"ls $(curl x)", Deny, ""},
		{"bash -c \"bash -c 'curl x'\"", Deny, ""},
		// Ask rules force confirmation, even next to allowed parts.
		{"git push origin main", Ask, "Bash(git push *)"},
		{"git push", Ask, "Bash(git push *)"},
		{"ls && git push origin", Ask, ""},
		{"git push --force", Ask, ""},
		{"bash -c 'git push x'", Ask, ""},
		// Deny beats ask.
		{"git push x && curl y", Deny, "Bash(curl *)"},
		// Undecidable: never allowed, Ask.
		{"$CMD", Ask, ""},
		{"$x status", Ask, ""},
		{"${x}", Ask, ""},
		{"$(echo ls)", Ask, ""},
		{"`echo ls` -la", Ask, ""},
		{"eval \"$x\"", Ask, ""},
		{"bash -c \"$x\"", Ask, ""},
		{"sh -c $x", Ask, ""},
		{"ls && $x", Ask, ""},
		{"echo 'unterminated", Ask, ""},
		{"ls (", Ask, ""},
		{"bash", Ask, ""},
		{"cat script | sh", Ask, ""},
		{"xargs ls", Ask, ""},
		{"PATH=/tmp/evil ls", Ask, ""},
		{"LD_PRELOAD=/tmp/x.so ls", Ask, ""},
		{"env PATH=/tmp ls", Ask, ""},
		{"env -S 'ls -l'", Ask, ""},
		{"sudo $x", Deny, sys},
		{"$'\\x63url' x", Ask, ""},
		{"{ls,-la}", Allow, ""}, // brace expansion is static: this is ls -la
		{"{rm,-rf,/}", Deny, "rm-critical"},
		{"{ls,$x}", Ask, ""},
		{"bash <<EOF\n$(echo ls)\nEOF", Ask, ""},
		// Undecidable but a deny rule still applies to the parseable parts.
		{"$x; curl y", Deny, ""},
		{"eval \"$x\" && curl y", Deny, ""},
		// Assignments without a command need no rule but are not allowed either.
		{"FOO=1", Continue, ""},
		// System presets (cannot be overridden by anything).
		{"rm -rf /", Deny, "rm-critical"},
		{"/bin/rm -r -f /", Deny, "rm-critical"},
		{"sudo rm -rf /", Deny, sys},
		{"bash -c 'rm -rf /'", Deny, "rm-critical"},
		{"echo $(rm -rf ~)", Deny, "rm-critical"},
		{"env X=1 rm --recursive --force /home/../", Deny, "rm-critical"},
		{"r''m -rf /", Deny, "rm-critical"},
		{"rm -rf /home/user/project", Deny, "rm-critical"},
		{"rm -rf ../project", Deny, "rm-critical"},
		{"ls && rm -fr ~/", Deny, "rm-critical"},
		{"sudo ls", Deny, "privilege-escalation"},
		{"ls | sudo tee x", Deny, "privilege-escalation"},
		{"dd if=/dev/zero of=/dev/sda", Deny, "dd-device"},
		{"echo x > /dev/sda", Deny, "block-device-write"},
		{"ls > /dev/nvme0n1", Deny, "block-device-write"},
		{"mkfs.ext4 /dev/sdb1", Deny, "mkfs"},
		{"chmod -R 777 /", Deny, "chmod-chown-critical"},
		{":(){ :|:& };:", Deny, "fork-bomb"},
		{"b(){ b|b& };b", Deny, "fork-bomb"},
		{"shutdown -h now", Deny, "shutdown"},
		{"ls; reboot", Deny, "shutdown"},
		{"systemctl reboot", Deny, "shutdown"},
		{"rm -rf build", Continue, ""},
		// A redirection is a Write of its target: Bash(ls *) allows ls, not
		// the edit of out.txt (acceptEdits or an Edit rule does, redirect_test.go).
		{"ls > out.txt", Continue, ""},
		{"ls 2>/dev/null", Allow, ""},
	}
	if len(tests) < 100 {
		t.Fatalf("table has %d commands, want at least 100", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			v := p.Rules(bashCall(tt.cmd))
			if v.Decision != tt.want {
				t.Fatalf("Rules(%q) = %+v, want %s", tt.cmd, v, tt.want)
			}
			switch {
			case tt.rule == sys:
				if !v.System {
					t.Errorf("want a system deny, got %+v", v)
				}
			case tt.rule != "" && v.Rule != tt.rule:
				t.Errorf("Rule = %q, want %q", v.Rule, tt.rule)
			}
			if v.Decision == Deny && v.System != presetNamed(v.Rule) {
				t.Errorf("System = %v for rule %q", v.System, v.Rule)
			}
			if v.Decision != Continue && v.Layer != LayerRules {
				t.Errorf("Layer = %q, want rules", v.Layer)
			}
		})
	}
}

func presetNamed(name string) bool {
	for _, p := range Presets() {
		if p.Name == name {
			return true
		}
	}
	return false
}

// TestSystemDenyBeatsUserAllow checks that no user rule, mode or learned rule
// overrides a preset.
func TestSystemDenyBeatsUserAllow(t *testing.T) {
	p := mustCompile(t, Settings{Permissions: Permissions{Allow: []string{"Bash", "Bash(rm -rf /)", "Bash(sudo:*)"}}})
	p, err := p.WithRule(ListAllow, "Bash(rm:*)")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []Mode{ModeDefault, ModeBypass, ModeAcceptEdits, ModeDontAsk, ModePlan} {
		for _, cmd := range []string{"rm -rf /", "sudo ls", "rm -rf ~"} {
			v := p.Evaluate(bashCall(cmd), m)
			if v.Decision != Deny || !v.System {
				t.Errorf("Evaluate(%q, %s) = %+v, want a system deny", cmd, m, v)
			}
		}
	}
	// And the blanket allow does allow ordinary commands.
	if v := p.Evaluate(bashCall("make && ls"), ModeDefault); v.Decision != Allow {
		t.Errorf("blanket Bash allow: got %+v", v)
	}
	// But never an undecidable one.
	if v := p.Evaluate(bashCall("$x"), ModeBypass); v.Decision != Ask {
		t.Errorf("undecidable under Bash allow + bypass: got %+v, want ask", v)
	}
}

func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{
		"ls", "rm -rf /", "bash -c 'ls && curl x'", "echo $(rm -rf ~)", ":(){ :|:& };:",
		"bash <<EOF\nls\nEOF", "find . -exec rm {} \\;", "{a,b}{c,d}", "eval \"$x\"", "x=$(y) z",
		"timeout 1 env A=1 nice -n 1 sudo -u r ls", "case $x in a) ;; esac", "$'\\x41'", "((1+$(ls)))",
		"cat .env > out", "cd sub && cat ../.env", "f=.env; cat \"$f\"", "echo x | tee -a .env", "exec 3<>/dev/tcp/h/1",
		"for f in a .env; do sort -o $f x; done", "cat .e*", "cp -t d .env", "sed -i.bak s/a/b/ .env",
	} {
		f.Add(s)
	}
	p, err := Compile(Settings{Permissions: Permissions{Allow: []string{"Bash"}}}, testEnv)
	if err != nil {
		f.Fatal(err)
	}
	// With a blanket Bash allow and Read(.env) denied, nothing that writes
	// a file or may read .env is allowed.
	pr, err := Compile(Settings{Permissions: Permissions{Allow: []string{"Bash"}, Deny: []string{"Read(.env)"}}}, testEnv)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		call := bashCall(cmd)
		// JSON replaces invalid UTF-8, so analyse what the tool would run.
		var in struct{ Command string }
		if err := json.Unmarshal(call.Input, &in); err != nil {
			t.Fatal(err)
		}
		cmd = in.Command
		a := shell.Analyze(cmd, testEnv.shell())
		v := p.Rules(call)
		if v.Decision == Allow && len(a.Undecidable) > 0 {
			t.Fatalf("allowed %q although undecidable: %v", cmd, a.Undecidable)
		}
		if strings.TrimSpace(cmd) != "" && v.Decision == Allow && len(a.Commands) == 0 {
			t.Fatalf("allowed %q with no commands", cmd)
		}
		if v.Decision != Allow {
			return
		}
		for _, fa := range a.Files {
			if fa.Kind.Writes() || fa.Kind == programs.AccessConnect {
				t.Fatalf("allowed %q although it writes %q (%s) without an Edit rule", cmd, fa.Word, fa.Via)
			}
		}
		if pr.Rules(call).Decision != Allow {
			return
		}
		for _, fa := range a.Files {
			if !fa.Kind.Reads() && fa.Kind != programs.AccessMention {
				continue
			}
			if fa.Paths == nil && fa.Kind.Reads() {
				t.Fatalf("allowed %q under Read(.env) although %q cannot be resolved", cmd, fa.Word)
			}
			for _, pa := range fa.Paths {
				if _, in := WorkspaceRel(pa, testEnv); path.Base(pa) == ".env" && in { // a relative rule covers the workspace
					t.Fatalf("allowed %q under Read(.env) although it names %s", cmd, pa)
				}
			}
		}
	})
}
