package approval

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The real programs are the oracle: in a throwaway directory each command
// first proves it runs a program (it creates RAN) or writes the file it
// names, then the decision under the allow rule people write for the
// program is checked: never allowed. Ordinary uses really work and stay
// allowed.
func TestProgramTableAgainstTheRealPrograms(t *testing.T) {
	rules := []string{"Bash(rg:*)", "Bash(sed:*)", "Bash(sed -n:*)", "Bash(awk:*)", "Bash(git diff:*)", "Bash(git log:*)",
		"Bash(find:*)", "Bash(echo:*)", "Bash(sort:*)", "Bash(grep:*)", "Bash(touch:*)", "Bash(fd:*)", "Bash(fdfind:*)",
		"Bash(tree:*)", "Bash(ag:*)", "Bash(go vet:*)", "Bash(go test:*)", "Bash(git branch:*)"}
	pol := mustCompile(t, Settings{Permissions: Permissions{Allow: rules}})
	for _, tt := range []struct {
		cmd     string
		proof   string // the file the command creates: RAN when it ran a program
		after   string // else a shell command that succeeds only if the command changed what it says
		allowed bool
		needs   string
	}{
		{cmd: "sed -n '1p; s/X/touch RAN/e' f", proof: "RAN", needs: "sed"},
		{cmd: "sed 's/X/Y/w out.txt' f", proof: "out.txt", needs: "sed"},
		{cmd: "sed -n 'w out.txt' f", proof: "out.txt", needs: "sed"},
		{cmd: "rg --pre=sh X run.sh", proof: "RAN", needs: "rg"},
		{cmd: "rg --pre sh X run.sh", proof: "RAN", needs: "rg"},
		{cmd: `awk 'BEGIN{system("touch RAN")}'`, proof: "RAN", needs: "awk"},
		{cmd: `awk 'BEGIN{print "x" | "sh"; close("sh")}' && true`, proof: "", needs: "awk"},
		{cmd: `awk 'BEGIN{"touch RAN" | getline x}'`, proof: "RAN", needs: "awk"},
		{cmd: `awk '{print > "out.txt"}' f`, proof: "out.txt", needs: "awk"},
		{cmd: "find . -maxdepth 0 -exec touch RAN \\;", proof: "RAN", needs: "find"},
		{cmd: "find . -maxdepth 0 -fprint out.txt", proof: "out.txt", needs: "find"},
		{cmd: "git diff --output=out.txt", proof: "out.txt", needs: "git"},
		{cmd: `GIT_EXTERNAL_DIFF='touch RAN #' git diff`, proof: "RAN", needs: "git"},
		{cmd: `git -c diff.external='touch RAN #' diff`, proof: "RAN", needs: "git"},
		{cmd: "git -c alias.x='!touch RAN' x", proof: "RAN", needs: "git"},
		{cmd: "fdfind -t f -x touch RAN", proof: "RAN", needs: "fdfind"},
		{cmd: "fdfind --exec-batch touch RAN", proof: "RAN", needs: "fdfind"},
		{cmd: "fdfind -X touch RAN", proof: "RAN", needs: "fdfind"},
		{cmd: "tree -o out.txt", proof: "out.txt", needs: "tree"},
		{cmd: "ag --pager='touch RAN' X f", proof: "RAN", needs: "ag"},
		{cmd: "go vet -vettool=$PWD/tool.sh ./...", proof: "RAN", needs: "go"},
		{cmd: "go test -exec $PWD/tool.sh ./...", proof: "RAN", needs: "go"},
		{cmd: "go test -toolexec $PWD/tool.sh ./...", proof: "RAN", needs: "go"},
		{cmd: "git branch -D extra", after: "! git rev-parse -q --verify refs/heads/extra", needs: "git"},
		{cmd: "git branch --dele extra", after: "! git rev-parse -q --verify refs/heads/extra", needs: "git"},
		{cmd: "git branch -m extra renamed", after: "git rev-parse -q --verify refs/heads/renamed", needs: "git"},
		{cmd: "git branch -u extra", after: "git rev-parse -q --verify '@{upstream}'", needs: "git"},
		{cmd: "git branch made", after: "git rev-parse -q --verify refs/heads/made", needs: "git"},
		{cmd: "git branch -f extra HEAD~0", after: "git rev-parse -q --verify refs/heads/extra", needs: "git"},
		// Ordinary uses.
		{cmd: "rg -n X .", allowed: true, needs: "rg"},
		{cmd: "sed -n 1,5p f", allowed: true, needs: "sed"},
		{cmd: "sed 's/[/]/x/' f", allowed: true, needs: "sed"},
		{cmd: "awk '{print $1}' f", allowed: true, needs: "awk"},
		{cmd: `awk 'NR==1 || /X|Y/ {n++} END {print n > "/dev/stderr"}' f`, allowed: true, needs: "awk"},
		{cmd: "git diff --stat", allowed: true, needs: "git"},
		{cmd: "git log --oneline -5", allowed: true, needs: "git"},
		{cmd: "find . -name '*.go'", allowed: true, needs: "find"},
		{cmd: "echo $((1+2))", allowed: true},
		{cmd: "sort -u f", allowed: true, needs: "sort"},
		{cmd: "fdfind -e sh", allowed: true, needs: "fdfind"},
		{cmd: "fdfind -H -t f run", allowed: true, needs: "fdfind"},
		{cmd: "tree -L 1 -a", allowed: true, needs: "tree"},
		{cmd: "ag -i x f", allowed: true, needs: "ag"},
		{cmd: "go vet ./...", allowed: true, needs: "go"},
		{cmd: "go test -count=1 -run TestX ./...", allowed: true, needs: "go"},
		{cmd: "git branch -a -vv", allowed: true, after: "git rev-parse -q --verify refs/heads/extra", needs: "git"},
		{cmd: "git branch --list 'e*'", allowed: true, after: "git rev-parse -q --verify refs/heads/extra", needs: "git"},
		{cmd: "git branch --contains HEAD", allowed: true, needs: "git"},
	} {
		t.Run(tt.cmd, func(t *testing.T) {
			if _, err := exec.LookPath("bash"); err != nil {
				t.Skip("no bash")
			}
			if tt.needs != "" {
				if _, err := exec.LookPath(tt.needs); err != nil {
					if os.Getenv("CI") != "" {
						t.Fatalf("%s is needed: .ci/run installs it", tt.needs)
					}
					t.Skip("no " + tt.needs)
				}
			}
			dir := oracleDir(t)
			cmd := exec.Command("bash", "-c", tt.cmd)
			cmd.Dir = dir
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C"}, goEnv(t)...)
			out, err := cmd.CombinedOutput()
			if tt.allowed && err != nil {
				t.Fatalf("the ordinary command fails: %v\n%s", err, out)
			}
			if tt.proof != "" {
				if _, err := os.Stat(filepath.Join(dir, tt.proof)); err != nil {
					t.Fatalf("the oracle did not create %s: %v\n%s", tt.proof, err, out)
				}
			}
			if tt.after != "" {
				check := exec.Command("bash", "-c", tt.after)
				check.Dir, check.Env = dir, cmd.Env
				if cout, err := check.CombinedOutput(); err != nil {
					t.Fatalf("after the command, %s fails (%v): the oracle did not do what the case says\n%s%s", tt.after, err, out, cout)
				}
			}
			v := pol.Rules(bashCall(tt.cmd))
			if got := v.Decision == Allow; got != tt.allowed {
				t.Errorf("allowed = %v, want %v: %+v", got, tt.allowed, v)
			}
		})
	}
}

// goEnv is what the go commands of the oracle need from the user's go: its
// build cache (warm) and toolchain, and no network.
func goEnv(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		return nil
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return nil
	}
	return []string{"GOCACHE=" + f[0], "GOMODCACHE=" + f[1], "GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS="}
}

// oracleDir is a git repository with one commit and one change, and the
// files the commands read, and a branch "extra": f (a line X), run.sh (touch RAN), tool.sh (the
// same, executable), and a Go module with one test.
func oracleDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{"f": "X a\nY b\n", "run.sh": "touch RAN\n", "tool.sh": "#!/bin/sh\ntouch RAN\n",
		"go.mod": "module m\n\ngo 1.21\n", "x_test.go": "package m\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n"} {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, "tool.sh") {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		return dir
	}
	script := "git init -q . && git add f && git -c user.name=t -c user.email=t@t commit -qm i && git branch extra && echo more >> f"
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git: %v\n%s", err, strings.TrimSpace(string(out)))
	}
	return dir
}
