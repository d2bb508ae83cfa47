package protect

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/custos-dev/custos/protected"
	"github.com/custos-dev/custos/sandbox/gitdir"
	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/mount"
)

// Git directories in every layout, for the protected plan: which of their
// entries are bound read-only, and which missing ones get a placeholder.

// gitdirEntries are the entries of a git directory that name code git runs
// or where git finds it. hooks is handled apart (it gets a placeholder).
var gitdirEntries = append(slices.Clone(gitdir.ConfigFiles), gitdir.CommonDir, gitdir.BackPointer)

// gitdirFileHolders stand in for files git reads when they are missing, with
// content that keeps git working: an empty config.worktree (read when
// extensions.worktreeConfig is on) and a commondir naming the git directory
// itself. A new commondir pointing at a repository the command built would
// otherwise hand git on the host that repository's hooks and config. Git
// fails on an empty or directory commondir, so these are real files, written
// on the host before the run (a crash leaves only harmless content).
var gitdirFileHolders = []struct{ name, content string }{
	{"config.worktree", ""},
	{"commondir", ".\n"},
}

// fileHolder is a placeholder file custos writes before the run.
type fileHolder struct{ path, content string }

// gitEntry handles a .git entry: a repository directory, or a pointer file.
func (p *Plan) gitEntry(path string, typ fs.FileMode) {
	switch {
	case typ&fs.ModeSymlink != 0:
		p.fail(path, protected.GitPointer)
	case typ.IsDir():
		p.gitDir(path, true, 0)
		p.hooksPath(path, filepath.Dir(path))
	default:
		// A pointer file: keep it from being re-pointed, and protect what it
		// points to when that is inside the workspace (a submodule's
		// .git/modules/<name>, usually found by the walk anyway), and the
		// hooks directory its config names, wherever the config is.
		p.readOnly(path, typ, protected.GitPointer)
		if target, ok := p.gitdirTarget(path); ok {
			p.gitDir(target, false, 0)
		}
		if target, ok := gitdir.ReadPointer(path); ok {
			p.hooksPath(target, filepath.Dir(path))
			p.includes(gitdir.RepoConfigs(target)) // wherever the repository is
		}
	}
}

// gitdirTarget returns a pointer file's target when it is a directory
// inside the workspace (not the workspace itself).
func (p *Plan) gitdirTarget(file string) (string, bool) {
	real, ok := gitdir.ReadPointer(file)
	if !ok {
		return "", false
	}
	if rel, in := hostfs.Within(p.ws, real); !in || rel == "." {
		return "", false
	}
	return real, true
}

// gitDir protects one git directory: pinned in place, hooks and the config
// and pointer files read-only, a missing hooks directory replaced by a
// read-only placeholder when hooksPlaceholder is set, and the git
// directories of submodules and linked worktrees inside it in turn.
func (p *Plan) gitDir(g string, hooksPlaceholder bool, depth int) {
	hooks := filepath.Join(g, gitdir.HooksDir)
	if seen, ok := p.gitdirs[g]; ok {
		// Reached twice (walk and pointer file). A submodule's git
		// directory reached first through a pointer file, then as one of
		// .git/modules, gets the placeholder the second time.
		if hooksPlaceholder && !seen {
			p.gitdirs[g] = true
			if _, err := os.Lstat(hooks); errors.Is(err, fs.ErrNotExist) {
				p.placeholder(hooks)
			}
		}
		return
	}
	p.gitdirs[g] = hooksPlaceholder
	p.pinParents(filepath.Join(g, "x"))
	switch fi, err := os.Lstat(hooks); {
	case err == nil:
		p.readOnly(hooks, fi.Mode().Type(), protected.GitHooks)
	case errors.Is(err, fs.ErrNotExist) && hooksPlaceholder:
		p.placeholder(hooks)
	}
	for _, n := range gitdirEntries {
		f := filepath.Join(g, n)
		if fi, err := os.Lstat(f); err == nil {
			rule := protected.GitConfig
			if n == gitdir.CommonDir || n == gitdir.BackPointer {
				rule = protected.GitPointer
			}
			p.readOnly(f, fi.Mode().Type(), rule)
		}
	}
	for _, h := range gitdirFileHolders {
		f := filepath.Join(g, h.name)
		if _, err := os.Lstat(f); errors.Is(err, fs.ErrNotExist) {
			p.pinParents(f)
			p.Mounts = append(p.Mounts, mount.Mount{Kind: mount.ROBind, Src: f, Dst: f})
			p.files = append(p.files, fileHolder{f, h.content})
		}
	}
	p.hooksPath(g, "")
	p.includes(gitdir.RepoConfigs(g))
	// A submodule's missing hooks get a placeholder; a linked worktree's
	// git directory has none of its own (git runs the common one's).
	gitdir.Nested("", g, depth, nil, func(sub string, worktree bool, depth int) {
		p.gitDir(sub, !worktree, depth)
	})
}

// hooksPath protects the directories core.hooksPath names in the config
// of the git directory g (and in the files it includes), when they lie in
// the workspace: read-only when present, a read-only placeholder when
// missing (so a command cannot create them with hooks in them).
func (p *Plan) hooksPath(g, worktreeHint string) {
	hps, err := gitdir.HooksDirsOf(g, worktreeHint, p.home)
	if err != nil {
		p.failWith(err)
	}
	for _, hp := range hps {
		p.hooksDir(hp)
	}
}

// hooksDir protects one hooks directory hp names.
func (p *Plan) hooksDir(hp string) {
	rel, in := hostfs.Within(p.ws, hp)
	if !in {
		return // outside the workspace: not even visible inside
	}
	if rel == "." {
		p.fail(hp, protected.GitHooks) // hooks in the workspace root itself
		return
	}
	// A symlink on the way would let a command swap the directory out
	// from under the mount.
	if parent, err := filepath.EvalSymlinks(filepath.Dir(hp)); err == nil && parent != filepath.Dir(hp) {
		p.fail(filepath.Dir(hp), protected.GitHooks)
		return
	}
	switch fi, err := os.Lstat(hp); {
	case err == nil:
		p.readOnly(hp, fi.Mode().Type(), protected.GitHooks)
	case errors.Is(err, fs.ErrNotExist):
		p.placeholder(hp)
	}
}

// includes protects the files the config files roots include
// (gitdir.Closure: every include taken as active, recursively) as the
// config itself is: read-only where they exist in the workspace. A
// missing one gets no placeholder (git refuses a directory where an
// include names a file): the check after the command judges one a command
// creates. A symbolic link in the workspace on the way to one refuses the
// command, as one at any protected path does, and so do config files
// whose includes cannot be read (fail closed).
func (p *Plan) includes(roots []string) {
	incs, err := gitdir.Closure(roots, p.home)
	if err != nil {
		p.failWith(err)
	}
	for _, in := range incs {
		for _, l := range in.Links {
			if _, ok := hostfs.Within(p.ws, l); ok {
				p.fail(l, protected.GitConfig)
			}
		}
		if rel, ok := hostfs.Within(p.ws, in.Real); !ok || rel == "." {
			continue
		}
		if fi, err := os.Lstat(in.Real); err == nil {
			p.readOnly(in.Real, fi.Mode().Type(), protected.GitConfig)
		}
	}
}
