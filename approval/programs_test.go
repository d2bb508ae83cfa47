package approval

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/custos-dev/custos/approval/programs"
	"github.com/custos-dev/custos/approval/shell"
)

// Every entry's examples hold under the rules they were written for
// (checked when the first policy is compiled too).
func TestProgramTable(t *testing.T) {
	table, err := programs.TableExamples()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkPrograms(table); err != nil {
		t.Fatal(err)
	}
}

// An example that does not hold is refused: an entry whose rule allows
// what it says must be asked.
func TestProgramTableRefusesBrokenEntries(t *testing.T) {
	bad := []programs.Examples{{Program: "cat", Allow: []string{"cat f"}, Ask: []string{"cat g"}}}
	if err := checkPrograms(bad); err == nil || !strings.Contains(err.Error(), "must not be allowed") {
		t.Errorf("an ask example the rule allows passed the examples: %v", err)
	}
}

func TestProgramGrammarDecides(t *testing.T) {
	allow := []string{"Bash(rg:*)", "Bash(sed -n:*)", "Bash(sed:*)", "Bash(awk:*)", "Bash(git diff:*)", "Bash(git log:*)",
		"Bash(man:*)", "Bash(echo:*)", "Bash(printf:*)", "Bash(test:*)", "Bash(find:*)", "Bash(less:*)", "Bash(sort:*)",
		"Bash(git status:*)", "Bash(go list:*)", "Bash(npm ls:*)", "Bash(cargo tree:*)", "Bash(pip list:*)", "Bash(git:*)",
		"Bash(grep:*)", "Bash(cat:*)"}
	p := mustCompile(t, Settings{Permissions: Permissions{Allow: allow, Deny: []string{"Bash(git push:*)", "Read(.env)"}}})
	tests := []struct {
		cmd            string
		want           Decision
		program, opt   string
		reasonContains string
	}{
		// The commands.
		{cmd: "rg --pre=sh TODO .", want: Continue, program: "rg", opt: "--pre"},
		{cmd: "sed -n '1p; s/a/b/e' README.md", want: Continue, program: "sed", opt: "s///e"},
		{cmd: `awk 'BEGIN{system("id")}'`, want: Continue, program: "awk", opt: "system()"},
		{cmd: "PAGER='sh -c id' git log", want: Continue, program: "git log", opt: "PAGER"},
		{cmd: "git diff --output=notes.txt", want: Continue, program: "git diff", opt: "--output", reasonContains: "writes notes.txt"},
		// Ordinary uses stay allowed.
		{cmd: "rg -n TODO src", want: Allow},
		{cmd: "sed -n 1,5p f", want: Allow},
		{cmd: "awk '{print $1}' f", want: Allow},
		{cmd: "git diff --stat", want: Allow},
		{cmd: "git log --oneline -5", want: Allow},
		{cmd: "find . -name '*.go'", want: Allow},
		{cmd: "man ls", want: Allow},
		{cmd: "echo $((1+2))", want: Allow},
		// Unknown options ask, naming the option.
		{cmd: "rg --frobnicate TODO", want: Continue, program: "rg", opt: "--frobnicate", reasonContains: "does not know"},
		{cmd: "sort -Q f", want: Continue, program: "sort", opt: "-Q"},
		// Runs, by option, script, action or variable.
		{cmd: "find . -exec echo {} ;", want: Continue, program: "find", opt: "-exec"},
		{cmd: "find . -exec id ;", want: Continue},
		{cmd: "find . -fprint out.txt", want: Continue, program: "find", opt: "-fprint"},
		{cmd: "sort --compress-program=sh f", want: Continue, program: "sort", opt: "--compress-program"},
		{cmd: "less '+!id' f", want: Continue, program: "less", opt: "+!id"},
		{cmd: "LESSOPEN='|id' less f", want: Continue, program: "less", opt: "LESSOPEN"},
		{cmd: "export GIT_PAGER='sh -c id'; git log", want: Continue, program: "git log", opt: "GIT_PAGER"},
		{cmd: "env GIT_EXTERNAL_DIFF=x git diff", want: Continue, program: "git diff", opt: "GIT_EXTERNAL_DIFF"},
		{cmd: "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=id git log", want: Continue, program: "git log"},
		{cmd: "man -P 'sh -c id' ls", want: Continue, program: "man", opt: "-P"},
		{cmd: "sed 's/x/y/w out.txt' f", want: Continue, program: "sed", reasonContains: "out.txt"},
		{cmd: "sed '1{' f", want: Continue, program: "sed", opt: "script", reasonContains: "cannot be parsed"},
		{cmd: `awk '{print > "o.txt"}' f`, want: Continue, reasonContains: "o.txt"},
		{cmd: `awk '{print | "sh"}' f`, want: Continue, program: "awk", opt: "|"},
		{cmd: "go list -toolexec=sh ./...", want: Continue, program: "go list", opt: "-toolexec"},
		{cmd: "npm ls --script-shell=sh", want: Continue, program: "npm ls", opt: "--script-shell"},
		{cmd: "cargo tree --config build.rustc-wrapper=x", want: Continue, program: "cargo tree", opt: "--config"},
		{cmd: "pip list --python=/tmp/py", want: Continue, program: "pip list", opt: "--python"},
		{cmd: `F=--pre=sh; rg $F TODO`, want: Continue, program: "rg", opt: "--pre"},
		{cmd: `rg "$X" TODO`, want: Continue, program: "rg", reasonContains: "run time"},
		// Global options: judged, and seen through by deny rules.
		{cmd: "git -C . push", want: Deny},
		{cmd: "git -c x=y --no-pager push origin", want: Deny},
		{cmd: "git -C sub log", want: Continue, program: "git", opt: "-C"},
		{cmd: "git -c core.pager=id log", want: Continue, program: "git", opt: "-c"},
		{cmd: "git --no-pager log -1", want: Allow},
		{cmd: "git status --porcelain", want: Allow},
		{cmd: "git commit -m x", want: Allow}, // Bash(git:*): a subcommand the table does not know is not judged
		// Reads are reads: Read(.env) denies them.
		{cmd: "grep -f .env x f", want: Deny},
		{cmd: `awk 'BEGIN{while ((getline l < ".env") > 0) print l}'`, want: Deny},
		{cmd: "sed 'r .env' f", want: Deny},
		{cmd: "git diff --no-index .env other", want: Deny},
	}
	for _, tt := range tests {
		v := p.Rules(bashCall(tt.cmd))
		if v.Decision != tt.want {
			t.Errorf("%s: got %s (%s), want %s", tt.cmd, v.Decision, v.Reason, tt.want)
			continue
		}
		if tt.program != "" && v.Program != tt.program || tt.opt != "" && v.Option != tt.opt {
			t.Errorf("%s: decided by %q %q, want %q %q (%s)", tt.cmd, v.Program, v.Option, tt.program, tt.opt, v.Reason)
		}
		if !strings.Contains(v.Reason, tt.reasonContains) {
			t.Errorf("%s: reason %q does not say %q", tt.cmd, v.Reason, tt.reasonContains)
		}
	}
}

// A rule that names what was found covers it.
func TestRulesThatNameTheOption(t *testing.T) {
	for _, tt := range []struct{ rule, cmd string }{
		{"Bash(rg --pre=sh:*)", "rg --pre=sh TODO ."},
		{"Bash(git -C sub log:*)", "git -C sub log --oneline"},
		{"Bash(sed -n '1p; s/a/b/e' README.md)", "sed -n '1p; s/a/b/e' README.md"},
		{"Bash(find . -exec grep -l x '{}' +)", "find . -exec grep -l x {} +"},
		{"Bash(PAGER=cat git log)", "PAGER=cat git log"},
		{"Bash", "rg --pre=sh TODO ."},
	} {
		p := mustCompile(t, Settings{Permissions: Permissions{Allow: []string{tt.rule, "Bash(grep:*)"}}})
		if v := p.Rules(bashCall(tt.cmd)); v.Decision != Allow {
			t.Errorf("%s under %s: got %s (%s)", tt.cmd, tt.rule, v.Decision, v.Reason)
		}
	}
}

// System deny rules still come first, whatever the table says.
func TestProgramTableNeverOverridesSystemRules(t *testing.T) {
	p := mustCompile(t, Settings{Permissions: Permissions{Allow: []string{"Bash"}}})
	if v := p.Rules(bashCall("find / -delete")); v.Decision != Deny || !v.System {
		t.Errorf("find / -delete: %+v", v)
	}
}

// FuzzProgramTable: under an allow rule for every entry of the table, no
// command is allowed while a finding of the table stands on it or while it
// writes a file, and the analysis is the same every time.
func FuzzProgramTable(f *testing.F) {
	table, err := programs.TableExamples()
	if err != nil {
		f.Fatal(err)
	}
	var allow []string
	for _, p := range table {
		if !p.Partial {
			allow = append(allow, "Bash("+p.Program+":*)")
		}
		for _, ex := range append(append([]string(nil), p.Allow...), p.Ask...) {
			f.Add(ex)
		}
	}
	pol, err := Compile(Settings{Permissions: Permissions{Allow: allow}}, testEnv)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		call := bashCall(cmd)
		var in struct{ Command string }
		if err := json.Unmarshal(call.Input, &in); err != nil {
			t.Fatal(err)
		}
		a := shell.Analyze(in.Command, testEnv.shell())
		if b := shell.Analyze(in.Command, testEnv.shell()); !reflect.DeepEqual(a, b) {
			t.Fatalf("%q: the analysis differs between runs", in.Command)
		}
		if pol.Rules(call).Decision != Allow {
			return
		}
		for _, c := range a.Commands {
			if len(c.Findings) > 0 {
				t.Fatalf("allowed %q although %v", in.Command, c.Findings)
			}
		}
		for _, fa := range a.Files {
			if fa.Kind.Writes() {
				t.Fatalf("allowed %q although it writes %s (%s)", in.Command, fa.Word, fa.Via)
			}
		}
	})
}
