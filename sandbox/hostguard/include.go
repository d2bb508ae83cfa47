package hostguard

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/custos-dev/custos/sandbox/gitdir"
)

// What git reads besides a git directory's own files, and where the walk
// cannot go by its budget or its node_modules rule.
//
// Included config. A repository's config may include other files
// ([include], [includeIf], recursively, wherever they are: gitdir.Closure),
// which git reads as the config itself. Each one that lies in the
// workspace (symbolic links resolved), and each link in the workspace on
// the way to it, is an item of the snapshot like the config, so a command
// that creates or changes one has it stripped of every entry that is not
// inert, or set aside; so are those the host user's own config (and a
// repository outside the workspace that a .git file names) includes. The
// hooks directories every core.hooksPath there names are watched as a
// git directory's hooks are. Every include counts, whatever its condition.
// Where the includes of a config cannot be read, the walk does not know
// them; git on the host cannot read that config either (the same git
// reads it), and runs nothing from it.
//
// Every repository the command wrote. On an overlay the upper layer is
// all a command wrote: its entries that call for the check (suspects) are
// the snapshot's seeds, each looked at first, before the budget is spent
// and whether or not the walk would reach it (deep in a package in
// node_modules, for one): the git directory a seed is in, or is, is taken
// as one the walk found. Without an overlay nothing says what the command
// wrote, so the walk goes into every directory of node_modules as well.

// repoConfig records what the config files of the git directory gd
// (absolute) name: the hooks directories (other than hooks, its own,
// relative) and the files they include. worktree is where the work tree
// most likely is.
func (s *hostSnapshot) repoConfig(gd, hooks, from, worktree string) {
	hps, _ := gitdir.HooksDirsOf(gd, worktree, s.home)
	for _, hp := range hps {
		if hrel, ok := s.inside(hp); ok && hrel != "." && hrel != hooks {
			s.hooksDir(hrel, from)
		}
	}
	s.configIncludes(gitdir.RepoConfigs(gd), from)
}

// configIncludes records the files the config files roots include, found
// from the walked directory from.
func (s *hostSnapshot) configIncludes(roots []string, from string) {
	incs, _ := gitdir.Closure(roots, s.home)
	for _, in := range incs {
		for _, l := range in.Links {
			if rel, ok := s.inside(l); ok && rel != "." {
				s.includes[rel] = true
				s.add(rel, hsGitInclude, from)
			}
		}
		if rel, ok := s.inside(in.Real); ok && rel != "." {
			s.includes[rel] = true
			s.add(rel, hsGitInclude, from)
		}
	}
}

// outsideRepo records what a .git file rel (found from the walked
// directory from, in the directory abs) names in a repository outside the
// workspace: its hooks directories and included files that lie inside.
func (s *hostSnapshot) outsideRepo(rel, from, abs string) {
	t, ok := gitdir.ReadPointer(s.abs(rel))
	if !ok {
		return
	}
	hps, _ := gitdir.HooksDirsOf(t, abs, s.home)
	for _, hp := range hps {
		if hrel, ok := s.inside(hp); ok && hrel != "." {
			s.hooksDir(hrel, from)
		}
	}
	s.configIncludes(gitdir.RepoConfigs(t), from)
}

// nearInclude reports whether the upper-layer entry rel is an included
// file (or a link on the way to one) the snapshot knows of, or, unless it
// is a directory merged with the workspace's, above one: a directory made
// or replaced there can hold a new one.
func (s *hostSnapshot) nearInclude(rel string, merged bool) bool {
	if s.includes[rel] {
		return true
	}
	if merged {
		return false
	}
	for inc := range s.includes {
		if strings.HasPrefix(inc, rel+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// seedWalk looks at each seed first: the git directory it is in or is
// (a .git directory or file, a directory holding HEAD and objects and
// refs, or commondir), and another VCS's directory.
func (s *hostSnapshot) seedWalk() {
	for _, seed := range s.seeds {
		for a := filepath.Clean(seed); a != "." && a != "/" && a != ""; a = filepath.Dir(a) {
			if s.seedDir(a) {
				break
			}
		}
	}
}

// seedDir records a, when it is a repository's directory, as the walk
// does, and reports whether it was one.
func (s *hostSnapshot) seedDir(a string) bool {
	from := filepath.Dir(a)
	name := strings.ToLower(filepath.Base(a))
	fi, err := os.Lstat(s.abs(a))
	if err != nil {
		return false
	}
	switch {
	case name == ".git" && fi.IsDir():
		s.gitDir(a, from, s.abs(from), 0)
	case name == ".git":
		s.add(a, hsGitPointer, from)
		if t, ok := s.pointerTarget(a); ok {
			s.gitDir(t, from, s.abs(from), 0)
		} else {
			s.outsideRepo(a, from, s.abs(from))
		}
	case name == ".hg" && fi.IsDir():
		s.add(filepath.Join(a, "hgrc"), hsVCSConfig, from)
	case name == ".jj" && fi.IsDir():
		s.add(filepath.Join(a, "repo", "config.toml"), hsVCSConfig, from)
	case fi.IsDir() && s.looksGitDir(a):
		s.gitDir(a, a, filepath.Dir(s.abs(a)), 0)
	default:
		return false
	}
	return true
}

// looksGitDir reports whether directory a holds what makes it a git
// directory to the walk: HEAD, and commondir or objects and refs.
func (s *hostSnapshot) looksGitDir(a string) bool {
	has := func(n string) bool { _, err := os.Lstat(filepath.Join(s.abs(a), n)); return err == nil }
	return has("HEAD") && (has("commondir") || has("objects") && has("refs"))
}
