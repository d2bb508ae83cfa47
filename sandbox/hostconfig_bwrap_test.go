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

// guardOff is the sandbox without the post-command scan: the control.
func guardOff(sb *bwrapSandbox) *bwrapSandbox {
	off := *sb
	off.noHostGuard = true
	return &off
}

// TestBwrapHostConfigNeutralised: what a command plants for git on the
// host to run (a new repository's fsmonitor, hooks, a bare repository
// behind a .git file, a submodule's git directory made inside) runs on the
// host when nothing checks it (the control, through the same sandbox with
// the scan off), and does not after a guarded run, which names it.
func TestBwrapHostConfigNeutralised(t *testing.T) {
	sb := newBwrap(t, Config{}).(*bwrapSandbox)
	flagDir := t.TempDir()
	flag := filepath.Join(flagDir, "FLAG")
	touch := "touch " + flag
	upstream := func(t *testing.T, ws string) {
		// A repository the command can clone from inside, for submodules.
		gittest.NewRepo(t, filepath.Join(ws, "upstream"))
	}
	superproject := func(t *testing.T, ws string) {
		upstream(t, ws)
		gittest.NewRepo(t, ws)
		gittest.Run(t, ws, "submodule", "add", "-q", "./upstream", "sub")
		gittest.Run(t, ws, "commit", "-qm", "add sub")
		gittest.Run(t, ws, "submodule", "deinit", "-q", "-f", "sub") // no checkout
	}
	tests := []struct {
		name   string
		setup  func(t *testing.T, ws string)
		script string
		gitIn  string   // where the host runs git
		gitCmd []string // what it runs
		want   []string // paths HostConfig must name
	}{
		{name: "git init sub + core.fsmonitor",
			script: "git init -q sub && git -C sub config core.fsmonitor '" + touch + "'",
			gitIn:  "sub", gitCmd: []string{"status"}, want: []string{"sub/.git/config"}},
		{name: "deep new repository + fsmonitor in config.worktree",
			script: "git init -q a/b/c/d/e && git -C a/b/c/d/e config extensions.worktreeConfig true && git -C a/b/c/d/e config --worktree core.fsmonitor '" + touch + "'",
			gitIn:  "a/b/c/d/e", gitCmd: []string{"status"}, want: []string{"a/b/c/d/e/.git/config.worktree"}},
		{name: "bare repository + .git file pointing at it",
			script: "git init -q --bare .cache/evil.git && git -C .cache/evil.git config core.bare false && git -C .cache/evil.git config core.fsmonitor '" + touch + "' && mkdir -p src && echo 'gitdir: ../.cache/evil.git' > src/.git",
			gitIn:  "src", gitCmd: []string{"status"}, want: []string{".cache/evil.git/config"}},
		{name: "hook in a new repository",
			script: "git init -q lib/x && printf '#!/bin/sh\\n" + touch + "\\n' > lib/x/.git/hooks/pre-commit && chmod +x lib/x/.git/hooks/pre-commit",
			gitIn:  "lib/x", gitCmd: []string{"commit", "-q", "--allow-empty", "-m", "x"}, want: []string{"lib/x/.git/hooks/pre-commit"}},
		{name: "hooks directory named by core.hooksPath",
			script: "git init -q tool && mkdir tool/h && printf '#!/bin/sh\\n" + touch + "\\n' > tool/h/pre-commit && chmod +x tool/h/pre-commit && git -C tool config core.hooksPath h",
			gitIn:  "tool", gitCmd: []string{"commit", "-q", "--allow-empty", "-m", "x"}, want: []string{"tool/.git/config"}},
		{name: "repository without a config, a hook only",
			script: "mkdir -p cache/raw/objects cache/raw/refs/heads cache/raw/hooks && printf 'ref: refs/heads/main\\n' > cache/raw/HEAD && " +
				"printf 'x\\n' | git --git-dir=cache/raw hash-object -w --stdin >/dev/null && " +
				"printf '#!/bin/sh\\n" + touch + "\\n' > cache/raw/hooks/reference-transaction && chmod +x cache/raw/hooks/reference-transaction",
			gitIn: "cache/raw", gitCmd: []string{"update-ref", "refs/tags/y", "587be6b4c3f93f93c489c0111bba5596147a26cb"},
			want: []string{"cache/raw/hooks/reference-transaction"}},
		{name: "alias and include",
			script: "git init -q al && printf '[core]\\n\\tfsmonitor = " + touch + "\\n' > inc.cfg && git -C al config include.path ../../inc.cfg",
			gitIn:  "al", gitCmd: []string{"status"}, want: []string{"al/.git/config"}},
		{name: "node_modules package made a repository",
			script: "mkdir -p node_modules/pkg && git init -q node_modules/pkg && git -C node_modules/pkg config core.fsmonitor '" + touch + "'",
			gitIn:  "node_modules/pkg", gitCmd: []string{"status"}, want: []string{"node_modules/pkg/.git/config"}},
		{name: "submodule never checked out, git dir made inside",
			setup: func(t *testing.T, ws string) {
				superproject(t, ws)
				require.NoError(t, os.RemoveAll(filepath.Join(ws, ".git", "modules")))
				gittest.Run(t, ws, "submodule", "init", "-q")
			},
			script: "git -c protocol.file.allow=always submodule update -q sub && git -C sub config core.fsmonitor '" + touch + "'",
			gitIn:  "sub", gitCmd: []string{"status"}, want: []string{".git/modules/sub/config"}},
		{name: "deinit'ed submodule of a deep superproject",
			setup: func(t *testing.T, ws string) {
				deep := filepath.Join(ws, "w", "x", "y", "z")
				require.NoError(t, os.MkdirAll(deep, 0o755))
				superproject(t, deep)
			},
			script: "cd w/x/y/z && printf '#!/bin/sh\\n" + touch + "\\n' > .git/modules/sub/hooks/post-checkout && chmod +x .git/modules/sub/hooks/post-checkout",
			gitIn:  "w/x/y/z", gitCmd: []string{"-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init", "sub"},
			want: []string{"w/x/y/z/.git/modules/sub/hooks/post-checkout"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Control: the same command through the same sandbox, scan off:
			// git on the host runs what it planted.
			ctl := t.TempDir()
			if tc.setup != nil {
				tc.setup(t, ctl)
			}
			res := runIn(t, guardOff(sb), ctl, tc.script, 30*time.Second)
			require.Zero(t, res.ExitCode, "control: %s", res.Stderr)
			require.True(t, gittest.Runs(t, flag, filepath.Join(ctl, tc.gitIn), tc.gitCmd...), "control: the planted program must run on the host")

			ws := t.TempDir()
			if tc.setup != nil {
				tc.setup(t, ws)
			}
			res = runIn(t, sb, ws, tc.script, 30*time.Second)
			require.Zero(t, res.ExitCode, "stderr: %s", res.Stderr)
			assert.False(t, gittest.Runs(t, flag, filepath.Join(ws, tc.gitIn), tc.gitCmd...), "the planted program ran on the host")
			var paths []string
			for _, c := range res.HostConfig {
				paths = append(paths, c.Path)
			}
			assert.Subset(t, paths, tc.want, "changes: %v", res.HostConfig)
			assert.Contains(t, res.HostConfigNote(), tc.want[0])
			require.DirExists(t, res.HostConfigKept)
			assert.FileExists(t, filepath.Join(res.HostConfigKept, "manifest.json"))
			assert.NotContains(t, res.HostConfigKept, ws, "the quarantine is outside the workspace")
		})
	}
}

// Stripping keeps the repository working: a new repository whose config
// lost its fsmonitor still has its remote, branch and user settings, and
// git status in it works; the version the command left is kept.
func TestBwrapHostConfigStripKeepsRepository(t *testing.T) {
	sb := newBwrap(t, Config{})
	ws := t.TempDir()
	res := runIn(t, sb.(*bwrapSandbox), ws, `git init -q sub && cd sub && git config user.email m@x.invalid && git remote add origin https://example.invalid/r.git && git config core.pager 'sh -c id' && git config alias.st '!sh -c id' && git config diff.x.textconv 'sh -c id'`, 30*time.Second)
	require.Zero(t, res.ExitCode, res.Stderr)
	require.Len(t, res.HostConfig, 1, "%v", res.HostConfig)
	c := res.HostConfig[0]
	assert.Equal(t, "sub/.git/config", c.Path)
	for _, k := range []string{"core.pager", "alias.st", "diff.x.textconv"} {
		assert.Contains(t, c.Action, k)
	}
	cfg, err := os.ReadFile(filepath.Join(ws, "sub/.git/config"))
	require.NoError(t, err)
	assert.Contains(t, string(cfg), "m@x.invalid")
	assert.Contains(t, string(cfg), "example.invalid")
	assert.NotContains(t, string(cfg), "sh -c id")
	out, err := exec.Command("git", "-C", filepath.Join(ws, "sub"), "status", "--porcelain").CombinedOutput()
	assert.NoError(t, err, "%s", out)
	kept, err := os.ReadFile(filepath.Join(res.HostConfigKept, "sub/.git/config"))
	require.NoError(t, err)
	assert.Contains(t, string(kept), "sh -c id", "the command's version is kept for the user")
}

// Ordinary git work reports nothing: git init with sample hooks, commits,
// a clone, a linked worktree of the workspace's repository, branch
// tracking in a repository deeper than the protected paths reach.
func TestBwrapHostConfigOrdinaryGitQuiet(t *testing.T) {
	sb := newBwrap(t, Config{}).(*bwrapSandbox)
	ws := t.TempDir()
	gittest.NewRepo(t, ws)
	gittest.NewRepo(t, filepath.Join(ws, "a", "b", "c", "d"))
	res := runIn(t, sb, ws, `set -e
git init -q fresh && cd fresh && git -c user.name=a -c user.email=a@b.c commit -q --allow-empty -m one && cd ..
git clone -q ./ cloned
git worktree add -q deep/wt
git -C a/b/c/d config user.email deep@x.invalid
git -C a/b/c/d remote add up https://example.invalid/x.git`, 60*time.Second)
	require.Zero(t, res.ExitCode, res.Stderr)
	assert.Empty(t, res.HostConfig)
	assert.Empty(t, res.HostConfigNote())
}

// A repository the command did not create keeps what its owner put there
// (its own fsmonitor, its own hook), also when the command changes its
// config: only what the command added is stripped. Read by the real git.
func TestBwrapHostConfigPreexistingUntouched(t *testing.T) {
	sb := newBwrap(t, Config{}).(*bwrapSandbox)
	flag := filepath.Join(t.TempDir(), "USERFLAG")
	ws := t.TempDir()
	deep := filepath.Join(ws, "p", "q", "r", "s", "mine")
	gittest.NewRepo(t, deep)
	gittest.Run(t, deep, "config", "core.fsmonitor", "touch "+flag)
	hook := filepath.Join(deep, ".git", "hooks", "pre-commit")
	writeFile(t, hook, "#!/bin/sh\ntouch "+flag+"\n")
	require.NoError(t, os.Chmod(hook, 0o755))
	before, err := os.ReadFile(filepath.Join(deep, ".git", "config"))
	require.NoError(t, err)

	res := runIn(t, sb, ws, "echo hi > p/q/r/s/mine/file && git -C p/q/r/s/mine status --porcelain >/dev/null", 30*time.Second)
	require.Zero(t, res.ExitCode, res.Stderr)
	assert.Empty(t, res.HostConfig)
	after, err := os.ReadFile(filepath.Join(deep, ".git", "config"))
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
	assert.FileExists(t, hook)
	assert.True(t, gittest.Runs(t, flag, deep, "status"), "the owner's fsmonitor still runs")

	res = runIn(t, sb, ws, "cd p/q/r/s/mine && git config user.email x@y.invalid && git config core.pager 'sh -c id'", 30*time.Second)
	require.Zero(t, res.ExitCode, res.Stderr)
	require.Len(t, res.HostConfig, 1, "%v", res.HostConfig)
	assert.Equal(t, "stripped of core.pager", res.HostConfig[0].Action)
	after, err = os.ReadFile(filepath.Join(deep, ".git", "config"))
	require.NoError(t, err)
	assert.Contains(t, string(after), "fsmonitor = touch "+flag, "the owner's entry stays")
	assert.Contains(t, string(after), "x@y.invalid")
	assert.NotContains(t, string(after), "sh -c id")
	assert.FileExists(t, hook)
}

// However the command ends, the scan runs: killed by its timeout after
// planting, the repository is neutralised all the same.
func TestBwrapHostConfigAfterTimeout(t *testing.T) {
	sb := newBwrap(t, Config{KillGrace: 100 * time.Millisecond}).(*bwrapSandbox)
	ws := t.TempDir()
	res := runIn(t, sb, ws, "git init -q sub && git -C sub config core.fsmonitor 'sh -c id' && sleep 60", 2*time.Second)
	require.True(t, res.Killed)
	require.Len(t, res.HostConfig, 1)
	assert.Equal(t, "sub/.git/config", res.HostConfig[0].Path)
}

// Pointers custos cannot follow into the workspace are set aside; other
// version-control config a command made is set aside.
func TestBwrapHostConfigPointersAndOtherVCS(t *testing.T) {
	sb := newBwrap(t, Config{}).(*bwrapSandbox)
	ws := t.TempDir()
	res := runIn(t, sb, ws, `mkdir -p out hgrepo/.hg jjrepo/.jj/repo sym
echo 'gitdir: /root/elsewhere.git' > out/.git
printf '[hooks]\npre-status = touch /tmp/x\n' > hgrepo/.hg/hgrc
echo 'ui.pager = "sh"' > jjrepo/.jj/repo/config.toml
ln -s ../out sym/.git`, 30*time.Second)
	require.Zero(t, res.ExitCode, res.Stderr)
	got := map[string]string{}
	for _, c := range res.HostConfig {
		got[c.Path] = c.Action
	}
	assert.Equal(t, map[string]string{"out/.git": "set aside", "hgrepo/.hg/hgrc": "set aside",
		"jjrepo/.jj/repo/config.toml": "set aside", "sym/.git": "set aside"}, got)
	for p := range got {
		assert.NoFileExists(t, filepath.Join(ws, p))
		fi, err := os.Lstat(filepath.Join(res.HostConfigKept, p))
		if assert.NoError(t, err) && fi.Mode().IsRegular() {
			assert.Zero(t, fi.Mode().Perm()&0o111, "kept without execute bits")
		}
	}
}
