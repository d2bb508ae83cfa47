package hostguard

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/custos-dev/custos/sandbox/gitdir"
	"github.com/custos-dev/custos/sandbox/hostfs"
)

// Config the host runs later, created by a command.
//
// The protected paths (the protect package) keep what exists read-only, three
// directories deep. A command can still create a repository anywhere below
// the root (git init a/b/c/d, a bare repository and a .git file pointing at
// it, git submodule update of a submodule never checked out), or change one
// deeper than the plan looks, and plant what git on the host runs without
// anyone asking: the IDE and the shell prompt run `git status` in whatever
// directory they show (core.fsmonitor, core.pager, hooks, filters).
//
// So around every command custos takes a snapshot of exactly those files
// (hostSnapshot: their identity and, for config, their content), and after
// the command ends, however it ends (exit, kill, timeout, cancellation),
// finds what the command created or changed among them and neutralises it
// before returning (guard.go): hooks are set aside, config is
// stripped of every entry that is not known to be inert, pointers to
// repositories custos cannot see are set aside. What the command did not
// create or change is never touched: a user's own repository with its own
// fsmonitor stays as it was.
//
// The walk is breadth first and bounded by entries read, not by depth: git
// finds a repository from any directory below it, and a shell prompt runs in
// any directory, so a depth bound would be a hiding place. In node_modules
// only package directories (and their own node_modules) are looked at: a
// dependency's files are opened by going to its definition, which lands at
// the package, and reading every file of every package on every command
// would cost more than the command. That holds on an overlay, whose upper
// layer's suspects are looked at wherever they are; without one the walk
// goes into every directory of node_modules (include.go). A workspace larger than the budget is
// checked as far as the budget goes, shallowest first, and every result
// says that the rest was not checked.

// defaultHostScanEntries is the directory-entry budget of one walk: about
// 0.4 s of readdir on a laptop, a tree far larger than most repositories
// outside node_modules (the Linux kernel has about 90,000 files).
const defaultHostScanEntries = 400_000

// hsKind is what a file found by the walk is to the host.
type hsKind uint8

const (
	hsHook       hsKind = iota // an entry of a hooks directory: git runs it
	hsGitConfig                // config, config.worktree of a git directory
	hsCommondir                // commondir: where git takes config and hooks from
	hsGitPointer               // a .git file (or symlink): which repository to use
	hsVCSConfig                // another VCS's repository config (.hg/hgrc, .jj/repo/config.toml)
	hsGitInclude               // a file a git config includes, or a symbolic link on the way to one (include.go)
)

func (k hsKind) String() string {
	switch k {
	case hsHook:
		return "git hook"
	case hsGitConfig:
		return "git config"
	case hsCommondir:
		return "git commondir"
	case hsGitInclude:
		return "git config a repository's config includes"
	case hsGitPointer:
		return "git directory pointer"
	default:
		return "version-control config"
	}
}

// hsItem is one file the host may run or take direction from.
type hsItem struct {
	kind hsKind
	sig  hostfs.FileSig
	// From is the walked directory the item was found from (relative), so
	// an incomplete snapshot can tell what it never looked at.
	from string
}

// hostSnapshot is what the walk found: the items by path relative to the
// workspace, the git directories, and the content of config files (for a
// pre-existing repository, only entries the command added are stripped).
type hostSnapshot struct {
	ws      string
	items   map[string]hsItem
	gitdirs map[string]bool
	visited map[string]bool
	content map[string][]byte
	// hookDirs are the hooks directories the walk looked at, existing or
	// not (overlay.go's suspects).
	hookDirs map[string]bool
	// listDir, when set, lists the walk's directories instead of dirs (the
	// merged view's, overlay_linux.go).
	listDir func(rel, abs string) ([]hostfs.DirEnt, error)
	// includes are the paths (relative) git config in the workspace
	// includes, and the symbolic links on the way, existing or not
	// (overlay.go's suspects); home is the home directory ~/ means there,
	// hostConfigs the host user's own config files (include.go).
	includes    map[string]bool
	home        string
	hostConfigs []string
	// modules walks every directory of node_modules, not only its
	// packages (a run without an overlay, see walk); seeds are the
	// entries of the command's upper layer that call for the check, each
	// looked at first, wherever it is (include.go).
	modules bool
	seeds   []string
	// Truncated is set when the entry budget ran out before the walk did.
	truncated bool
	entries   int
	budget    int
	keep      bool // keep config content
	dirs      *hostfs.DirListings
}

// snapOpts are how a snapshot is taken: budget entries at most (0: the
// default); keep keeps the content of config files; dirs (nil: none)
// holds the listings of an earlier walk, reused where provably current,
// and receives this one's; listDir, when set, lists the directories;
// modules, home, hostConfigs and seeds as hostSnapshot's.
type snapOpts struct {
	budget      int
	keep        bool
	dirs        *hostfs.DirListings
	listDir     func(rel, abs string) ([]hostfs.DirEnt, error)
	modules     bool
	home        string
	hostConfigs []string
	seeds       []string
}

// takeSnapshot walks ws (canonical) as o says.
func takeSnapshot(ws string, o snapOpts) *hostSnapshot {
	if o.budget <= 0 {
		o.budget = defaultHostScanEntries
	}
	if o.dirs == nil {
		o.dirs = hostfs.NewDirListings()
	}
	s := &hostSnapshot{ws: ws, items: map[string]hsItem{}, gitdirs: map[string]bool{},
		visited: map[string]bool{}, content: map[string][]byte{}, hookDirs: map[string]bool{}, budget: o.budget, keep: o.keep, dirs: o.dirs,
		listDir: o.listDir, includes: map[string]bool{}, home: o.home, hostConfigs: o.hostConfigs, modules: o.modules, seeds: o.seeds}
	s.seedWalk()
	s.walk()
	s.configIncludes(s.hostConfigs, ".")
	return s
}

// Walk modes: a node_modules directory lists packages, a scope (@org) too;
// a package is looked at itself, and only its own node_modules below it.
type hsMode uint8

const (
	hsNormal hsMode = iota
	hsNodeModules
	hsPackage
)

func (s *hostSnapshot) walk() {
	type dir struct {
		rel  string
		mode hsMode
	}
	queue := []dir{{".", hsNormal}}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		abs := s.abs(d.rel)
		var ents []hostfs.DirEnt
		var err error
		if s.listDir != nil {
			ents, err = s.listDir(d.rel, abs)
		} else {
			ents, err = s.dirs.List(d.rel, abs)
		}
		if err != nil {
			continue // unreadable: git on the host cannot read it either
		}
		if s.entries += len(ents); s.entries > s.budget {
			s.truncated = true
			return
		}
		s.visited[d.rel] = true
		has := map[string]bool{}
		for _, e := range ents {
			switch e.Name {
			case "HEAD", "objects", "refs", "commondir":
				has[e.Name] = true
			}
		}
		if has["HEAD"] && (has["commondir"] || has["objects"] && has["refs"]) && d.rel != "." {
			// A bare repository or a git directory reached as a plain
			// directory: its insides are the git directory's, not a tree.
			s.gitDir(d.rel, d.rel, filepath.Dir(s.abs(d.rel)), 0)
			continue
		}
		if d.rel == "." && has["HEAD"] && has["objects"] && has["refs"] {
			s.gitDir(".", ".", "", 0)
		}
		for _, e := range ents {
			name := e.Name
			rel := filepath.Join(d.rel, name)
			typ := e.Typ
			switch {
			case strings.EqualFold(name, ".git"):
				if typ.IsDir() {
					s.gitDir(rel, d.rel, abs, 0)
				} else {
					s.add(rel, hsGitPointer, d.rel)
					if t, ok := s.pointerTarget(rel); ok {
						s.gitDir(t, d.rel, abs, 0)
					} else {
						s.outsideRepo(rel, d.rel, abs)
					}
				}
			case strings.EqualFold(name, ".hg") && typ.IsDir():
				s.add(filepath.Join(rel, "hgrc"), hsVCSConfig, d.rel)
			case strings.EqualFold(name, ".jj") && typ.IsDir():
				s.add(filepath.Join(rel, "repo", "config.toml"), hsVCSConfig, d.rel)
			case !typ.IsDir():
			case s.modules:
				queue = append(queue, dir{rel, hsNormal}) // no overlay: nothing else sees what a command made there
			case d.mode == hsPackage:
				if strings.EqualFold(name, "node_modules") {
					queue = append(queue, dir{rel, hsNodeModules})
				}
			case d.mode == hsNodeModules && strings.HasPrefix(name, "@"):
				queue = append(queue, dir{rel, hsNodeModules}) // a scope
			case d.mode == hsNodeModules:
				queue = append(queue, dir{rel, hsPackage})
			case strings.EqualFold(name, "node_modules"):
				queue = append(queue, dir{rel, hsNodeModules})
			default:
				queue = append(queue, dir{rel, hsNormal})
			}
		}
	}
}

func (s *hostSnapshot) abs(rel string) string { return filepath.Join(s.ws, rel) }

// add records rel when it exists (without following a symlink).
func (s *hostSnapshot) add(rel string, kind hsKind, from string) bool {
	fi, err := os.Lstat(s.abs(rel))
	if err != nil {
		return false
	}
	s.items[rel] = hsItem{kind: kind, sig: hostfs.SigOf(fi), from: from}
	if s.keep && (kind == hsGitConfig || kind == hsVCSConfig || kind == hsGitInclude) && fi.Mode().IsRegular() {
		if b, err := gitdir.ReadRegular(s.abs(rel)); err == nil {
			s.content[rel] = b
		}
	}
	return true
}

// pointerTarget is where a .git pointer file or symlink leads, relative,
// when that is a directory inside the workspace.
func (s *hostSnapshot) pointerTarget(rel string) (string, bool) {
	abs := s.abs(rel)
	var real string
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		r, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return "", false
		}
		real = r
	} else if r, ok := gitdir.ReadPointer(abs); ok {
		real = r
	} else {
		return "", false
	}
	return s.inside(real)
}

// inside returns abs relative to the workspace when it lies in it.
func (s *hostSnapshot) inside(abs string) (string, bool) {
	rel, in := hostfs.Within(s.ws, abs)
	if !in {
		return "", false
	}
	return rel, true
}

// gitDir records what of git directory rel (relative) the host runs: its
// config files, commondir, hooks (and the directory core.hooksPath names),
// and the same for the git directories of its submodules and linked
// worktrees. worktree is the directory the repository's work tree most
// likely is (for a relative core.hooksPath).
func (s *hostSnapshot) gitDir(rel, from, worktree string, depth int) {
	if s.gitdirs[rel] {
		return
	}
	s.gitdirs[rel] = true
	for _, n := range gitdir.ConfigFiles {
		s.add(filepath.Join(rel, n), hsGitConfig, from)
	}
	s.add(filepath.Join(rel, gitdir.CommonDir), hsCommondir, from)
	hooks := filepath.Join(rel, gitdir.HooksDir)
	if fi, err := os.Lstat(s.abs(hooks)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		s.add(hooks, hsHook, from) // the link itself: it can lead anywhere
	} else {
		s.hooksDir(hooks, from)
	}
	s.repoConfig(s.abs(rel), hooks, from, worktree)
	gitdir.Nested(s.ws, rel, depth, func(n int) { s.entries += n }, func(sub string, _ bool, depth int) {
		s.gitDir(sub, from, "", depth)
	})
}

// hooksDir records the entries of a hooks directory, except git's own
// *.sample files, which git never runs.
func (s *hostSnapshot) hooksDir(rel, from string) {
	s.hookDirs[rel] = true
	ents, err := os.ReadDir(s.abs(rel))
	if err != nil {
		return
	}
	s.entries += len(ents)
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".sample") {
			s.add(filepath.Join(rel, e.Name()), hsHook, from)
		}
	}
}

// covers reports whether the snapshot looked where rel was found from: a
// complete snapshot looked everywhere; an incomplete one only at the
// directories it visited.
func (s *hostSnapshot) covers(it hsItem) bool {
	return !s.truncated || s.visited[it.from]
}
