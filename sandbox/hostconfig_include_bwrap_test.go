package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/internal/gittest"
)

// hostCase is one way a command plants what git on the host runs: setup
// builds the workspace (repositories and the files their config
// includes, as their owner made them), script is the command, gitIn and
// gitCmd what the host then runs, want the paths the result must name
// (none: the command's write must have been refused instead).
type hostCase struct {
	name   string
	setup  func(t *testing.T, ws, flag string)
	script func(ws, flag string) string
	gitIn  string
	gitCmd []string
	want   []string
}

// fsmon is config that runs touch flag on the host's next git status.
func fsmon(flag string) string {
	return `printf '[core]\n\tfsmonitor = touch ` + flag + `\n'`
}

// deepRepo is a repository below the depth the protected paths reach, so
// that only the check after the command stands between it and the host.
const deepRepo = "a/b/c/d/e"

// includeCases are the include attacks: the file a repository's config
// includes, written by a command, in every way git finds one.
func includeCases() []hostCase {
	cfg := func(t *testing.T, dir string, kv ...string) {
		for i := 0; i < len(kv); i += 2 {
			gittest.Run(t, dir, "config", "--add", kv[i], kv[i+1])
		}
	}
	deep := func(t *testing.T, ws string) string {
		d := filepath.Join(ws, deepRepo)
		gittest.NewRepo(t, d)
		return d
	}
	return []hostCase{
		{name: "include of a work-tree file the root repository has",
			setup: func(t *testing.T, ws, _ string) {
				gittest.NewRepo(t, ws)
				writeFile(t, filepath.Join(ws, "shared.gitconfig"), "[user]\n\tname = me\n")
				cfg(t, ws, "include.path", "../shared.gitconfig")
			},
			script: func(_, flag string) string { return fsmon(flag) + " >> shared.gitconfig" },
			gitIn:  ".", gitCmd: []string{"status"}},
		{name: "includeIf gitdir: of a missing file, created",
			setup: func(t *testing.T, ws, _ string) {
				gittest.NewRepo(t, ws)
				cfg(t, ws, "includeIf.gitdir:**.path", "../local.gitconfig")
			},
			script: func(_, flag string) string { return fsmon(flag) + " > local.gitconfig" },
			gitIn:  ".", gitCmd: []string{"status"}, want: []string{"local.gitconfig"}},
		{name: "includeIf onbranch: in a deep repository, changed",
			setup: func(t *testing.T, ws, _ string) {
				d := deep(t, ws)
				writeFile(t, filepath.Join(d, "conf", "x.cfg"), "[user]\n\tname = me\n")
				cfg(t, d, "includeIf.onbranch:main.path", "../conf/x.cfg", "includeIf.onbranch:master.path", "../conf/x.cfg")
			},
			script: func(_, flag string) string { return fsmon(flag) + " >> " + deepRepo + "/conf/x.cfg" },
			gitIn:  deepRepo, gitCmd: []string{"status"}, want: []string{deepRepo + "/conf/x.cfg"}},
		{name: "nested include, relative to the including file",
			setup: func(t *testing.T, ws, _ string) {
				d := deep(t, ws)
				writeFile(t, filepath.Join(d, "inc", "one.cfg"), "[include]\n\tpath = sub/two.cfg\n")
				writeFile(t, filepath.Join(d, "inc", "sub", "two.cfg"), "[includeIf \"hasconfig:remote.*.url:https://x.invalid/**\"]\n\tpath = three.cfg\n[include]\n\tpath = three.cfg\n")
				cfg(t, d, "include.path", "../inc/one.cfg")
			},
			script: func(_, flag string) string { return fsmon(flag) + " > " + deepRepo + "/inc/sub/three.cfg" },
			gitIn:  deepRepo, gitCmd: []string{"status"}, want: []string{deepRepo + "/inc/sub/three.cfg"}},
		{name: "include through a symbolic link, its target written",
			setup: func(t *testing.T, ws, _ string) {
				d := deep(t, ws)
				writeFile(t, filepath.Join(ws, "real", "x.cfg"), "[user]\n\tname = me\n")
				require.NoError(t, os.Symlink("../../../../../real/x.cfg", filepath.Join(d, "link.cfg")))
				cfg(t, d, "include.path", "../link.cfg")
			},
			script: func(_, flag string) string { return fsmon(flag) + " >> " + deepRepo + "/link.cfg" },
			gitIn:  deepRepo, gitCmd: []string{"status"}, want: []string{"real/x.cfg"}},
		{name: "include through a symbolic link, the link re-pointed",
			setup: func(t *testing.T, ws, _ string) {
				d := deep(t, ws)
				writeFile(t, filepath.Join(d, "plain.cfg"), "[user]\n\tname = me\n")
				require.NoError(t, os.Symlink("plain.cfg", filepath.Join(d, "link.cfg")))
				cfg(t, d, "include.path", "../link.cfg")
			},
			script: func(_, flag string) string {
				return fsmon(flag) + " > evil.cfg && ln -sfn ../../../../../evil.cfg " + deepRepo + "/link.cfg"
			},
			gitIn: deepRepo, gitCmd: []string{"status"}, want: []string{deepRepo + "/link.cfg"}},
		{name: "absolute include path",
			setup: func(t *testing.T, ws, _ string) {
				cfg(t, deep(t, ws), "include.path", filepath.Join(ws, "abs.cfg"))
			},
			script: func(_, flag string) string { return fsmon(flag) + " > abs.cfg" },
			gitIn:  deepRepo, gitCmd: []string{"status"}, want: []string{"abs.cfg"}},
		{name: "~/ include of a file in a workspace that is the home directory",
			setup: func(t *testing.T, ws, _ string) {
				t.Setenv("HOME", ws)
				cfg(t, deep(t, ws), "include.path", "~/home.cfg")
			},
			script: func(_, flag string) string { return fsmon(flag) + " > home.cfg" },
			gitIn:  deepRepo, gitCmd: []string{"status"}, want: []string{"home.cfg"}},
		{name: "core.hooksPath in an included file",
			setup: func(t *testing.T, ws, _ string) {
				d := deep(t, ws)
				writeFile(t, filepath.Join(d, "hooks.cfg"), "[core]\n\thooksPath = myhooks\n")
				cfg(t, d, "include.path", "../hooks.cfg")
			},
			script: func(_, flag string) string {
				return "mkdir " + deepRepo + "/myhooks && printf '#!/bin/sh\\ntouch " + flag + "\\n' > " + deepRepo + "/myhooks/pre-commit && chmod +x " + deepRepo + "/myhooks/pre-commit"
			},
			gitIn: deepRepo, gitCmd: []string{"commit", "-q", "--allow-empty", "-m", "x"}, want: []string{deepRepo + "/myhooks/pre-commit"}},
		{name: "linked worktree of a repository outside, whose config includes a workspace file",
			setup: func(t *testing.T, ws, _ string) {
				out := filepath.Join(t.TempDir(), "outside")
				gittest.NewRepo(t, out)
				gittest.Run(t, out, "worktree", "add", "-q", filepath.Join(ws, "wt"))
				cfg(t, out, "include.path", filepath.Join(ws, "wt-extra.cfg"))
			},
			script: func(_, flag string) string { return fsmon(flag) + " > wt-extra.cfg" },
			gitIn:  "wt", gitCmd: []string{"status"}, want: []string{"wt-extra.cfg"}},
	}
}

// moduleCases are repositories made where the walk did not look: deep in
// a package in node_modules, in a vendor tree, in hidden directories.
func moduleCases() []hostCase {
	return []hostCase{
		{name: "repository deep in a package in node_modules",
			setup: func(t *testing.T, ws, _ string) {
				require.NoError(t, os.MkdirAll(filepath.Join(ws, "node_modules", "pkg", "lib"), 0o755))
			},
			script: func(_, flag string) string {
				return "git init -q node_modules/pkg/lib/deep && git -C node_modules/pkg/lib/deep config core.fsmonitor 'touch " + flag + "'"
			},
			gitIn: "node_modules/pkg/lib/deep", gitCmd: []string{"status"}, want: []string{"node_modules/pkg/lib/deep/.git/config"}},
		{name: "hook in a scoped package's nested node_modules fixture",
			script: func(_, flag string) string {
				r := "node_modules/@s/p/node_modules/q/test/fx"
				return "mkdir -p " + r + " && git init -q " + r + " && printf '#!/bin/sh\\ntouch " + flag + "\\n' > " + r + "/.git/hooks/pre-commit && chmod +x " + r + "/.git/hooks/pre-commit"
			},
			gitIn: "node_modules/@s/p/node_modules/q/test/fx", gitCmd: []string{"commit", "-q", "--allow-empty", "-m", "x"},
			want: []string{"node_modules/@s/p/node_modules/q/test/fx/.git/hooks/pre-commit"}},
		{name: "bare repository and pointer in node_modules",
			script: func(_, flag string) string {
				return "mkdir -p node_modules/x/src && git init -q --bare node_modules/x/.cache/e.git && git -C node_modules/x/.cache/e.git config core.bare false && " +
					"git -C node_modules/x/.cache/e.git config core.fsmonitor 'touch " + flag + "' && echo 'gitdir: ../.cache/e.git' > node_modules/x/src/.git"
			},
			gitIn: "node_modules/x/src", gitCmd: []string{"status"}, want: []string{"node_modules/x/.cache/e.git/config"}},
	}
}

// TestBwrapHostConfigIncludes: a file a repository's config includes,
// and a repository made where the walk does not go, planted by a command
// with what git on the host runs: the same bytes written on the host run
// there (the control), and after the sandboxed command, with the overlay
// and without, git on the host runs nothing: the write was refused, or
// the check names and neutralises it.
func TestBwrapHostConfigIncludes(t *testing.T) {
	sb := newBwrap(t, Config{}).(*bwrapSandbox)
	direct := *sb
	direct.overlay = false
	t.Setenv("HOME", t.TempDir()) // git on the host and the worker alike
	cases := append(includeCases(), moduleCases()...)
	for _, mode := range []struct {
		name string
		sb   *bwrapSandbox
	}{{"overlay", sb}, {"direct", &direct}} {
		for _, tc := range cases {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				flag := filepath.Join(t.TempDir(), "FLAG")
				ctl := t.TempDir()
				if tc.setup != nil {
					tc.setup(t, ctl, flag)
				}
				out, err := exec.Command("sh", "-c", "cd "+ctl+" && "+tc.script(ctl, flag)).CombinedOutput()
				require.NoError(t, err, "control: %s", out)
				require.True(t, gittest.Runs(t, flag, filepath.Join(ctl, tc.gitIn), tc.gitCmd...), "control: the planted program must run on the host")

				ws := t.TempDir()
				if tc.setup != nil {
					tc.setup(t, ws, flag)
				}
				res := runIn(t, mode.sb, ws, tc.script(ws, flag), 30*time.Second)
				assert.False(t, gittest.Runs(t, flag, filepath.Join(ws, tc.gitIn), tc.gitCmd...), "the planted program ran on the host; result: %+v", res)
				if len(tc.want) == 0 {
					assert.NotZero(t, res.ExitCode, "the write must be refused: %s", res.Stderr)
					return
				}
				require.Zero(t, res.ExitCode, "stderr: %s", res.Stderr)
				var paths []string
				for _, c := range res.HostConfig {
					paths = append(paths, c.Path)
				}
				assert.Subset(t, paths, tc.want, "changes: %v", res.HostConfig)
			})
		}
	}
}
