package hostguard

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/sandbox/hostfs"
)

func TestGitKeyInert(t *testing.T) {
	for _, k := range []string{"core.repositoryformatversion", "core.bare", "core.worktree", "user.name",
		"remote.origin.url", "remote.my.dotted.name.fetch", "branch.main.merge", "submodule.lib/x.url",
		"color.diff.meta", "extensions.worktreeconfig", "Core.FileMode"} {
		assert.True(t, gitKeyInert(k), k)
	}
	for _, k := range []string{"core.fsmonitor", "core.pager", "core.editor", "core.sshcommand", "core.hookspath",
		"core.askpass", "core.gitproxy", "core.alternaterefscommand", "pager.log", "diff.external", "diff.x.textconv", "diff.x.command",
		"merge.x.driver", "filter.x.clean", "filter.x.process", "credential.helper", "credential.https://x.helper",
		"alias.st", "sequence.editor", "include.path", "includeif.gitdir:/x.path", "url.ext::sh.insteadof",
		"protocol.ext.allow", "remote.origin.uploadpack", "remote.origin.receivepack", "submodule.x.update",
		"gpg.program", "uploadpack.packobjectshook", "core", "nodot"} {
		assert.False(t, gitKeyInert(k), k)
	}
}

// Git's own reading decides what a config file holds: spellings a
// hand-written parser might miss are found because git itself lists them.
func TestGitConfigActiveEntriesAsGitReadsThem(t *testing.T) {
	git, ok := findHostGit()
	if !ok {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	for name, cfg := range map[string]string{
		"continuation":      "[core]\n\tbare = false \\\n\n\tfsmonitor = touch x\n",
		"old subsection":    "[diff.x]\n\ttextconv = sh\n",
		"section on a line": "[core] fsmonitor = sh\n",
		"case":              "[CORE]\n\tFSMonitor = sh\n",
		"quoted":            "[core]\n\tpager = \"sh -c 'id'\" ; comment\n",
		"bare key":          "[alias]\n\tst\n",
		"include":           "[include]\n\tpath = /tmp/elsewhere\n",
	} {
		es, err := git.activeEntries(dir, []byte(cfg), nil, false)
		require.NoError(t, err, name)
		assert.NotEmpty(t, es, "%s: git reads an active entry in %q", name, cfg)
	}
	es, err := git.activeEntries(dir, []byte("[core]\n\tbare = false\n[user]\n\tname = x\n"), nil, false)
	require.NoError(t, err)
	assert.Empty(t, es)
	_, err = git.activeEntries(dir, []byte("[core\n\tfsmonitor = sh\n"), nil, false)
	assert.Error(t, err, "git refuses a broken file; custos sets it aside")
	old := []byte("[core]\n\tpager = less\n")
	es, err = git.activeEntries(dir, []byte("[core]\n\tpager = less\n\tpager = sh\n"), old, true)
	require.NoError(t, err)
	assert.Equal(t, []gitEntry{{key: "core.pager", value: "sh", hasValue: true}}, es, "only what was added")
}

// A workspace larger than the budget is checked as far as the budget goes
// and says so; what the snapshot never looked at is not touched.
func TestHostConfigBudget(t *testing.T) {
	ws := t.TempDir()
	for i := range 50 {
		putFile(t, filepath.Join(ws, fmt.Sprintf("d%02d", i), "f"), "x")
	}
	deep := filepath.Join(ws, "d49", "repo", ".git")
	putFile(t, filepath.Join(deep, "HEAD"), "ref: refs/heads/main\n")
	putFile(t, filepath.Join(deep, "config"), "[core]\n\tfsmonitor = sh\n")
	g := Settings{ScanEntries: 20, QuarantineDir: t.TempDir()}.Guard(ws, nil)
	require.True(t, g.before.truncated)
	putFile(t, filepath.Join(deep, "hooks", "pre-commit"), "#!/bin/sh\n")
	var res Report
	g.Finish(&res)
	assert.Empty(t, res.HostConfig)
	assert.Contains(t, res.HostConfigUnchecked, "more than 20 directory entries")
	assert.Contains(t, res.HostConfigNote(), "checked only")
	assert.FileExists(t, filepath.Join(deep, "config"))
	assert.FileExists(t, filepath.Join(deep, "hooks", "pre-commit"))
}

// The snapshot looks into node_modules only at package level.
func TestHostSnapshotNodeModulesPackages(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{"node_modules/a/.git", "node_modules/@s/b/.git", "node_modules/a/node_modules/c/.git", "node_modules/a/lib/deep/.git", "src/x/y/z/w/.git"} {
		putFile(t, filepath.Join(ws, d, "config"), "")
	}
	s := takeSnapshot(ws, snapOpts{})
	for _, d := range []string{"node_modules/a/.git", "node_modules/@s/b/.git", "node_modules/a/node_modules/c/.git", "src/x/y/z/w/.git"} {
		assert.True(t, s.gitdirs[d], d)
	}
	assert.False(t, s.gitdirs["node_modules/a/lib/deep/.git"], "inside a package: not read")
}

// BenchmarkHostConfigScan is the cost the scan adds to every Bash call: a
// snapshot before and a scan after, on a 20,000-file workspace (2,000
// directories of 10 files, three repositories, a node_modules of 200
// packages of 100 files counted on top).
func BenchmarkHostConfigScan(b *testing.B) {
	ws := b.TempDir()
	mk := func(p, c string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	files := 0
	for d := range 2000 {
		dir := filepath.Join(ws, fmt.Sprintf("pkg%02d", d/100), fmt.Sprintf("m%02d", d/10%10), fmt.Sprintf("d%d", d%10))
		for f := range 10 {
			mk(filepath.Join(dir, fmt.Sprintf("f%d.go", f)), "package x\n")
			files++
		}
	}
	for _, r := range []string{".", "pkg03/m01", "pkg07/m02/d3"} {
		g := filepath.Join(ws, r, ".git")
		mk(filepath.Join(g, "HEAD"), "ref: refs/heads/main\n")
		mk(filepath.Join(g, "config"), "[core]\n\tbare = false\n")
		for _, h := range []string{"pre-commit.sample", "pre-push.sample", "update.sample"} {
			mk(filepath.Join(g, "hooks", h), "#!/bin/sh\n")
		}
		mk(filepath.Join(g, "objects", "info", "x"), "")
		mk(filepath.Join(g, "refs", "heads", "main"), "0\n")
	}
	for p := range 200 {
		for f := range 100 {
			mk(filepath.Join(ws, "node_modules", fmt.Sprintf("p%d", p), "lib", fmt.Sprintf("f%d.js", f)), "x\n")
		}
	}
	b.Logf("%d files outside node_modules, 20000 inside", files)
	cfg := Settings{QuarantineDir: b.TempDir()}
	// Listings are reused only for directories unchanged for a second.
	old := time.Now().Add(-time.Hour)
	_ = filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chtimes(p, old, old)
		}
		return nil
	})
	time.Sleep(hostfs.RacyWindow + 100*time.Millisecond) // the ctimes age too
	for _, mode := range []struct {
		name     string
		listings *hostfs.HostListings
	}{{"first", nil}, {"again", &hostfs.HostListings{}}} {
		b.Run(mode.name, func(b *testing.B) {
			for b.Loop() {
				g := cfg.Guard(ws, mode.listings)
				var res Report
				g.Finish(&res)
				if len(res.HostConfig) > 0 || res.HostConfigUnchecked != "" {
					b.Fatalf("unexpected: %+v", res)
				}
			}
		})
	}
}

// deadPID is the PID of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

// interrupt makes g's snapshot file look like one of a process that died
// mid-command: its finish never runs.
func interrupt(t *testing.T, g *Guard) {
	t.Helper()
	require.NotNil(t, g.pending, "the snapshot is on disk while the command runs")
	data, err := os.ReadFile(g.pending.Path())
	require.NoError(t, err)
	var p pendingGuard
	require.NoError(t, json.Unmarshal(data, &p))
	p.PID = deadPID(t)
	data, err = json.Marshal(p)
	require.NoError(t, err)
	// The file as the dead process left it: its name says whose it was.
	dir := filepath.Dir(g.pending.Path())
	require.NoError(t, os.Remove(g.pending.Path()))
	require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d-%s-%s.json", hostfs.WorkspaceKey(p.WS), p.PID, p.Start, hostfs.RandHex())), data, 0o600))
}

// pendingLeft are the snapshot files in dir that still hold a snapshot
// (an emptied one waits for this process's next command).
func pendingLeft(t *testing.T, dir string) []string {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Size() > 0 {
			out = append(out, e.Name())
		}
	}
	return out
}

// A command cut off by a worker crash never reaches its guard's finish;
// what it planted is neutralised by the next command in the workspace,
// which says so, or by the next worker to start, which keeps it in the
// quarantine with its manifest.
func TestHostConfigOfAnInterruptedCommand(t *testing.T) {
	for _, atStart := range []bool{false, true} {
		t.Run(fmt.Sprintf("at worker start %v", atStart), func(t *testing.T) {
			ws := t.TempDir()
			putFile(t, filepath.Join(ws, "README"), "x")
			cfg := Settings{QuarantineDir: filepath.Join(t.TempDir(), "quarantine")}
			g := cfg.Guard(ws, nil)
			// The command plants a repository with a hook, then its worker dies.
			hook := filepath.Join(ws, "sub", ".git", "hooks", "pre-commit")
			putFile(t, filepath.Join(ws, "sub", ".git", "HEAD"), "ref: refs/heads/main\n")
			putFile(t, hook, "#!/bin/sh\nid > /tmp/pwned\n")
			interrupt(t, g)

			if atStart {
				cfg.RecoverHostConfig(nil)
				assert.NoFileExists(t, hook, "set aside before any command runs")
			}
			var res Report
			cfg.Guard(ws, nil).Finish(&res)
			assert.NoFileExists(t, hook, "the hook is set aside")
			assert.Empty(t, pendingLeft(t, cfg.pendingDir()), "no snapshot is left once finished")
			if atStart {
				assert.Empty(t, res.HostConfig, "done at start already")
				runs, err := os.ReadDir(cfg.QuarantineDir)
				require.NoError(t, err)
				require.Len(t, runs, 1)
				manifest, err := os.ReadFile(filepath.Join(cfg.QuarantineDir, runs[0].Name(), "manifest.json"))
				require.NoError(t, err)
				assert.Contains(t, string(manifest), "sub/.git/hooks/pre-commit")
				return
			}
			require.Len(t, res.HostConfig, 1, "%v", res.HostConfig)
			assert.Equal(t, "sub/.git/hooks/pre-commit", res.HostConfig[0].Path)
			assert.Contains(t, res.HostConfig[0].Action, "left by an earlier command that was interrupted")
			assert.Contains(t, res.HostConfigNote(), "sub/.git/hooks/pre-commit")
			assert.NotEmpty(t, res.HostConfigKept)
		})
	}
}

// A snapshot of a command still running in another process is not taken
// for an interrupted one.
func TestHostConfigOfARunningCommandIsLeftToIt(t *testing.T) {
	ws := t.TempDir()
	cfg := Settings{QuarantineDir: filepath.Join(t.TempDir(), "quarantine")}
	g := cfg.Guard(ws, nil) // this process: alive
	hook := filepath.Join(ws, "sub", ".git", "hooks", "post-checkout")
	putFile(t, filepath.Join(ws, "sub", ".git", "HEAD"), "ref: refs/heads/main\n")
	putFile(t, hook, "#!/bin/sh\n")
	cfg.RecoverHostConfig(nil)
	assert.Equal(t, []string{filepath.Base(g.pending.Path())}, pendingLeft(t, cfg.pendingDir()), "a live command's snapshot stays")
	var res Report
	g.Finish(&res)
	assert.NoFileExists(t, hook, "its own finish neutralises it")
	assert.Empty(t, pendingLeft(t, cfg.pendingDir()))
}

// A process's snapshot file is reused from one command to the next, and
// an emptied one left by a process that is gone is removed.
func TestHostConfigSnapshotFilesAreReused(t *testing.T) {
	ws := t.TempDir()
	cfg := Settings{QuarantineDir: filepath.Join(t.TempDir(), "quarantine")}
	g := cfg.Guard(ws, nil)
	first := g.pending.Path()
	g.Finish(&Report{})
	g = cfg.Guard(ws, nil)
	assert.Equal(t, first, g.pending.Path(), "the same file, rewritten")
	// Two commands at once in the workspace have a file each.
	g2 := cfg.Guard(ws, nil)
	assert.NotEqual(t, first, g2.pending.Path())
	g2.Finish(&Report{})
	g.Finish(&Report{})

	// An emptied file of a process that is gone goes at the next command.
	gone := filepath.Join(cfg.pendingDir(), fmt.Sprintf("%s-%d-%s-%s.json", hostfs.WorkspaceKey(ws), deadPID(t), "1", hostfs.RandHex()))
	putFile(t, gone, "")
	cfg.Guard(ws, nil).Finish(&Report{})
	assert.NoFileExists(t, gone)
	// One whose file was removed meanwhile gets a new one.
	require.NoError(t, os.Remove(first))
	g = cfg.Guard(ws, nil)
	assert.FileExists(t, g.pending.Path())
	g.Finish(&Report{})
}

// A directory's listing is reused while its identity is unchanged: one
// older than the racy window across walks (done hands it on), one too
// recent only among the walks before a command (never after done); an
// entry added is seen at once. A reused listing is the very slice read.
func TestDirListingsReuse(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), nil, 0o644))
	same := func(a, b []hostfs.DirEnt) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }
	list := func(l *hostfs.DirListings) []hostfs.DirEnt {
		ents, err := l.List(".", dir)
		require.NoError(t, err)
		return ents
	}

	l := hostfs.NewDirListings()
	first := list(l)
	assert.True(t, same(first, list(l)), "too recent, but reused before the command")
	cached, ok := l.Cached(".", dir)
	assert.True(t, ok && same(first, cached))
	after := l.Done()
	assert.False(t, same(first, list(after)), "too recent: read again after the command")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "b"), nil, 0o644))
	ents := list(after)
	assert.Len(t, ents, 2, "an entry added is seen")

	time.Sleep(hostfs.RacyWindow + 100*time.Millisecond)
	l = hostfs.NewDirListings()
	old := list(l)
	assert.True(t, same(old, list(l.Done())), "old enough: reused by the next walk")
}

// putFile writes content at path, making the directories on the way.
func putFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}
