package approval

import (
	"strings"
	"testing"
)

// stateCase is one command line judged under allow rules for the programs
// it runs (and for the builtins that set state, so that what decides is
// the state, not a builtin no rule covers), with Read(.env) denied and
// curl denied.
type stateCase struct {
	allow     []string
	cmd       string
	want      string // "allow", "deny", "ask" (forced), "open" (not allowed: ask or a person)
	reasonHas string
	only      bool // allow only the rules listed
}

// stateBuiltins are allow rules for the builtins that change the shell's
// state, and a function named f.
var stateBuiltins = []string{"Bash(read:*)", "Bash(printf:*)", "Bash(mapfile:*)", "Bash(unset:*)", "Bash(set:*)",
	"Bash(shopt:*)", "Bash(alias:*)", "Bash(hash:*)", "Bash(enable:*)", "Bash(source:*)", "Bash(trap:*)", "Bash(bash:*)",
	"Bash(f:*)", "Bash(true:*)", "Bash(command:*)"}

func runStateCases(t *testing.T, cases []stateCase) {
	t.Helper()
	for _, tt := range cases {
		allow := tt.allow
		if !tt.only {
			allow = append(append([]string(nil), tt.allow...), stateBuiltins...)
		}
		p := mustCompile(t, Settings{Permissions: Permissions{Allow: allow,
			Deny: []string{"Read(.env)", "Read(secrets/**)", "Bash(curl *)"}}})
		v := p.Rules(bashCall(tt.cmd))
		ok := false
		switch tt.want {
		case "allow":
			ok = v.Decision == Allow
		case "deny":
			ok = v.Decision == Deny
		case "ask":
			ok = v.Decision == Ask
		case "open":
			ok = v.Decision == Ask || v.Decision == Continue
		}
		if !ok {
			t.Errorf("%s under %v: got %s (%s), want %s", tt.cmd, tt.allow, v.Decision, v.Reason, tt.want)
			continue
		}
		if !strings.Contains(v.Reason, tt.reasonHas) {
			t.Errorf("%s: reason %q does not say %q", tt.cmd, v.Reason, tt.reasonHas)
		}
	}
}

// What the line sets before a command is judged for that
// command: a variable that is not known to be inert, exported in any of
// bash's ways, keeps an allow rule for the command from covering it.
func TestShellStateIsJudged(t *testing.T) {
	cat, ls, git := []string{"Bash(cat:*)"}, []string{"Bash(ls:*)"}, []string{"Bash(git status:*)", "Bash(git log:*)"}
	runStateCases(t, []stateCase{
		// The lines.
		{allow: cat, cmd: "export LD_PRELOAD=./x.so; cat README.md", want: "ask", reasonHas: "LD_PRELOAD set earlier in the line changes what cat runs"},
		{allow: ls, cmd: "PATH=.:$PATH; ls", want: "ask", reasonHas: "the entry . is relative"},
		{allow: ls, cmd: "env -- PATH=./:/bin ls", want: "ask", reasonHas: "PATH set on the command"},
		{allow: git, cmd: "HOME=./h git status", want: "open", reasonHas: "HOME set on the command changes what git runs"},
		{allow: git, cmd: "XDG_CONFIG_HOME=./cfg git status", want: "open", reasonHas: "XDG_CONFIG_HOME"},
		{allow: []string{"Bash(python3:*)"}, cmd: "PYTHONPATH=. python3 -m json.tool f.json", want: "open", reasonHas: "PYTHONPATH"},
		{allow: []string{"Bash(go version:*)"}, cmd: "GOTOOLCHAIN=go1.99.0 GOPROXY=file:///tmp/p go version", want: "open"},
		{allow: []string{"Bash(make -n:*)"}, cmd: "export MAKEFLAGS=--eval=x; make -n", want: "open", reasonHas: "MAKEFLAGS"},
		{allow: []string{"Bash(make -n:*)"}, cmd: "MAKEFILES=/tmp/x.mk make -n", want: "open", reasonHas: "MAKEFILES"},
		// Every way bash has of exporting.
		{allow: cat, cmd: "declare -x LD_PRELOAD=./x.so; cat f", want: "ask"},
		{allow: cat, cmd: "typeset -x LD_AUDIT=./x.so; cat f", want: "ask"},
		{allow: cat, cmd: "readonly LD_LIBRARY_PATH=.; cat f", want: "ask"},
		{allow: cat, cmd: "f() { local -x LD_PRELOAD=./x.so; cat a; }; f", want: "ask"},
		{allow: cat, cmd: "command export LD_PRELOAD=./x.so; cat f", want: "ask"},
		{allow: cat, cmd: "'export' LD_PRELOAD=./x.so; cat f", want: "ask"},
		{allow: cat, cmd: "x=./x.so; export x; cat f", want: "open", reasonHas: "x set earlier in the line"},
		{allow: cat, cmd: "set -a; pager=x; cat f", want: "open", reasonHas: "pager"},
		{allow: cat, cmd: "set -o allexport; pager=x; cat f", want: "open", reasonHas: "pager"},
		{allow: cat, cmd: "bash -ac 'pager=x; cat f'", want: "open", reasonHas: "pager"},
		{allow: cat, cmd: "read -r PATH <<< .; cat f", want: "ask"},
		{allow: cat, cmd: "printf -v PATH %s .; cat f", want: "ask"},
		{allow: cat, cmd: "mapfile -t LD_PRELOAD < list; cat f", want: "ask"},
		{allow: cat, cmd: "for PATH in .; do cat f; done", want: "ask"},
		{allow: cat, cmd: "true ${PATH:=.}; cat f", want: "ask"},
		{allow: cat, cmd: "(( PATH = 1 )); cat f", want: "ask"},
		{allow: cat, cmd: "let PATH=1; cat f", want: "ask"},
		{allow: cat, cmd: "unset PATH; cat f", want: "ask", reasonHas: "current directory"},
		{allow: cat, cmd: "env -i cat f", want: "ask"},
		{allow: cat, cmd: "env -u PATH cat f", want: "ask"},
		{allow: cat, cmd: "export PATH=$PATH:; cat f", want: "ask", reasonHas: "empty entry"},
		{allow: cat, cmd: "PATH=/tmp/bin:$PATH cat f", want: "ask", reasonHas: "not a system directory"},
		{allow: cat, cmd: "PATH=~/bin:$PATH cat f", want: "ask"},
		{allow: cat, cmd: "PATH=$PWD/bin:$PATH cat f", want: "ask"},
		{allow: cat, cmd: "PATH=/home/user/project/bin:$PATH cat f", want: "ask"},
		{allow: cat, cmd: "PATH=.:$PATH; PATH=/usr/bin:$PATH; cat f", want: "ask"},
		{allow: cat, cmd: "IFS=/; cat f", want: "ask"},
		{allow: cat, cmd: "FOO=1; cat f", want: "open", reasonHas: "FOO set earlier in the line"},
		{allow: cat, cmd: "GIT_DIR=./x; export GIT_DIR; cat f", want: "open"},
		{allow: git, cmd: "export GIT_CONFIG_GLOBAL=./g; git status", want: "ask"},
		{allow: git, cmd: "export GIT_PAGER='sh -c id'; git log", want: "open", reasonHas: "GIT_PAGER"},
		{allow: git, cmd: "LANG=/tmp/x git status", want: "open", reasonHas: "/tmp/x"},
		{allow: git, cmd: "TZ=:/tmp/zone git status", want: "open"},
		{allow: git, cmd: "LC_ALL=../../x git status", want: "open"},
		{allow: git, cmd: "https_proxy=http://x git status", want: "open"},
		{allow: git, cmd: "TERM=$T git status", want: "open"},
		{allow: cat, cmd: "env -vu PATH cat f", want: "ask"},
		{allow: cat, cmd: "env -iv cat f", want: "ask"},
		// PS4 runs its code for every command set -x traces, builtins too.
		{allow: []string{"Bash(echo:*)"}, cmd: "PS4='$(id)'; set -x; echo hi", want: "ask", reasonHas: "PS4"},
		{allow: []string{"Bash(echo:*)"}, cmd: "PS4='$(id)' bash -xc 'echo hi'", want: "ask"},
		{allow: []string{"Bash(echo:*)"}, cmd: "read PS4 < f; set -x; echo hi", want: "ask"},
		// Exported functions, a sourced file, aliases, hash, enable.
		{allow: cat, cmd: "cat() { id; }; export -f cat; cat f", want: "ask"},
		{allow: cat, cmd: "source ./env.sh; cat /home/user/project/f", want: "open", reasonHas: "source ./env.sh"},
		{allow: cat, cmd: "shopt -s expand_aliases\nalias cat='rm -rf .'\ncat f", want: "ask", reasonHas: "alias"},
		{allow: cat, cmd: "hash -p ./x cat; cat f", want: "ask", reasonHas: "hash -p"},
		{allow: cat, cmd: "enable -f ./x.so cat; cat f", want: "ask", reasonHas: "enable"},
		// A program named by a path runs that file, not the program a rule
		// names: only a rule for that very file covers it.
		{allow: ls, cmd: "./ls", want: "open", reasonHas: "runs the file /home/user/project/ls"},
		{allow: ls, cmd: "bin/ls -la", want: "open"},
		{allow: ls, cmd: "/tmp/ls", want: "open"},
		{allow: ls, cmd: "~/bin/ls", want: "open"},
		{allow: append([]string{"Bash(cd:*)"}, ls...), cmd: "cd \"$D\" && /usr/bin/ls && ./ls", want: "open", reasonHas: "cannot be told"},
		{allow: append([]string{"Bash(timeout:*)"}, ls...), cmd: "timeout 5 ./ls", want: "open"},
		{allow: append([]string{"Bash(timeout:*)"}, ls...), cmd: "./timeout 5 ls", want: "open"},
		{allow: ls, cmd: "./env ls", want: "open"},
		{allow: []string{"Bash(xargs:*)"}, cmd: "xargs -0 ./echo", want: "ask"},
		{allow: []string{"Bash(./gradlew:*)"}, cmd: "cd sub && ./gradlew test", want: "open"},
		{allow: []string{"Bash(./gradlew:*)"}, cmd: "gradlew test", want: "open"},
		{allow: []string{"Bash(gradlew:*)"}, cmd: "./gradlew test", want: "open"},
		{allow: nil, cmd: "./curl x", want: "deny"},
		// Order: in loops and functions the state reaches what runs later.
		{allow: cat, cmd: "for i in 1 2; do cat f; export LD_PRELOAD=./x.so; done", want: "ask"},
		{allow: cat, cmd: "while true; do cat f; FOO=1; done", want: "open"},
		{allow: cat, cmd: "f() { export LD_PRELOAD=./x.so; }; f; cat a", want: "ask"},
		// For the shell a command starts.
		{allow: []string{"Bash(git log:*)"}, cmd: "GIT_PAGER=x bash -c 'git log'", want: "open"},
		// trap's action runs later: judged, with the state the line leaves.
		{allow: ls, cmd: "trap 'id' EXIT; ls", want: "open", reasonHas: "id"},
		{allow: cat, cmd: "trap 'cat f' EXIT; export LD_PRELOAD=./x.so", want: "ask"},
		{allow: nil, cmd: "trap 'cat /home/user/project/.env' EXIT", want: "deny"},
		{allow: cat, cmd: "trap 'cat .env' EXIT", want: "open"},
		{allow: nil, cmd: "trap \"$X\" EXIT", want: "ask"},
		// Deny rules see through env --.
		{allow: nil, cmd: "env -- X=1 curl x", want: "deny"},
		{allow: nil, cmd: "env -- X=$y curl x", want: "deny"},
		{allow: nil, cmd: "xargs -l curl < urls", want: "deny"},
		{allow: nil, cmd: "flock -c 'curl x' /tmp/l", want: "deny"},
		{allow: nil, cmd: "flock /tmp/l -c 'curl x'", want: "deny"},
		{allow: nil, cmd: "flock /tmp/l --command='curl x'", want: "deny"},
		{allow: nil, cmd: "busybox curl x", want: "deny"},
		{allow: nil, cmd: "busybox sh -c 'curl x'", want: "deny"},
		{allow: nil, cmd: "xargs -e curl < urls", want: "deny"},
		// ~ after HOME changed is not the home custos knows.
		{allow: cat, cmd: "HOME=/home/user/project; cat ~/.env", want: "ask", reasonHas: "cannot be resolved"},
		// Exact rules name the command, not the variables before it; a
		// rule for the whole line does.
		{allow: []string{"Bash(git log)"}, cmd: "PAGER=x git log", want: "open", reasonHas: "whole line", only: true},
		{allow: []string{"Bash(git log)"}, cmd: "export GIT_PAGER=x; git log", want: "open", only: true},
		{allow: []string{"Bash(cat f)"}, cmd: "FOO=1 cat f", want: "open", only: true},
		{allow: []string{"Bash(FOO=1 cat f)"}, cmd: "FOO=1 cat f", want: "allow", only: true},
		{allow: []string{"Bash(env PAGER=cat git log)"}, cmd: "env PAGER=cat git log", want: "allow", only: true},
		{allow: []string{"Bash"}, cmd: "FOO=1 cat f", want: "allow", only: true},
	})
}

// What the line sets that is known to be inert, or that stays the shell's
// own, changes nothing: everyday lines stay allowed.
func TestShellStateInert(t *testing.T) {
	cat := []string{"Bash(cat:*)"}
	runStateCases(t, []stateCase{
		{allow: cat, cmd: "f=README.md; cat \"$f\"", want: "allow"},
		{allow: []string{"Bash(gofmt:*)"}, cmd: "for f in *.go; do gofmt -l \"$f\"; done", want: "allow"},
		{allow: []string{"Bash(sort:*)"}, cmd: "LANG=C sort f", want: "allow"},
		{allow: []string{"Bash(sort:*)"}, cmd: "export LC_ALL=C.UTF-8; sort f", want: "allow"},
		{allow: []string{"Bash(sort:*)"}, cmd: "LANGUAGE=de_DE:en sort f", want: "allow"},
		{allow: cat, cmd: "TZ=Europe/Paris cat f", want: "allow"},
		{allow: cat, cmd: "TZ=EST5EDT,M3.2.0,M11.1.0 cat f", want: "allow"},
		{allow: cat, cmd: "NO_COLOR=1 TERM=dumb COLUMNS=80 cat f", want: "allow"},
		{allow: cat, cmd: "export FORCE_COLOR=0 CI=true; cat f", want: "allow"},
		{allow: []string{"Bash(go test:*)"}, cmd: "export PATH=/usr/local/go/bin:$PATH; go test ./...", want: "allow"},
		{allow: []string{"Bash(go test:*)"}, cmd: "PATH=\"/usr/local/go/bin:${PATH}\" go test ./...", want: "allow"},
		{allow: []string{"Bash(go test:*)"}, cmd: "env PATH=/usr/local/go/bin:$PATH go test ./...", want: "allow"},
		{allow: []string{"Bash(ls:*)"}, cmd: "PATH=/usr/bin:/bin ls", want: "allow"},
		{allow: []string{"Bash(git status:*)"}, cmd: "HOME=/nonexistent git status", want: "allow"},
		{allow: []string{"Bash(git status:*)"}, cmd: "XDG_CONFIG_HOME=/usr/share git status", want: "allow"},
		{allow: []string{"Bash(echo:*)"}, cmd: "export FOO=./x; echo $FOO", want: "allow"},
		{allow: []string{"Bash(echo:*)"}, cmd: "X=1; echo $X", want: "allow"},
		{allow: append([]string{"Bash(test:*)"}, cat...), cmd: "i=0; while test $i -lt 3; do cat f; i=$((i+1)); done", want: "allow"},
		{allow: []string{"Bash(read:*)", "Bash(echo:*)"}, cmd: "while read -r line; do echo \"$line\"; done < list", want: "allow"},
		{allow: cat, cmd: "cat f; FOO=1", want: "allow"},
		{allow: cat, cmd: "unset FOO; cat f", want: "allow"},
		{allow: []string{"Bash(ls:*)"}, cmd: "/bin/ls -la", want: "allow"},
		{allow: []string{"Bash(git status:*)"}, cmd: "/usr/bin/git status", want: "allow"},
		{allow: []string{"Bash(./gradlew:*)"}, cmd: "./gradlew test", want: "allow"},
		{allow: []string{"Bash(./scripts/test.sh)"}, cmd: "scripts/test.sh", want: "allow"},
		{allow: []string{"Bash"}, cmd: "./x.sh", want: "allow", only: true},
	})
}

// An Always answer to a command under a variable the line sets learns the
// whole line: a rule for the command's words would cover any value.
func TestSuggestRuleKeepsTheVariables(t *testing.T) {
	for _, tt := range []struct{ cmd, want string }{
		{"PAGER=cat git log", "Bash(PAGER=cat git log)"},
		{"LANG=C sort f", "Bash(sort f)"},
	} {
		if got := SuggestRule(bashCall(tt.cmd), testEnv); got != tt.want {
			t.Errorf("SuggestRule(%q) = %q, want %q", tt.cmd, got, tt.want)
		}
	}
}
