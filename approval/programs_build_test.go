package approval

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/custos-dev/custos/approval/shell"
)

// Programs a prefix rule allows are judged by what they do:
// tar's, make's, date's, jq's and python -m json.tool's options that run,
// write or read, read in clusters the way each program reads them.
func TestProgramsJudgedByWhatTheyDo(t *testing.T) {
	tarT, makeN := []string{"Bash(tar -t:*)"}, []string{"Bash(make -n:*)"}
	date, jq := []string{"Bash(date:*)"}, []string{"Bash(jq:*)"}
	jsonTool := []string{"Bash(python3 -m json.tool:*)"}
	runStateCases(t, []stateCase{
		// tar: options that run a program, an archive on another host.
		{allow: tarT, cmd: "tar -t -f x.tar -I ./x.sh", want: "open", reasonHas: "-I runs a program"},
		{allow: tarT, cmd: "tar -tf x.tar --checkpoint=1 --checkpoint-action=exec=id", want: "open", reasonHas: "--checkpoint-action"},
		{allow: tarT, cmd: "tar -tf x.tar --to-command=id", want: "open", reasonHas: "--to-command"},
		{allow: tarT, cmd: "tar -tf x.tar -F ./next.sh", want: "open"},
		{allow: tarT, cmd: "tar -tf x.tar --rsh-command=./r", want: "open"},
		{allow: tarT, cmd: "tar -tf x.tar --use-compress=./x.sh", want: "open"},
		{allow: tarT, cmd: "tar -tvIf ./x.sh x.tar", want: "open"},
		{allow: tarT, cmd: "tar -tf host:x.tar", want: "open", reasonHas: "another host"},
		{allow: tarT, cmd: "tar -tf .env", want: "deny"},
		{allow: tarT, cmd: "tar -t -T secrets/list -f x.tar", want: "deny"},
		// tar's modes: what they read and write.
		{allow: []string{"Bash(tar:*)"}, cmd: "tar -czf out.tgz secrets", want: "deny"},
		{allow: []string{"Bash(tar:*)"}, cmd: "tar -C /home/user/project -cf - .env", want: "deny"},
		{allow: []string{"Bash(tar:*)"}, cmd: "tar -cf out.tar src", want: "open", reasonHas: "writes out.tar"},
		{allow: []string{"Bash(tar:*)"}, cmd: "tar xf x.tar", want: "open", reasonHas: "tar -x destination"},
		{allow: []string{"Bash(tar:*)"}, cmd: "tar -xPf x.tar", want: "open"},
		{allow: []string{"Bash(tar:*)"}, cmd: "tar -cf - --remove-files src", want: "open"},
		// make: what the command line adds to the makefile.
		{allow: makeN, cmd: "make -n --eval='$(shell id)'", want: "open", reasonHas: "--eval runs a program"},
		{allow: makeN, cmd: "make -n -E '$(shell id)'", want: "open"},
		{allow: makeN, cmd: "make -n -f /tmp/x.mk", want: "open", reasonHas: "-f"},
		{allow: makeN, cmd: "make -n --makefile=ci.mk", want: "open"},
		{allow: makeN, cmd: "make -n -I inc", want: "open"},
		{allow: makeN, cmd: "make -n -C sub", want: "open"},
		{allow: makeN, cmd: "make -n CC=sh", want: "open", reasonHas: "sets a make variable"},
		{allow: makeN, cmd: "make -n 'X:=$(shell id)'", want: "open"},
		{allow: makeN, cmd: "make -n -t", want: "open"},
		{allow: makeN, cmd: "make -n $(echo --eval=x)", want: "open"},
		{allow: makeN, cmd: "make -n -f .env", want: "deny"},
		// date: files it reads, the clock it sets.
		{allow: date, cmd: "date -f .env", want: "deny"},
		{allow: date, cmd: "date -uf .env", want: "deny"},
		{allow: date, cmd: "date -r secrets/key", want: "deny"},
		{allow: date, cmd: "date -s 2020-01-01", want: "open", reasonHas: "sets the system clock"},
		{allow: date, cmd: "date 010100002030", want: "open", reasonHas: "sets the system clock"},
		// jq's clusters are flags; -f makes the first operand a file.
		{allow: jq, cmd: "jq -nrf .env", want: "deny"},
		{allow: jq, cmd: "jq -rnf prog.jq", want: "open", reasonHas: "script"},
		{allow: jq, cmd: "jq -n --rawfile k .env '$k'", want: "deny"},
		{allow: jq, cmd: "jq -n --slurpfile k secrets/a.json '$k'", want: "deny"},
		{allow: jq, cmd: "jq -n 'import \"secrets/a\" as $a; $a'", want: "open", reasonHas: "module"},
		{allow: jq, cmd: "jq -L /tmp -n 1", want: "open"},
		{allow: jq, cmd: "jq --args -f .env a b", want: "deny"},
		{allow: jq, cmd: "jq -n --from-file .env", want: "deny"},
		// python -m json.tool: IN is read, OUT written.
		{allow: jsonTool, cmd: "python3 -m json.tool a.json b.json", want: "open", reasonHas: "writes b.json"},
		{allow: jsonTool, cmd: "python3 -m json.tool .env", want: "deny"},
		{allow: jsonTool, cmd: "python3 -m json.tool --frob a.json", want: "open"},
		// xargs: appended words are harmless only for a program that
		// takes them as text.
		{allow: []string{"Bash(xargs:*)", "Bash(cat:*)"}, cmd: "ls | xargs cat", want: "ask"},
		{allow: []string{"Bash(xargs:*)", "Bash(rm:*)"}, cmd: "xargs rm < list", want: "ask"},
		{allow: []string{"Bash(xargs:*)", "Bash(sh:*)"}, cmd: "xargs sh -c 'echo $0'", want: "ask"},
		{allow: []string{"Bash(xargs:*)"}, cmd: "xargs --process-slot-var=LD_PRELOAD echo", want: "ask"},
		{allow: []string{"Bash(xargs:*)"}, cmd: "xargs nice echo", want: "ask"},
		{allow: []string{"Bash(xargs:*)"}, cmd: "xargs -l rm", want: "ask"},
		{allow: []string{"Bash(xargs:*)"}, cmd: "xargs -i rm {}", want: "ask"},
		{allow: []string{"Bash(xargs:*)", "Bash(echo:*)"}, cmd: "xargs -0a .env echo", want: "deny"},
		{allow: []string{"Bash(xargs:*)", "Bash(echo:*)"}, cmd: "xargs --arg-file=.env echo", want: "deny"},
		// xargs' options are read as xargs reads them: -e, -i and -l take
		// the rest of their cluster as their value (-eE is the end string
		// E, and rm the command), long options may be abbreviated.
		{allow: []string{"Bash(xargs:*)"}, cmd: "xargs -eE rm echo hi", want: "ask"},
		{allow: []string{"Bash(xargs:*)"}, cmd: "xargs -0iE rm echo", want: "ask"},
		{allow: []string{"Bash(xargs:*)"}, cmd: "xargs -lL rm echo", want: "ask"},
		{allow: []string{"Bash(xargs:*)"}, cmd: "xargs --process=LD_PRELOAD echo", want: "ask", reasonHas: "LD_PRELOAD set by xargs"},
		{allow: []string{"Bash(xargs:*)", "Bash(echo:*)"}, cmd: "xargs --arg=.env echo", want: "deny"},
		{allow: []string{"Bash(xargs:*)", "Bash(echo:*)"}, cmd: "xargs --arg .env echo", want: "deny"},
		{allow: []string{"Bash(xargs:*)", "Bash(echo:*)"}, cmd: "xargs -0a.env echo", want: "deny"},
		// A rule naming xargs and its program covers the options that
		// change only how xargs splits and batches its input, not those
		// that do more (-I, -a, -o, -p, --process-slot-var).
		{allow: []string{"Bash(xargs echo:*)"}, cmd: "xargs -I{} echo {}", want: "open"},
		{allow: []string{"Bash(xargs echo:*)"}, cmd: "xargs -a list echo", want: "open"},
		{allow: []string{"Bash(xargs echo:*)"}, cmd: "xargs -o echo", want: "open"},
		{allow: []string{"Bash(xargs echo:*)"}, cmd: "xargs -p -0 echo", want: "open"},
		{allow: []string{"Bash(xargs echo:*)"}, cmd: "xargs -0 --process-slot-var=X echo", want: "open"},
		{allow: []string{"Bash(xargs echo:*)"}, cmd: "xargs -0 ./echo", want: "ask"},
		{allow: []string{"Bash(xargs rm:*)"}, cmd: "xargs -0 rm", want: "ask"},
		{allow: []string{"Bash(xargs echo:*)"}, cmd: "xargs -0 nice echo", want: "ask"},
	})
}

// A deny rule naming xargs and the program it runs sees through the
// options that change only how xargs splits its input.
func TestXargsDenyRulesSeeThroughPlainOptions(t *testing.T) {
	p := mustCompile(t, Settings{Permissions: Permissions{Allow: []string{"Bash(xargs:*)"}, Deny: []string{"Bash(xargs rm:*)"}}})
	for _, cmd := range []string{"xargs rm", "xargs -0 rm", "xargs --null -n 1 -P4 rm -f", "xargs -r -- rm", "find . | xargs -d '\\n' rm"} {
		if v := p.Rules(bashCall(cmd)); v.Decision != Deny {
			t.Errorf("%s: got %s (%s), want deny", cmd, v.Decision, v.Reason)
		}
	}
}

// Ordinary use stays allowed (judging more must not ask more of everyday
// commands), and a rule for a program the table does not know says that
// it covers everything it can do.
func TestOrdinaryUseStaysAllowed(t *testing.T) {
	runStateCases(t, []stateCase{
		{allow: []string{"Bash(tar -t:*)"}, cmd: "tar -tf x.tar", want: "allow"},
		{allow: []string{"Bash(tar -t:*)"}, cmd: "tar tf x.tar", want: "allow"},
		{allow: []string{"Bash(tar -t:*)"}, cmd: "tar -tvzf x.tgz src/", want: "allow"},
		{allow: []string{"Bash(tar -tf:*)"}, cmd: "tar -t -f x.tar", want: "allow"},
		{allow: []string{"Bash(tar:*)"}, cmd: "tar -xOf x.tar README.md | head", want: "open"}, // head has no rule here
		{allow: []string{"Bash(tar:*)", "Bash(head:*)"}, cmd: "tar -xOf x.tar README.md | head", want: "allow"},
		{allow: []string{"Bash(tar:*)"}, cmd: "tar -czf - src", want: "allow"},
		{allow: []string{"Bash(make -n:*)"}, cmd: "make -n", want: "allow"},
		{allow: []string{"Bash(make -n:*)"}, cmd: "make -n test", want: "allow"},
		{allow: []string{"Bash(make -n:*)"}, cmd: "make -ns build", want: "allow"},
		{allow: []string{"Bash(make -n:*)"}, cmd: "make --dry-run build", want: "allow"},
		{allow: []string{"Bash(tar -t:*)"}, cmd: "tar --list --file x.tar", want: "allow"},
		{allow: []string{"Bash(tar -t -I ./x.sh:*)"}, cmd: "tar -t --use-compress-program=./x.sh -f x.tar", want: "allow"},
		{allow: []string{"Bash(tar -t --use-compress-program=./x.sh:*)"}, cmd: "tar -tI ./x.sh -f x.tar", want: "allow"},
		{allow: []string{"Bash(make:*)"}, cmd: "make -j4 test", want: "allow"},
		{allow: []string{"Bash(date:*)"}, cmd: "date -u +%Y-%m-%d", want: "allow"},
		{allow: []string{"Bash(date:*)"}, cmd: "date -d @0 +%s", want: "allow"},
		{allow: []string{"Bash(jq:*)"}, cmd: "jq -nr '$x' --arg x 1", want: "allow"},
		{allow: []string{"Bash(jq:*)"}, cmd: "jq -r .name package.json", want: "allow"},
		{allow: []string{"Bash(python3 -m json.tool:*)"}, cmd: "python3 -m json.tool --indent 2 a.json", want: "allow"},
		{allow: []string{"Bash(xargs:*)", "Bash(printf:*)"}, cmd: "printf 'a\\0b' | xargs -0 echo", want: "allow"},
		{allow: []string{"Bash(printf:*)", "Bash(echo:*)"}, cmd: "printf 'a\\0b' | xargs -0 echo", want: "allow"},
		{allow: []string{"Bash(git ls-files:*)", "Bash(xargs:*)"}, cmd: "git ls-files | xargs -I{} echo {}", want: "allow"},
		// The options that change only how xargs splits and batches its
		// input do not stop a rule naming xargs and its program.
		{allow: []string{"Bash(xargs echo:*)", "Bash(printf:*)"}, cmd: "printf 'a\\0b' | xargs -0 echo", want: "allow"},
		{allow: []string{"Bash(xargs echo:*)"}, cmd: "xargs --null echo", want: "allow"},
		{allow: []string{"Bash(xargs echo:*)"}, cmd: "xargs -d '\\n' -n 1 -P 4 -r -t -x -s 4096 echo", want: "allow"},
		{allow: []string{"Bash(xargs echo:*)"}, cmd: "xargs --delimiter=, --max-args=2 --no-run-if-empty --verbose echo x", want: "allow"},
		{allow: []string{"Bash(xargs echo:*)"}, cmd: "xargs -0rn1 -L2 -E END echo", want: "allow"},
		{allow: []string{"Bash(xargs echo:*)"}, cmd: "xargs --nul --max-a 1 echo", want: "allow"},
		{allow: []string{"Bash(xargs printf %s:*)"}, cmd: "xargs -0 printf %s", want: "allow"},
		{allow: []string{"Bash(xargs basename:*)"}, cmd: "find . -print0 | xargs -0 -n1 basename", want: "open"}, // find has no rule here
		{allow: []string{"Bash(xargs basename:*)", "Bash(find:*)"}, cmd: "find . -print0 | xargs -0 -n1 basename", want: "allow"},
		{allow: []string{"Bash(gofmt:*)"}, cmd: "gofmt -l .", want: "allow", reasonHas: "no entry for gofmt: the rule covers everything it can do"},
		{allow: []string{"Bash(npm test:*)"}, cmd: "npm test", want: "allow", reasonHas: "no entry for npm test"},
		{allow: []string{"Bash(git:*)"}, cmd: "git commit -m x", want: "allow", reasonHas: "no entry for git commit"},
		{allow: []string{"Bash(python3:*)"}, cmd: "python3 x.py", want: "allow", reasonHas: "no entry for python3"},
		{allow: []string{"Bash(python3:*)"}, cmd: "python3 -m http.server", want: "allow", reasonHas: "no entry for python3 -m http.server"},
		{allow: []string{"Bash(make)"}, cmd: "make", want: "allow", only: true},
	})
}

// A rule's words and a command's text split clusters alike: a deny rule
// for tar -x sees tar -xzf and tar xzf, an allow rule for tar -tf sees
// tar -t -f. (A prefix stays a prefix: tar -zxf does not start with -x.)
func TestRulesSeeThroughClusters(t *testing.T) {
	p := mustCompile(t, Settings{Permissions: Permissions{Deny: []string{"Bash(tar -x:*)", "Bash(jq -f:*)"}}})
	for _, cmd := range []string{"tar -xzf a.tgz", "tar xzf a.tgz", "tar -x -z -f a.tgz", "jq -fn prog.jq", "tar --extract -zf a.tgz", "tar --get --file=a.tgz"} {
		if v := p.Rules(bashCall(cmd)); v.Decision != Deny {
			t.Errorf("%s: got %s (%s), want deny", cmd, v.Decision, v.Reason)
		}
	}
	for _, tt := range []struct{ cmd, text string }{
		{"tar -tf x.tar", "tar -t -f x.tar"},
		{"tar tzf x.tgz a", "tar -t -z -f x.tgz a"},
		{"tar -tfx.tar", "tar -t -f x.tar"},
		{"jq -nrf p.jq", "jq -n -r -f p.jq"},
		{"date -uf d.txt", "date -u -f d.txt"},
		{"head -5 f", "head -5 f"},
		{"sed -ni.bak p f", "sed -n -i.bak p f"},
		{"grep -e -rn f", "grep -e -rn f"},
		{"grep -- -rn f", "grep -- -rn f"},
		{"git log -pS x", "git log -pS x"},
		{"find . -name x", "find . -name x"},
		{"tar --list --file=x.tar", "tar -t -f x.tar"},
		{"make --dry-run --jobs=4", "make -n -j4"},
		{"head --lines=5 f", "head -n 5 f"},
		{"ls --color=never", "ls --color=never"},
	} {
		a := shell.Analyze(tt.cmd, testEnv.shell())
		if len(a.Commands) != 1 || a.Commands[0].Text != tt.text {
			t.Errorf("%s: text %q, want %q", tt.cmd, a.Commands[0].Text, tt.text)
		}
	}
}

// The real programs are the oracle for the archive, build and clock holes
// too: each command
// first proves, in a throwaway directory, that it runs a program (RAN) or
// writes a file; then it is never allowed under the rules people write
// for the program. The ordinary uses really work and stay allowed.
func TestProgramHolesAgainstTheRealPrograms(t *testing.T) {
	rules := []string{"Bash(tar -t:*)", "Bash(tar:*)", "Bash(make -n:*)", "Bash(ls:*)", "Bash(git status:*)", "Bash(echo:*)",
		"Bash(set:*)", "Bash(trap:*)", "Bash(printf:*)", "Bash(xargs:*)", "Bash(python3 -m json.tool:*)"}
	pol := mustCompile(t, Settings{Permissions: Permissions{Allow: rules}})
	for _, tt := range []struct {
		cmd, proof, needs string
		allowed           bool
	}{
		{cmd: "tar -t -f x.tar -I ./tool.sh", proof: "RAN", needs: "tar"},
		{cmd: "tar -tf x.tar --checkpoint=1 --checkpoint-action=exec='touch RAN'", proof: "RAN", needs: "tar"},
		{cmd: "tar -xf x.tar --to-command='touch RAN'", proof: "RAN", needs: "tar"},
		{cmd: "make -n --eval='$(shell touch RAN)'", proof: "RAN", needs: "make"},
		{cmd: "make -n CC='$(shell touch RAN)'", proof: "RAN", needs: "make"},
		{cmd: "PATH=.:$PATH; ls", proof: "RAN"},
		{cmd: "./ls", proof: "RAN"},
		{cmd: "env -- PATH=./:/bin ls", proof: "RAN"},
		{cmd: "HOME=./h git status", proof: "RAN", needs: "git"},
		{cmd: "trap 'touch RAN' EXIT; echo hi", proof: "RAN"},
		{cmd: "PS4='$(touch RAN)'; set -x; echo hi", proof: "RAN"},
		{cmd: "python3 -m json.tool j.json out.txt", proof: "out.txt", needs: "python3"},
		{cmd: "echo RAN | xargs -eE touch echo hi", proof: "RAN"},
		{cmd: "echo RAN | xargs -iE touch echo E", proof: "RAN"},
		// Ordinary uses.
		{cmd: "tar -tf x.tar", allowed: true, needs: "tar"},
		{cmd: "tar tvf x.tar", allowed: true, needs: "tar"},
		{cmd: "make -n", allowed: true, needs: "make"},
		{cmd: "printf 'a\\0b' | xargs -0 echo", allowed: true},
		{cmd: "printf 'a\\0b' | xargs -0rn1 --max-procs=2 echo", allowed: true},
		{cmd: "python3 -m json.tool j.json", allowed: true, needs: "python3"},
		{cmd: "LANG=C ls", allowed: true},
	} {
		t.Run(tt.cmd, func(t *testing.T) {
			for _, need := range []string{"bash", tt.needs} {
				if _, err := exec.LookPath(need); need != "" && err != nil {
					// .ci/run installs git and make (tar is Debian's own);
					// python3 may be missing there.
					if os.Getenv("CI") != "" && need != "python3" {
						t.Fatalf("%s is needed: .ci/run installs it", need)
					}
					t.Skip("no " + need)
				}
			}
			dir := holesDir(t)
			cmd := exec.Command("bash", "-c", tt.cmd)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C"}
			out, err := cmd.CombinedOutput()
			if tt.allowed && err != nil {
				t.Fatalf("the ordinary command fails: %v\n%s", err, out)
			}
			if tt.proof != "" {
				if _, err := os.Stat(filepath.Join(dir, tt.proof)); err != nil {
					t.Fatalf("the oracle did not create %s: %v\n%s", tt.proof, err, out)
				}
			}
			if v := pol.Rules(bashCall(tt.cmd)); (v.Decision == Allow) != tt.allowed {
				t.Errorf("allowed = %v, want %v: %+v", v.Decision == Allow, tt.allowed, v)
			}
		})
	}
}

// holesDir is oracleDir with what the planted commands need: an archive,
// a makefile whose recipe uses $(CC), a file named ls that is no ls, a
// git configuration that runs a program, and a JSON file.
func holesDir(t *testing.T) string {
	t.Helper()
	dir := oracleDir(t)
	for name, content := range map[string]string{"Makefile": "all:\n\t$(CC) -v\n", "ls": "#!/bin/sh\ntouch RAN\n",
		"h/.gitconfig": "[core]\n\tfsmonitor = \"touch RAN\"\n", "j.json": "{\"a\": 1}\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := exec.LookPath("tar"); err == nil {
		if out, err := exec.Command("tar", "-C", dir, "-cf", filepath.Join(dir, "x.tar"), "f").CombinedOutput(); err != nil {
			t.Fatalf("tar: %v\n%s", err, out)
		}
	}
	return dir
}
