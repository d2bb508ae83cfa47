package gitdir

import (
	"os"
	"path/filepath"
)

// gitDirLike reports whether dir holds what makes a git directory, or what
// git would run once it is one.
func gitDirLike(dir string) bool {
	for _, n := range []string{"HEAD", "config", "hooks", "commondir"} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// The layout of a git directory, as every walk of one in the sandbox reads
// it: the protected-paths plan (which entries a command may not change) and
// the host guard's snapshot (which entries a command did change).

const (
	// HooksDir holds the hooks git runs.
	HooksDir = "hooks"
	// CommonDir names the git directory whose config and hooks a linked
	// worktree's (or a submodule's) git directory shares: pointed
	// elsewhere, it hands git another repository's.
	CommonDir = "commondir"
	// BackPointer, in a linked worktree's git directory, names the
	// worktree's .git file. Git runs nothing from it and reads no
	// configuration through it, so the host guard does not look at it;
	// the protected plan keeps it read-only like every pointer.
	BackPointer = "gitdir"
	// modulesDir holds submodules' git directories, at names that may
	// contain slashes.
	modulesDir = "modules"
	// worktreesDir holds linked worktrees' git directories.
	worktreesDir = "worktrees"
)

// configFiles are the configuration files git reads in a git directory:
// config.worktree only when extensions.worktreeConfig is on, so it counts
// whether or not it is there.
var ConfigFiles = []string{"config", "config.worktree"}

// maxNestDepth bounds the walk through modules/ and worktrees/ (submodule
// names may contain slashes, and submodules nest): deeper than this, a
// nested git directory is not looked for.
const maxNestDepth = 8

// Nested calls visit for each git directory nested in the git directory
// root/g, found at depth+1: submodules' below modules/ (a name's
// directories walked through until one is gitDirLike) and linked
// worktrees' below worktrees/. Paths are relative to root as g is (root may
// be "" for absolute paths). listed, when set, is told how many entries
// each directory read held, for walks that budget what they read.
func Nested(root, g string, depth int, listed func(int), visit func(g string, worktree bool, depth int)) {
	if depth >= maxNestDepth {
		return
	}
	nestedModules(root, filepath.Join(g, modulesDir), depth+1, listed, visit)
	ents, err := os.ReadDir(filepath.Join(root, g, worktreesDir))
	if err != nil {
		return
	}
	if listed != nil {
		listed(len(ents))
	}
	for _, e := range ents {
		if e.IsDir() {
			visit(filepath.Join(g, worktreesDir, e.Name()), true, depth+1)
		}
	}
}

// nestedModules finds submodules' git directories below root/dir: a
// directory that is gitDirLike is one; any other is part of a name with
// slashes, and is walked through.
func nestedModules(root, dir string, depth int, listed func(int), visit func(g string, worktree bool, depth int)) {
	ents, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil || depth > maxNestDepth {
		return
	}
	if listed != nil {
		listed(len(ents))
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		if gitDirLike(filepath.Join(root, sub)) {
			visit(sub, false, depth)
		} else {
			nestedModules(root, sub, depth+1, listed, visit)
		}
	}
}
