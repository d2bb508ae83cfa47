package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func fileCall(tool, p string) Call {
	key := "file_path"
	if tool == "Glob" || tool == "Grep" {
		key = "path"
	}
	in, _ := json.Marshal(map[string]string{key: p})
	return Call{Tool: tool, Input: in}
}

func TestParseRule(t *testing.T) {
	tests := []struct {
		rule    string
		kind    ruleKind
		value   string // normalised value for exact/prefix/text/glob
		wantErr string
	}{
		{rule: "Bash", kind: kindAny},
		{rule: "Bash(*)", kind: kindAny},
		{rule: "Bash(npm test)", kind: kindExact, value: "npm test"},
		{rule: "Bash( npm   test )", kind: kindExact, value: "npm test"},
		{rule: "Bash(npm run test:*)", kind: kindPrefix, value: "npm run test"},
		{rule: "Bash(git push *)", kind: kindGlob, value: "git push *"},
		{rule: "Bash(rm -fr build/)", kind: kindExact, value: "rm -f -r build"},
		{rule: "Bash(rm --recursive --force build)", kind: kindExact, value: "rm -f -r build"},
		{rule: "Bash(/bin/rm -r -f x)", kind: kindExact, value: "rm -f -r x"},
		{rule: "Bash(ls '*.go')", kind: kindExact, value: "ls *.go"},
		{rule: "Bash(git commit -m \"fix bug\")", kind: kindExact, value: "git commit -m 'fix bug'"},
		{rule: "Bash(ls * && echo hi)", kind: kindText, value: "ls * && echo hi"},
		{rule: `Bash(re:^git (status|log)\b)`, kind: kindRegexp},
		{rule: "Read(.env*)", kind: kindPath, value: ".env*"},
		{rule: "Edit(src/**)", kind: kindPath, value: "src/**"},
		{rule: "Edit(./src/)", kind: kindPath, value: "src/**"},
		{rule: "Read(~/.ssh/**)", kind: kindPath, value: "/home/user/.ssh/**"},
		{rule: "Read(/etc/**)", kind: kindPath, value: "/etc/**"},
		{rule: "mcp__github__create_issue", kind: kindAny},
		{rule: "WebFetch(domain:example.com)", kind: kindLiteral, value: "domain:example.com"},
		{rule: "", wantErr: "empty rule"},
		{rule: "   ", wantErr: "empty rule"},
		{rule: "Bash(", wantErr: "unbalanced"},
		{rule: "Bash(ls))", wantErr: "unbalanced"},
		{rule: "Bash)ls(", wantErr: "unbalanced"},
		{rule: "Bash(ls (x)", wantErr: "unbalanced"},
		{rule: "Bash()", wantErr: "empty specifier"},
		{rule: "(ls)", wantErr: "missing tool name"},
		{rule: "Ba sh(ls)", wantErr: "invalid character"},
		{rule: "Bash(re:(unclosed)", wantErr: "bad regular expression"},
		{rule: "Bash(re:)", wantErr: "empty regular expression"},
		{rule: "Edit(src/[a)", wantErr: "bad glob"},
		{rule: "Bash(ls [a)", wantErr: "bad glob"},
		{rule: "Read(../outside/**)", wantErr: "must not leave the workspace"},
		{rule: "Bash(:*)", wantErr: "prefix rule"},
		{rule: "Bash(export:*)", wantErr: "export is part of the shell's syntax"},
		{rule: "Bash(declare -x:*)", wantErr: "declare is part of the shell's syntax"},
		{rule: "Bash(let:*)", wantErr: "let is part of the shell's syntax"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			r, err := parseRule(tt.rule, testEnv)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrMalformedRule) {
					t.Fatalf("parseRule(%q) error = %v, want one containing %q wrapping ErrMalformedRule", tt.rule, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseRule(%q): %v", tt.rule, err)
			}
			if r.kind != tt.kind {
				t.Errorf("kind = %d, want %d", r.kind, tt.kind)
			}
			if tt.value != "" && r.value != tt.value {
				t.Errorf("value = %q, want %q", r.value, tt.value)
			}
		})
	}
}

func TestCompileErrorNamesRule(t *testing.T) {
	_, err := Compile(Settings{Permissions: Permissions{Allow: []string{"Bash(ls)"}, Deny: []string{"Read(x)", "Bash(oops"}}}, testEnv)
	if err == nil || !strings.Contains(err.Error(), "permissions.deny[1]") || !strings.Contains(err.Error(), `"Bash(oops"`) {
		t.Fatalf("Compile error = %v, want it to name permissions.deny[1] and the rule", err)
	}
	if _, err := Compile(Settings{Permissions: Permissions{DefaultMode: "yolo"}}, testEnv); err == nil {
		t.Fatal("Compile accepted an unknown defaultMode")
	}
}

func TestPathRules(t *testing.T) {
	p := mustCompile(t, Settings{Permissions: Permissions{
		Deny:  []string{"Read(.env*)", "Edit(secrets/**)", "Read(/etc/shadow)", "Read(~/.ssh/**)", "Read(**/id_*)", "Edit(conf/**/*.key)"},
		Ask:   []string{"Write(docs/*.md)"},
		Allow: []string{"Edit(src/**)", "Write(*.txt)", "Edit(/tmp/**)"},
	}})
	tests := []struct {
		tool, path string
		want       Decision
	}{
		{"Read", ".env", Deny},
		{"Read", ".env.local", Deny},
		{"Read", "config/.env", Deny}, // no slash in the pattern: any depth
		{"Read", "/home/user/project/.env", Deny},
		{"Read", "./src/../.env", Deny},
		{"Grep", ".env", Deny}, // Read rules cover Grep and Glob
		{"Glob", ".env.prod", Deny},
		{"LSP", ".env", Deny}, // and LSP: a language server reads the file
		{"LSP", "config/.env.local", Deny},
		{"LSP", "main.go", Continue},
		{"Read", "env.txt", Continue},
		{"Read", "/etc/shadow", Deny},
		{"Read", "../../../etc/shadow", Deny},
		{"Read", "~/.ssh/id_rsa", Deny},
		{"Read", "/home/user/.ssh/id_rsa", Deny},
		{"Edit", "secrets/key.pem", Deny},
		{"Write", "secrets/a/b/c", Deny}, // Edit rules cover Write
		{"Edit", "src/../secrets/x", Deny},
		{"Edit", "./secrets//x", Deny},
		{"Write", "docs/a.md", Ask},
		{"Write", "docs/sub/a.md", Continue},
		{"Edit", "src/main.go", Allow},
		{"Write", "src/a/b.go", Allow},
		{"Edit", "/home/user/project/src/x.go", Allow},
		{"Edit", "src/../../other/src/x.go", Continue}, // escapes: no allow
		{"Edit", "/home/user/other/src/x.go", Continue},
		{"Write", "notes.txt", Allow},
		{"Write", "deep/notes.txt", Allow},
		{"Write", "../notes.txt", Continue},
		{"Edit", "/tmp/x", Continue}, // outside the workspace: never allowed by a rule
		{"Edit", "main.go", Continue},
		// A "**/" may be no directory at all, as for the sandbox's masks
		// (pathglob): one meaning of a pattern everywhere.
		{"Read", "id_rsa", Deny},
		{"Read", "keys/old/id_ed25519", Deny},
		{"Write", "conf/a.key", Deny},
		{"Write", "conf/x/y/a.key", Deny},
		{"Write", "conf.key", Continue},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.path, func(t *testing.T) {
			v := p.Rules(fileCall(tt.tool, tt.path))
			if v.Decision != tt.want {
				t.Fatalf("Rules(%s %q) = %+v, want %s", tt.tool, tt.path, v, tt.want)
			}
		})
	}
}

func TestMalformedInputDenied(t *testing.T) {
	p := mustCompile(t, Settings{Permissions: Permissions{Allow: []string{"Bash", "Edit", "Read", "Custom"}}})
	tests := []struct {
		tool, input string
	}{
		{"Bash", `"ls"`},
		{"Bash", `[1,2]`},
		{"Bash", `{"command": 5}`},
		{"Bash", `{"command": ""}`},
		{"Bash", `{}`},
		{"Bash", `{"command": "ls"`},
		{"Edit", `{"file_path": ["a"]}`},
		{"Edit", `{"content": "x"}`},
		{"Read", `{"file_path": "a", "path": "b"}`},
		{"Grep", `{"path": 3}`},
		{"Glob", `{"pattern": {}}`},
		{"Custom", `null`},
		{"Custom", `42`},
		{"", `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.input, func(t *testing.T) {
			v := p.Rules(Call{Tool: tt.tool, Input: json.RawMessage(tt.input)})
			if v.Decision != Deny || !strings.Contains(v.Reason, "malformed") {
				t.Fatalf("Rules(%s %s) = %+v, want a malformed-input deny", tt.tool, tt.input, v)
			}
		})
	}
	if v := p.Rules(Call{Tool: "Custom", Input: json.RawMessage(``)}); v.Decision != Allow {
		t.Errorf("empty input of a known-allowed tool = %+v, want allow", v)
	}
}

func TestModes(t *testing.T) {
	p := mustCompile(t, fixedSettings)
	tests := []struct {
		name  string
		call  Call
		mode  Mode
		want  Decision
		layer Layer
	}{
		{"read default", fileCall("Read", "a.go"), ModeDefault, Allow, LayerReadOnly},
		{"read plan", fileCall("Read", "a.go"), ModePlan, Allow, LayerReadOnly},
		{"grep plan", fileCall("Grep", "."), ModePlan, Allow, LayerReadOnly},
		{"lsp default", fileCall("LSP", "a.go"), ModeDefault, Allow, LayerReadOnly},
		{"lsp plan", fileCall("LSP", "a.go"), ModePlan, Allow, LayerReadOnly},
		{"denied lsp bypass", fileCall("LSP", ".env"), ModeBypass, Deny, LayerRules},
		{"denied read plan", fileCall("Read", ".env"), ModePlan, Deny, LayerRules},
		{"denied read bypass", fileCall("Read", ".env"), ModeBypass, Deny, LayerRules},
		{"edit default", fileCall("Edit", "a.go"), ModeDefault, Continue, ""},
		{"edit dontAsk", fileCall("Edit", "a.go"), ModeDontAsk, Continue, ""},
		{"edit plan", fileCall("Edit", "a.go"), ModePlan, Deny, LayerMode},
		{"edit bypass", fileCall("Edit", "a.go"), ModeBypass, Allow, LayerMode},
		{"edit acceptEdits", fileCall("Edit", "a.go"), ModeAcceptEdits, Allow, LayerMode},
		{"write acceptEdits", fileCall("Write", "sub/a.go"), ModeAcceptEdits, Allow, LayerMode},
		{"write outside acceptEdits", fileCall("Write", "../x.go"), ModeAcceptEdits, Continue, ""},
		{"write abs outside acceptEdits", fileCall("Write", "/etc/passwd"), ModeAcceptEdits, Continue, ""},
		{"denied edit acceptEdits", fileCall("Edit", "secrets/k"), ModeAcceptEdits, Deny, LayerRules},
		{"bash acceptEdits", bashCall("make"), ModeAcceptEdits, Continue, ""},
		{"bash bypass", bashCall("make"), ModeBypass, Allow, LayerMode},
		{"bash plan", bashCall("make"), ModePlan, Deny, LayerMode},
		{"allowed bash plan", bashCall("ls"), ModePlan, Deny, LayerMode},
		{"ask rule plan", bashCall("git push x"), ModePlan, Deny, LayerMode},
		{"ask rule bypass", bashCall("git push x"), ModeBypass, Ask, LayerRules},
		{"ask rule dontAsk", bashCall("git push x"), ModeDontAsk, Ask, LayerRules},
		{"undecidable bypass", bashCall("$x"), ModeBypass, Ask, LayerRules},
		{"undecidable plan", bashCall("$x"), ModePlan, Deny, LayerMode},
		{"allowed bash default", bashCall("ls"), ModeDefault, Allow, LayerRules},
		{"other tool bypass", Call{Tool: "WebFetch", Input: json.RawMessage(`{"url":"x"}`)}, ModeBypass, Allow, LayerMode},
		{"other tool plan", Call{Tool: "WebFetch", Input: json.RawMessage(`{"url":"x"}`)}, ModePlan, Deny, LayerMode},
		{"unknown mode", fileCall("Edit", "a.go"), Mode("yolo"), Deny, LayerMode},
		{"empty mode is default", fileCall("Edit", "a.go"), Mode(""), Continue, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := p.Evaluate(tt.call, tt.mode)
			if v.Decision != tt.want || v.Layer != tt.layer {
				t.Fatalf("Evaluate = %+v, want %s at layer %q", v, tt.want, tt.layer)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		in      string
		want    Mode
		wantErr bool
	}{
		{"", ModeDefault, false}, {"default", ModeDefault, false}, {"acceptEdits", ModeAcceptEdits, false},
		{"dontAsk", ModeDontAsk, false}, {"plan", ModePlan, false}, {"bypass", ModeBypass, false},
		{"bypassPermissions", ModeBypass, false}, {"PLAN", ModePlan, false}, {"yolo", "", true}, {"auto", "", true},
	}
	for _, tt := range tests {
		got, err := ParseMode(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q, err=%v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestReadOnly(t *testing.T) {
	for tool, want := range map[string]Decision{"Read": Allow, "Glob": Allow, "Grep": Allow, "LSP": Allow, "Write": Continue, "Edit": Continue, "Bash": Continue, "X": Continue} {
		if v := ReadOnly(Call{Tool: tool}); v.Decision != want {
			t.Errorf("ReadOnly(%s) = %s, want %s", tool, v.Decision, want)
		}
	}
}

func TestSuggestAndLearn(t *testing.T) {
	p := mustCompile(t, Settings{})
	tests := []struct {
		call Call
		want string
		// also must match after learning it (and not match other)
		other Call
	}{
		{bashCall("npm   run build"), "Bash(npm run build)", bashCall("npm run build --prod")},
		{bashCall("timeout 10 go vet ./..."), "Bash(timeout 10 go vet ./...)", bashCall("go vet ./x")},
		{bashCall("git commit -m 'fix bug'"), "Bash(git commit -m 'fix bug')", bashCall("git commit -m fix")},
		{bashCall("ls *.go"), "Bash(ls '*.go')", bashCall("ls a b.go")},
		{bashCall("make && make test"), "Bash(make && make test)", bashCall("make && make install")},
		{fileCall("Edit", "src/./a.go"), "Edit(src/a.go)", fileCall("Edit", "src/b.go")},
		{fileCall("Write", "/home/user/project/x[1].txt"), `Write(x\[1\].txt)`, fileCall("Write", "x1.txt")},
		{fileCall("Read", "README.md"), "Read(README.md)", fileCall("Read", "x.md")},
		{Call{Tool: "WebFetch", Input: json.RawMessage(`{"url":"x"}`)}, "WebFetch", Call{}},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := SuggestRule(tt.call, testEnv)
			if got != tt.want {
				t.Fatalf("SuggestRule = %q, want %q", got, tt.want)
			}
			for _, list := range []string{ListAllow, ListDeny} {
				np, err := p.WithRule(list, got)
				if err != nil {
					t.Fatalf("WithRule(%s, %q): %v", list, got, err)
				}
				want := Allow
				if list == ListDeny {
					want = Deny
				}
				if v := np.Rules(tt.call); v.Decision != want {
					t.Errorf("after learning %s %q: Rules = %+v", list, got, v)
				}
				if tt.other.Tool != "" {
					if v := np.Rules(tt.other); v.Decision == want {
						t.Errorf("learned %s %q also matches %s", list, got, tt.other.Input)
					}
				}
			}
			if v := p.Rules(tt.call); v.Decision != Continue {
				t.Errorf("WithRule changed the original policy: %+v", v)
			}
		})
	}
	if _, err := p.WithRule("maybe", "Bash"); err == nil {
		t.Error("WithRule accepted an unknown list")
	}
	if _, err := p.WithRule(ListAllow, "Bash("); err == nil {
		t.Error("WithRule accepted a malformed rule")
	}
}

func TestPresets(t *testing.T) {
	if err := VerifyPresets(); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, pr := range Presets() {
		names[pr.Name] = true
		if pr.Description == "" || len(pr.MustMatch) == 0 || len(pr.MustNotMatch) == 0 {
			t.Errorf("preset %s lacks a description or examples", pr.Name)
		}
	}
	for _, n := range []string{"rm-critical", "privilege-escalation", "mkfs", "dd-device", "block-device-write", "chmod-chown-critical", "fork-bomb", "shutdown"} {
		if !names[n] {
			t.Errorf("missing preset %s", n)
		}
	}
	// The verification can fail: a preset with a wrong example is reported.
	saved := presets
	defer func() { presets = saved }()
	presets = append([]Preset(nil), saved...)
	presets[0].MustNotMatch = append(presets[0].MustNotMatch, "rm -rf /")
	if err := VerifyPresets(); err == nil || !strings.Contains(err.Error(), "must not match") {
		t.Errorf("VerifyPresets with a bad example = %v", err)
	}
}

// TestMergeSettings merges a user, a project and a local file, least
// specific first, as settingsfile.Load does.
func TestMergeSettings(t *testing.T) {
	var s Settings
	for i, content := range []string{`{
	  "permissions": {"allow": ["Bash(ls *)", "Bash(git status)"], "deny": ["Bash(curl *)"], "defaultMode": "acceptEdits"},
	  "hooks": {"tool.approval.pre": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "a"}]}]},
	  "sandbox": {"network": {"allowedDomains": ["a.com"]}},
	  "model": "ignored"
	}`, `{
	  "permissions": {"allow": ["Bash(git status)", "Bash(make)"], "ask": ["Bash(git push *)"]},
	  "hooks": {"tool.approval.pre": [{"hooks": [{"type": "command", "command": "b"}]}]},
	  "sandbox": {"failIfUnavailable": true, "network": {"allowedDomains": ["b.com", "a.com"]}}
	}`, `{"permissions": {"defaultMode": "plan", "deny": ["Bash(make)"]}}`} {
		f, err := ParseSettings([]byte(content), "/home/user/project")
		if err != nil {
			t.Fatalf("file %d: %v", i, err)
		}
		s = MergeSettings(s, f)
	}
	want := Permissions{
		Allow:       []string{"Bash(ls *)", "Bash(git status)", "Bash(make)"},
		Ask:         []string{"Bash(git push *)"},
		Deny:        []string{"Bash(curl *)", "Bash(make)"},
		DefaultMode: ModePlan,
	}
	if !reflect.DeepEqual(s.Permissions, want) {
		t.Errorf("permissions = %+v, want %+v", s.Permissions, want)
	}
	if g := s.Hooks["tool.approval.pre"]; len(g) != 2 || g[0].Hooks[0].Command != "a" || g[1].Hooks[0].Command != "b" {
		t.Errorf("hooks = %+v", s.Hooks)
	}
	if !s.Sandbox.FailIfUnavailable || !reflect.DeepEqual(s.Sandbox.Network.AllowedDomains, []string{"a.com", "b.com"}) {
		t.Errorf("sandbox = %+v", s.Sandbox)
	}
	// A deny at one level beats an allow at another.
	p := mustCompile(t, s)
	if v := p.Rules(bashCall("make")); v.Decision != Deny {
		t.Errorf("make = %+v, want deny", v)
	}
}

func TestParseSettingsBroken(t *testing.T) {
	tests := []struct {
		name, content, wantErr string
	}{
		{"bad json", `{"permissions": `, "invalid JSON"},
		{"not object", `[1]`, "invalid JSON"},
		{"null", `null`, "top level"},
		{"empty", ``, "empty file"},
		{"unknown mode", `{"permissions": {"defaultMode": "yolo"}}`, "defaultMode"},
		{"bad rule", `{"permissions": {"allow": ["Bash(ls"]}}`, "permissions.allow[0]"},
		{"wrong type", `{"permissions": {"allow": "Bash"}}`, "permissions"},
		{"unknown key", `{"permissions": {"denny": ["Bash"]}}`, "denny"},
		{"bad hooks", `{"hooks": {"x": 3}}`, "hooks"},
		{"bad sandbox", `{"sandbox": {"failIfUnavailable": "yes"}}`, "sandbox"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSettings([]byte(tt.content), "/home/user/project")
			if !errors.Is(err, ErrBadSettings) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseSettings error = %v, want ErrBadSettings saying %q", err, tt.wantErr)
			}
		})
	}
}

func TestCheckRule(t *testing.T) {
	if err := CheckRule(ListAllow, "Bash(npm test)", "/home/user/project"); err != nil {
		t.Errorf("valid rule: %v", err)
	}
	if err := CheckRule("maybe", "Bash", "/home/user/project"); !errors.Is(err, ErrUnknownList) || !strings.Contains(err.Error(), `"maybe"`) {
		t.Errorf("unknown list: %v", err)
	}
	for _, r := range []string{"Bash(", "", "Bash(re:)"} {
		if err := CheckRule(ListDeny, r, "/home/user/project"); !errors.Is(err, ErrMalformedRule) {
			t.Errorf("CheckRule(%q) = %v, want ErrMalformedRule", r, err)
		}
	}
}

// bench1000Rules builds 1,000 user rules of mixed kinds.
func bench1000Rules() Settings {
	var s Settings
	for i := 0; i < 1000; i++ {
		switch i % 5 {
		case 0:
			s.Permissions.Allow = append(s.Permissions.Allow, fmt.Sprintf("Bash(tool%d run:*)", i))
		case 1:
			s.Permissions.Allow = append(s.Permissions.Allow, fmt.Sprintf("Bash(cmd%d --flag *)", i))
		case 2:
			s.Permissions.Deny = append(s.Permissions.Deny, fmt.Sprintf("Bash(danger%d *)", i))
		case 3:
			s.Permissions.Ask = append(s.Permissions.Ask, fmt.Sprintf("Bash(re:^net%d\\b)", i))
		case 4:
			s.Permissions.Allow = append(s.Permissions.Allow, fmt.Sprintf("Edit(src/pkg%d/**)", i))
		}
	}
	s.Permissions.Allow = append(s.Permissions.Allow, "Bash(npm test:*)", "Bash(go test *)", "Bash(ls *)")
	return s
}

func BenchmarkEvaluateBash1000Rules(b *testing.B) {
	p, err := Compile(bench1000Rules(), testEnv)
	if err != nil {
		b.Fatal(err)
	}
	call := bashCall("cd svc && timeout 60 go test -run TestX ./... 2>&1 | tail -n 50; ls -la $(echo src)")
	if v := p.Evaluate(call, ModeDefault); v.Decision != Continue {
		b.Fatalf("unexpected verdict %+v", v)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.Evaluate(call, ModeDefault)
	}
}

func BenchmarkCompile1000Rules(b *testing.B) {
	s := bench1000Rules()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(s, testEnv); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRegexpRules(t *testing.T) {
	p := mustCompile(t, Settings{Permissions: Permissions{
		Allow: []string{`Bash(re:^git (status|log)\b)`, `Bash(re:^make test\b)`},
		Deny:  []string{`Bash(re:^net5\b)`},
	}})
	tests := []struct {
		cmd  string
		want Decision
	}{
		{"git status", Allow}, {"git log --oneline", Allow}, {"git logs", Continue}, {"git push", Continue},
		{"make test", Allow}, {"make test-all", Allow}, {"make tests", Continue}, {"make", Continue},
		{"net5 x", Deny}, {"ls; net5", Deny}, {"net50", Continue}, {"xnet5", Continue},
	}
	for _, tt := range tests {
		if v := p.Rules(bashCall(tt.cmd)); v.Decision != tt.want {
			t.Errorf("Rules(%q) = %+v, want %s", tt.cmd, v, tt.want)
		}
	}
}

// When allow rules cover some of the commands a line runs, the reason names
// the one left over, which the person is asked about; a line no rule
// covers any of needs no reason beyond itself.
func TestUncoveredPartNamed(t *testing.T) {
	pol := mustCompile(t, Settings{Permissions: Permissions{Allow: []string{"Bash(find:*)", "Bash(ls:*)", "Bash(cat:*)"}}})
	tests := []struct {
		cmd, reason string
	}{
		{cmd: `find . -exec id \;`, reason: `no allow rule covers "id", one of the 2 commands this runs`},
		{cmd: "ls && cat f; rm -r y", reason: `no allow rule covers "rm -r y", one of the 3 commands this runs`},
		{cmd: "id | ls", reason: `no allow rule covers "id", one of the 2 commands this runs`},
		{cmd: "id"},
		{cmd: "id; whoami"}, // no rule covers any of it: nothing to single out
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			v := pol.Rules(bashCall(tt.cmd))
			if v.Decision != Continue || v.Reason != tt.reason {
				t.Errorf("Rules(%q) = %s %q, want continue %q", tt.cmd, v.Decision, v.Reason, tt.reason)
			}
		})
	}
}
