package shell

import (
	"reflect"
	"slices"
	"testing"

	"github.com/custos-dev/custos/approval/programs"
)

// testEnv is where the tests' command lines run.
var testEnv = Env{Workspace: "/home/user/project", Home: "/home/user"}

func TestAnalyzeNormalisation(t *testing.T) {
	tests := []struct {
		cmd  string
		want []string // Text of each simple command, in order
	}{
		{"rm -rf x", []string{"rm -f -r x"}},
		{"rm -fr x", []string{"rm -f -r x"}},
		{"rm -r -f x", []string{"rm -f -r x"}},
		{"rm -R --force x", []string{"rm -f -r x"}},
		{"rm --recursive --force x/", []string{"rm -f -r x"}},
		{"rm x -rf", []string{"rm -f -r x"}},
		{"rm -- -rf", []string{"rm -rf"}},
		{"cp -t /tmp/ a b", []string{"cp --t=/tmp a b"}}, // valued flags keep their value
		{"ls /home/./u/../", []string{"ls /home"}},
		{"ls //etc///", []string{"ls /etc"}},
		{"ls ~ $HOME ${HOME}/x", []string{"ls /home/user /home/user /home/user/x"}},
		{"ls '~'", []string{"ls ~"}},
		{"curl http://a//b", []string{"curl http://a//b"}},
		{"sudo -u root env A=1 ls", []string{"sudo", "ls"}},
		{"bash -c 'a; b'", []string{"bash -c 'a; b'", "a", "b"}},
	}
	for _, tt := range tests {
		a := Analyze(tt.cmd, testEnv)
		var got []string
		for _, c := range a.Commands {
			got = append(got, c.Text)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Analyze(%q) texts = %q, want %q", tt.cmd, got, tt.want)
		}
	}
}

// The variables given to a command reach the scripts it runs, and the
// findings say where they were set.
func TestShellStateReachesNestedScripts(t *testing.T) {
	a := Analyze("GIT_PAGER=x bash -c 'git log'", testEnv)
	i := slices.IndexFunc(a.Commands, func(c SimpleCommand) bool { return c.Text == "git log" })
	if i < 0 {
		t.Fatalf("no git log in %+v", a.Commands)
	}
	if !slices.ContainsFunc(a.Commands[i].Findings, func(f programs.Finding) bool { return f.Option == "GIT_PAGER" }) {
		t.Errorf("git log run by bash -c does not see GIT_PAGER: %+v", a.Commands[i].Findings)
	}
}
