package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/internal/gittest"
	"github.com/custos-dev/custos/protected"
	"github.com/custos-dev/custos/sandbox/gitdir"
	"github.com/custos-dev/custos/sandbox/mount"
	"github.com/custos-dev/custos/sandbox/pathguard"
	"github.com/custos-dev/custos/sandbox/protect"
	"github.com/custos-dev/custos/sandbox/sysview"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// runUnprotected runs script under bubblewrap with the sandbox's own profile
// minus the protected mounts (and without seccomp): the control that shows
// a refusal is the protection's doing, not the sandbox's in general.
func runUnprotected(t *testing.T, sb *bwrapSandbox, ws, script string) (int, string) {
	t.Helper()
	// The profile Run builds, without the protected mounts, the proxy,
	// masks, prlimit or seccomp.
	args := bwrapArgs(bwrapProfile{Workspace: ws, TmpSize: sb.cfg.TmpSizeBytes, System: sysview.Mounts(), Command: bash(script)})
	status, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer status.Close()
	passwd, group := sysview.Identity()
	pw, err := dataPipe(passwd)
	require.NoError(t, err)
	defer pw.Close()
	gr, err := dataPipe(group)
	require.NoError(t, err)
	defer gr.Close()
	env, err := buildEnv(Request{Workspace: ws, Argv: bash(script)}, sysview.Path, sbHome, sbTmp, "", nil)
	require.NoError(t, err)
	cmd := exec.Command(sb.bwrap, args...)
	cmd.Env, cmd.Dir = env, "/"
	cmd.ExtraFiles = []*os.File{status, pw, gr}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err)
	return 0, string(out)
}

// Attacks on one path, and how to tell they worked.
type attack struct {
	script string
	pwned  func(ws string) bool
}

func contains(ws, rel, s string) bool {
	b, err := os.ReadFile(filepath.Join(ws, rel))
	return err == nil && strings.Contains(string(b), s)
}

func exists(ws, rel string) bool {
	_, err := os.Lstat(filepath.Join(ws, rel))
	return err == nil
}

// appendTo changes an existing file.
func appendTo(rel string) attack {
	return attack{"echo pwned >> " + rel, func(ws string) bool { return contains(ws, rel, "pwned") }}
}

// create writes a file that does not exist yet.
func create(rel string) attack {
	return attack{"echo pwned > " + rel, func(ws string) bool { return contains(ws, rel, "pwned") }}
}

// addInto puts a new file into a directory, creating it if needed.
func addInto(rel string) attack {
	return attack{"mkdir -p " + rel + " && echo pwned > " + rel + "/pwned", func(ws string) bool { return exists(ws, rel+"/pwned") }}
}

// replaceFile moves a file away and writes a new one in its place.
func replaceFile(rel string) attack {
	return attack{"mv " + rel + " " + rel + ".old && echo pwned > " + rel, func(ws string) bool { return contains(ws, rel, "pwned") }}
}

// replaceDir moves a directory (or an ancestor of the target) away and
// creates target in a fresh copy.
func replaceDir(rel, target string) attack {
	return attack{"mv " + rel + " " + rel + ".old && mkdir -p " + filepath.Dir(target) + " && echo pwned > " + target,
		func(ws string) bool { return contains(ws, target, "pwned") }}
}

// TestBwrapProtectedPaths: every protected path in every git layout, and the
// other protected names, cannot be changed, replaced or created from a
// command inside the sandbox; the same command under the same profile
// without the protected mounts succeeds, which proves the cause.
func TestBwrapProtectedPaths(t *testing.T) {
	sbAny := newBwrap(t, Config{})
	sb := sbAny.(*bwrapSandbox)
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed to build the repository layouts")
	}

	repo := func(t *testing.T, ws string) { gittest.NewRepo(t, ws) }
	repoNoHooks := func(t *testing.T, ws string) {
		gittest.NewRepo(t, ws)
		require.NoError(t, os.RemoveAll(filepath.Join(ws, ".git", "hooks")))
	}
	// A linked worktree inside the workspace, with a per-worktree config.
	worktreeInside := func(t *testing.T, ws string) {
		gittest.NewRepo(t, ws)
		gittest.Run(t, ws, "config", "extensions.worktreeConfig", "true")
		gittest.Run(t, ws, "worktree", "add", "-q", "wt")
		gittest.Run(t, filepath.Join(ws, "wt"), "config", "--worktree", "custos.test", "1")
		require.FileExists(t, filepath.Join(ws, ".git", "worktrees", "wt", "config.worktree"))
	}
	// The workspace is itself a linked worktree of a repository elsewhere:
	// its .git is a pointer file.
	worktreeWorkspace := func(t *testing.T, ws string) {
		main := t.TempDir()
		gittest.NewRepo(t, main)
		require.NoError(t, os.Remove(ws))
		gittest.Run(t, main, "worktree", "add", "-q", ws)
		fi, err := os.Lstat(filepath.Join(ws, ".git"))
		require.NoError(t, err)
		require.True(t, fi.Mode().IsRegular(), ".git must be a pointer file")
	}
	// A submodule: sub/.git points into .git/modules/sub.
	submodule := func(t *testing.T, ws string) {
		other := t.TempDir()
		gittest.NewRepo(t, other)
		gittest.NewRepo(t, ws)
		gittest.Run(t, ws, "submodule", "add", "-q", other, "sub")
		gittest.Run(t, ws, "commit", "-qm", "add sub")
		require.DirExists(t, filepath.Join(ws, ".git", "modules", "sub", "hooks"))
	}
	// A repository nested in an ordinary directory of the workspace.
	nested := func(t *testing.T, ws string) { gittest.NewRepo(t, filepath.Join(ws, "vendor", "lib")) }
	// A bare repository in the workspace, as a test remote.
	bare := func(t *testing.T, ws string) {
		require.NoError(t, os.MkdirAll(filepath.Join(ws, "fixtures"), 0o755))
		gittest.Run(t, filepath.Join(ws, "fixtures"), "init", "-q", "--bare", "remote.git")
	}
	// core.hooksPath names a directory in the work tree, as husky sets it.
	huskyRepo := func(created bool) func(t *testing.T, ws string) {
		return func(t *testing.T, ws string) {
			gittest.NewRepo(t, ws)
			gittest.Run(t, ws, "config", "core.hooksPath", ".husky/_")
			if created {
				writeFile(t, filepath.Join(ws, ".husky", "_", "pre-commit"), "#!/bin/sh\n")
			}
		}
	}
	files := func(m map[string]string) func(t *testing.T, ws string) {
		return func(t *testing.T, ws string) {
			for rel, c := range m {
				writeFile(t, filepath.Join(ws, rel), c)
			}
		}
	}

	tests := []struct {
		name  string
		setup func(t *testing.T, ws string)
		attack
	}{
		{"repo: add a hook", repo, addInto(".git/hooks")},
		{"repo: change a hook", repo, appendTo(".git/hooks/pre-commit.sample")},
		{"repo: git config", repo, appendTo(".git/config")},
		{"repo: git config via git", repo, attack{"git config core.fsmonitor 'touch /tmp/pwned'",
			func(ws string) bool { return contains(ws, ".git/config", "fsmonitor") }}},
		{"repo: replace config", repo, replaceFile(".git/config")},
		{"repo: replace hooks", repo, replaceDir(".git/hooks", ".git/hooks/post-checkout")},
		{"repo: move .git away and init a new one", repo, attack{"mv .git .git-old && git init -q && echo pwned > .git/hooks/post-checkout",
			func(ws string) bool { return exists(ws, ".git/hooks/post-checkout") }}},
		{"repo without hooks: create hooks", repoNoHooks, addInto(".git/hooks")},
		{"repo: new config.worktree", repo, create(".git/config.worktree")},
		{"repo: new commondir", repo, create(".git/commondir")},
		{"repo: commondir to a repository made inside", repo, attack{
			"git init -q evil && echo pwned > evil/.git/hooks/post-checkout && echo evil/.git > .git/commondir",
			func(ws string) bool { return contains(ws, ".git/commondir", "evil") }}},
		{"submodule: new commondir", submodule, create(".git/modules/sub/commondir")},
		{"worktree inside: config.worktree", worktreeInside, appendTo(".git/worktrees/wt/config.worktree")},
		{"worktree inside: commondir", worktreeInside, appendTo(".git/worktrees/wt/commondir")},
		{"worktree inside: gitdir", worktreeInside, appendTo(".git/worktrees/wt/gitdir")},
		{"worktree inside: re-point its .git", worktreeInside, replaceFile("wt/.git")},
		{"worktree workspace: re-point .git", worktreeWorkspace, replaceFile(".git")},
		{"worktree workspace: change .git", worktreeWorkspace, appendTo(".git")},
		{"submodule: hooks", submodule, addInto(".git/modules/sub/hooks")},
		{"submodule: config", submodule, appendTo(".git/modules/sub/config")},
		{"submodule: re-point sub/.git", submodule, replaceFile("sub/.git")},
		{"submodule: replace its git dir", submodule, replaceDir(".git/modules/sub", ".git/modules/sub/hooks/post-checkout")},
		{"submodule: replace .git/modules", submodule, replaceDir(".git/modules", ".git/modules/sub/hooks/post-checkout")},
		{"submodule: .gitmodules", submodule, appendTo(".gitmodules")},
		{"nested repo: hooks", nested, addInto("vendor/lib/.git/hooks")},
		{"nested repo: config", nested, appendTo("vendor/lib/.git/config")},
		{"nested repo: replace its .git", nested, replaceDir("vendor/lib/.git", "vendor/lib/.git/config")},
		{"nested repo: move an ancestor away", nested, replaceDir("vendor", "vendor/lib/.git/hooks/post-checkout")},
		{"not a repo: git init and a hook", nil, attack{"git init -q && echo pwned > .git/hooks/post-checkout",
			func(ws string) bool { return exists(ws, ".git/hooks/post-checkout") }}},
		{"not a repo: git init", nil, attack{"git init -q", func(ws string) bool { return exists(ws, ".git/HEAD") }}},
		{"not a repo: hand-made .git", nil, addInto(".git/hooks")},
		{"not a repo: .git pointer file", nil, attack{"echo 'gitdir: evil' > .git", func(ws string) bool { return contains(ws, ".git", "evil") }}},
		{"core.hooksPath (husky): add a hook", huskyRepo(true), addInto(".husky/_")},
		{"core.hooksPath (husky): change a hook", huskyRepo(true), appendTo(".husky/_/pre-commit")},
		{"core.hooksPath (husky): replace the directory", huskyRepo(true), replaceDir(".husky", ".husky/_/pre-commit")},
		{"core.hooksPath (husky) not created yet", huskyRepo(false), addInto(".husky/_")},
		{"bare repository: add a hook", bare, addInto("fixtures/remote.git/hooks")},
		{"bare repository: config", bare, appendTo("fixtures/remote.git/config")},
		{"bare repository: replace it", bare, replaceDir("fixtures/remote.git", "fixtures/remote.git/hooks/pre-receive")},
		{"existing .vscode", files(map[string]string{".vscode/settings.json": "{}"}), addInto(".vscode")},
		{"existing .vscode replaced", files(map[string]string{".vscode/settings.json": "{}"}), replaceDir(".vscode", ".vscode/tasks.json")},
		{"existing .bashrc", files(map[string]string{".bashrc": "# rc\n"}), appendTo(".bashrc")},
		{"existing .mcp.json replaced", files(map[string]string{".mcp.json": "{}"}), replaceFile(".mcp.json")},
		{"existing .claude settings", files(map[string]string{".claude/settings.json": "{}"}), appendTo(".claude/settings.json")},
		{"existing .custos", files(map[string]string{".custos/settings.json": "{}"}), addInto(".custos")},
		{"existing .gitmodules", files(map[string]string{".gitmodules": ""}), appendTo(".gitmodules")},
		{"missing .vscode", nil, addInto(".vscode")},
		{"missing .idea", nil, addInto(".idea")},
		{"missing .claude", nil, addInto(".claude/commands")},
		{"missing .custos", nil, addInto(".custos")},
		{"missing .mcp.json", nil, create(".mcp.json")},
		// Names only a home directory's owner reads: placeholders when the
		// workspace is a home directory.
		{"home: missing .bashrc", files(map[string]string{".profile": "# p\n"}), create(".bashrc")},
		{"home: missing .zshrc", files(map[string]string{".bashrc": "# rc\n"}), create(".zshrc")},
		{"home: missing .gitconfig", files(map[string]string{".bashrc": "# rc\n"}), create(".gitconfig")},
		{"worker's home: missing .bash_profile", func(t *testing.T, ws string) { t.Setenv("HOME", ws) }, create(".bash_profile")},
		{"missing .gitmodules in a repo", repo, create(".gitmodules")},
		{"nested .vscode", files(map[string]string{"pkg/.vscode/tasks.json": "{}"}), addInto("pkg/.vscode")},
		{"nested .profile", files(map[string]string{"a/b/.profile": "# p\n"}), appendTo("a/b/.profile")},
		{"nested .vscode: move its parent away", files(map[string]string{"pkg/.vscode/tasks.json": "{}"}), replaceDir("pkg", "pkg/.vscode/tasks.json")},
	}
	for _, m := range mounters(t, sb) {
		sb := m.sb.(*bwrapSandbox)
		t.Run(m.name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					// Without the protected mounts the attack works.
					ctl := t.TempDir()
					if tc.setup != nil {
						tc.setup(t, ctl)
					}
					code, out := runUnprotected(t, sb, ctl, tc.script)
					require.Zero(t, code, "control run failed: %s", out)
					require.True(t, tc.pwned(ctl), "control run did not change the target: %s", out)

					// With them it fails, and the host sees no change.
					ws := t.TempDir()
					if tc.setup != nil {
						tc.setup(t, ws)
					}
					before := dirNames(t, ws)
					res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash(tc.script), Timeout: 30 * time.Second})
					require.NoError(t, err)
					assert.NotZero(t, res.ExitCode, "must fail: stdout=%q stderr=%q", res.Stdout, res.Stderr)
					assert.False(t, tc.pwned(ws), "the target changed on the host: stderr=%q", res.Stderr)
					for _, n := range dirNames(t, ws) {
						if !slices.Contains(before, n) {
							_, isProtected := protected.By(n)
							assert.False(t, isProtected, "placeholder %s left behind", n)
						}
					}
				})
			}
		})
	}
}

// Every protected name missing at the root gets a placeholder, the ones
// only a home directory's owner reads too: a project directory may be
// someone's home, or opened as one.
func TestProtectedPlanHomeNames(t *testing.T) {
	project := t.TempDir()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".profile"), "# p\n")
	holds := func(ws string) []string {
		var out []string
		for _, ph := range protect.NewPlan(ws, nil).Placeholders {
			out = append(out, filepath.Base(ph))
		}
		return out
	}
	assert.Subset(t, holds(project), []string{".git", ".vscode", ".claude", ".custos", ".mcp.json", ".gitmodules",
		".bashrc", ".profile", ".zshrc", ".zshenv", ".gitconfig", ".ripgreprc", ".claude.json"})
	assert.Subset(t, holds(home), []string{".git", ".vscode", ".bashrc", ".zshrc", ".gitconfig", ".claude.json"})
	assert.NotContains(t, holds(home), ".profile", "present: bound read-only, not replaced")
}

// node_modules is not searched: a package's stray .vscode must not pin it
// (npm ci removes node_modules).
func TestProtectedPlanSkipsNodeModules(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "node_modules", "pkg", ".vscode", "settings.json"), "{}")
	writeFile(t, filepath.Join(ws, "pkg", ".vscode", "settings.json"), "{}")
	args := strings.Join(mount.Args(protect.NewPlan(ws, nil).Mounts), " ")
	assert.NotContains(t, args, "node_modules")
	assert.Contains(t, args, filepath.Join(ws, "pkg", ".vscode"))
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// Git keeps working inside a protected repository: commits change the
// index, objects and refs, and the placeholders are invisible to git status.
func TestBwrapProtectedGitStillWorks(t *testing.T) {
	sb := newBwrap(t, Config{})
	ws := t.TempDir()
	gittest.NewRepo(t, ws)
	res, err := sb.Run(context.Background(), Request{Workspace: ws, Timeout: 30 * time.Second, Argv: bash(
		`echo more >> README && git add -A && git -c user.name=a -c user.email=a@b.c commit -qm inside && git status --porcelain && ls -a`)})
	require.NoError(t, err)
	require.Zero(t, res.ExitCode, "stderr=%q", res.Stderr)
	assert.NotContains(t, res.Stdout, "??", "placeholders must not show up as untracked files")
	assert.Contains(t, res.Stdout, ".vscode", "the placeholders are there inside")
	out, err := exec.Command("git", "-C", ws, "log", "--format=%s").Output()
	require.NoError(t, err)
	assert.Equal(t, "inside\ninit\n", string(out))
	assert.Equal(t, []string{".git", "README"}, dirNames(t, ws))
	for _, f := range []string{"commondir", "config.worktree"} {
		assert.NoFileExists(t, filepath.Join(ws, ".git", f), "placeholder files are removed")
	}
	assert.DirExists(t, filepath.Join(ws, ".git", "hooks"))
}

// A symbolic link at a protected path cannot be kept read-only (a mount
// would land on its target, and the link itself stays replaceable), so the
// command is refused with a message that names the path and the rule. The
// same workspace without the link runs. With the mount step the refusal
// comes once bubblewrap has started (the plan is made meanwhile): the
// command must not run there either.
func TestBwrapProtectedSymlinkRefused(t *testing.T) {
	sbs := mounters(t, newBwrap(t, Config{}))
	tests := []struct {
		name, link, target, wantRule string
		repo                         bool
	}{
		{name: ".custos to /root", link: ".custos", target: "/root", wantRule: protected.Custos.Name},
		{name: ".vscode inside", link: ".vscode", target: "conf", wantRule: protected.EditorConfig.Name},
		{name: "git hooks", link: ".git/hooks", target: "../githooks", wantRule: protected.GitHooks.Name, repo: true},
		{name: ".git itself", link: ".git", target: "elsewhere", wantRule: protected.GitPointer.Name},
		{name: "nested .bashrc", link: "home/.bashrc", target: "../rc", wantRule: protected.ShellStartup.Name},
	}
	for _, m := range sbs {
		for _, tc := range tests {
			t.Run(m.name+"/"+tc.name, func(t *testing.T) {
				ws := t.TempDir()
				if tc.repo {
					gittest.NewRepo(t, ws)
					require.NoError(t, os.RemoveAll(filepath.Join(ws, tc.link)))
				}
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, tc.link)), 0o755))
				ran := []string{"sh", "-c", "echo ran > ran.txt"}
				res, err := m.sb.Run(context.Background(), Request{Workspace: ws, Argv: ran})
				require.NoError(t, err)
				require.Zero(t, res.ExitCode, res.Stderr)
				require.FileExists(t, filepath.Join(ws, "ran.txt"))
				require.NoError(t, os.Remove(filepath.Join(ws, "ran.txt")))

				require.NoError(t, os.Symlink(tc.target, filepath.Join(ws, tc.link)))
				_, err = m.sb.Run(context.Background(), Request{Workspace: ws, Argv: ran})
				require.ErrorIs(t, err, protect.ErrUnprotectable)
				assert.Contains(t, err.Error(), tc.link)
				assert.Contains(t, err.Error(), tc.wantRule)
				assert.NoFileExists(t, filepath.Join(ws, "ran.txt"), "the refused command must not run")
			})
		}
	}
}

// A command can leave FIFOs where the plan reads git files (a .git pointer,
// the config and commondir it leads to). Reading them must not block the
// next Bash call or a Write: they are skipped, not waited on.
func TestProtectedPlanPlantedFIFOs(t *testing.T) {
	sb := newBwrap(t, Config{})
	ws := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "evil"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "sub"), 0o755))
	writeFile(t, filepath.Join(ws, "sub", ".git"), "gitdir: ../evil\n")
	for _, f := range []string{".git", "evil/config", "evil/commondir", "evil/config.worktree"} {
		require.NoError(t, syscall.Mkfifo(filepath.Join(ws, f), 0o644))
	}
	done := make(chan error, 1)
	go func() {
		res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: []string{"true"}, Timeout: 10 * time.Second})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
		}
		if err == nil {
			_, err = pathguard.Resolve(ws, "x.txt", true)
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("a planted FIFO blocked the sandbox")
	}
}

// A file a repository's config includes is protected as the config is:
// bound read-only where it exists, also when another included file names
// it or names the hooks directory; a missing one gets no placeholder (git
// refuses a directory there). An include through a symbolic link in the
// workspace, or config whose includes git cannot read, refuses the
// command (fail closed).
func TestProtectedPlanIncludes(t *testing.T) {
	ws := t.TempDir()
	gittest.NewRepo(t, ws)
	writeFile(t, filepath.Join(ws, "one.cfg"), "[include]\n\tpath = conf/two.cfg\n")
	writeFile(t, filepath.Join(ws, "conf", "two.cfg"), "[core]\n\thooksPath = .myhooks\n")
	gittest.Run(t, ws, "config", "--add", "include.path", "../one.cfg")
	gittest.Run(t, ws, "config", "--add", "includeIf.onbranch:x.path", "../missing.cfg")
	p := protect.NewPlan(ws, nil)
	require.NoError(t, p.Err)
	args := mount.Args(p.Mounts)
	joined := strings.Join(args, " ")
	for _, f := range []string{"one.cfg", "conf/two.cfg"} {
		assert.Contains(t, joined, "--ro-bind "+filepath.Join(ws, f)+" "+filepath.Join(ws, f))
	}
	assert.NotContains(t, joined, "missing.cfg")
	assert.Contains(t, p.Placeholders, filepath.Join(ws, ".myhooks"), "the included hooksPath is held")

	require.NoError(t, os.Symlink("conf/two.cfg", filepath.Join(ws, "link.cfg")))
	gittest.Run(t, ws, "config", "--add", "include.path", "../link.cfg")
	p = protect.NewPlan(ws, nil)
	require.ErrorIs(t, p.Err, protect.ErrUnprotectable)
	assert.Contains(t, p.Err.Error(), "link.cfg")

	gittest.Run(t, ws, "config", "--unset", "include.path", "link")
	writeFile(t, filepath.Join(ws, "one.cfg"), "[include\n\tpath = x\n")
	p = protect.NewPlan(ws, nil)
	require.ErrorIs(t, p.Err, gitdir.ErrIncludes)
}
