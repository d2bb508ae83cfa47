package protect

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/custos-dev/custos/protected"
	"github.com/custos-dev/custos/sandbox/gitdir"
	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/mount"
)

// SearchDepth bounds how deep below the workspace root protected
// names and nested repositories are looked for on every Bash call (the
// root's entries are depth 1). sandbox-runtime bounds its search the same
// way (mandatoryDenySearchDepth); deeper ones are left writable, which the
// README states.
const SearchDepth = 3

// Plan is the bubblewrap profile's share of the protected list for
// one workspace at one moment.
type Plan struct {
	ws     string
	Mounts []mount.Mount
	// Placeholders are the read-only empty directories mounted where a
	// protected path is missing; bubblewrap leaves each behind on the host
	// as its mount point, and removePlaceholders takes them away again.
	Placeholders []string
	files        []fileHolder
	pinned       map[string]bool
	gitdirs      map[string]bool // git directories planned; true once their hooks have a placeholder if missing
	bound        map[string]bool // paths already mounted over
	home         string          // the home directory ~/ means in git config
	Err          error
}

// NewPlan finds what must be protected in ws and how:
//
//   - protected files and directories (the list in protected.go) up to
//     protectedSearchDepth, and every git directory in every layout: .git
//     directories of the workspace and of nested repositories, what a .git
//     pointer file (linked worktree, submodule) points to when that lies in
//     the workspace, .git/modules/** (submodules' git directories),
//     .git/worktrees/* (linked worktrees' administrative directories), bare
//     repositories, and the directory core.hooksPath names. In each git
//     directory hooks, config, config.worktree, commondir and gitdir are
//     bound read-only; the rest (objects, refs, index) stays writable so git
//     commit still works inside.
//   - a protected name missing at the workspace root is held by a read-only
//     empty directory, so no command can create it; the same for a missing
//     hooks directory. A directory, not a file: empty directories are
//     invisible to git status and git add, and an empty .git directory is
//     not a repository (git and go build look past it), while it keeps a
//     workspace that is not a repository from becoming one (git init fails)
//     with hooks a later git on the host would run. A missing commondir or
//     config.worktree in a git directory is held by a read-only file git
//     accepts (gitdirFileHolders).
//   - every directory between the workspace and a protected path is bound
//     onto itself (writable): a mount point cannot be renamed or removed, so
//     "mv .git .git-old && git init" or renaming .git/modules away cannot put
//     a fresh, unprotected copy where git looks.
//   - a symbolic link at a protected path is an error: a mount would land
//     on its target and leave the link itself replaceable.
//
// dirs, when not nil, are the listings of the host-config snapshot taken
// just before (sandbox/hostguard): a directory unchanged since its listing
// there costs the walk one lstat instead of a read.
func NewPlan(ws string, dirs *hostfs.DirListings) *Plan {
	p := &Plan{ws: ws, pinned: map[string]bool{}, gitdirs: map[string]bool{}, bound: map[string]bool{}, home: gitdir.Home()}
	p.walk(dirs)
	// The host user's own config may include a file of the workspace.
	p.includes(gitdir.HostConfigs(p.home))
	return p
}

// failWith refuses the plan for err (the first failure is kept).
func (p *Plan) failWith(err error) {
	if p.Err == nil {
		p.Err = fmt.Errorf("sandbox: %w; custos cannot tell which files git would read as config, so commands are refused until git can read it", err)
	}
}

func (p *Plan) fail(path string, rule protected.Rule) {
	if p.Err == nil {
		rel, _ := filepath.Rel(p.ws, path)
		p.Err = fmt.Errorf("sandbox: %s (%s): %w", rel, rule.Name, ErrUnprotectable)
	}
}

// walk lists the workspace breadth-first, without following symlinks.
func (p *Plan) walk(dirs *hostfs.DirListings) {
	type dir struct {
		path, rel string
		depth     int
	}
	if dirs == nil {
		dirs = hostfs.NewDirListings()
	}
	queue := []dir{{p.ws, ".", 1}}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		ents, err := dirs.List(d.rel, d.path)
		if err != nil {
			continue // unreadable here means unreadable inside too
		}
		seen := map[string]bool{}
		for _, e := range ents {
			// Exact spelling: on a case-sensitive file system .GIT does not
			// keep anyone from creating .git.
			seen[e.Name] = true
		}
		if seen["HEAD"] && seen["objects"] && seen["refs"] {
			// A bare repository (a test remote, a mirror): git on the host
			// runs its hooks on a push to it, or inside it. Its insides are
			// not searched further.
			p.gitDir(d.path, true, 0)
			if d.path != p.ws {
				continue
			}
		}
		for _, e := range ents {
			name := strings.ToLower(e.Name)
			path := filepath.Join(d.path, e.Name)
			switch {
			case name == protected.GitDir:
				p.gitEntry(path, e.Typ)
			case protected.Lookup(name) != nil:
				p.readOnly(path, e.Typ, *protected.Lookup(name))
			case name == "node_modules":
				// Installed packages: no editor, shell or git on the host
				// starts there, and pinning a package's stray .vscode would
				// make node_modules impossible to remove (npm ci does).
			case e.Typ.IsDir() && d.depth < SearchDepth:
				queue = append(queue, dir{path, filepath.Join(d.rel, e.Name), d.depth + 1})
			}
		}
		if d.path == p.ws {
			p.rootPlaceholders(seen)
		}
	}
}

// rootPlaceholders mounts a read-only empty directory for each protected
// name the workspace root lacks, so that no command can create it: a
// file as well as a directory, and the names only read from a home
// directory (.bashrc, .gitconfig, .claude.json) whether or not the
// workspace looks like one, since a workspace may be someone's home, or
// be opened as one by a tool that reads them. An empty directory is
// invisible to git status and stops a create, a rename or a link onto the
// name (a mount point is busy).
func (p *Plan) rootPlaceholders(seen map[string]bool) {
	names := []string{protected.GitDir}
	for _, l := range [][]protected.Name{protected.Dirs, protected.Files} {
		for _, n := range l {
			names = append(names, n.Name)
		}
	}
	for _, n := range names {
		if !seen[n] {
			p.placeholder(filepath.Join(p.ws, n))
		}
	}
}

func (p *Plan) placeholder(path string) {
	// Hold the place of the first missing directory on the way: one
	// bubblewrap would create as a plain directory could be renamed away.
	if rel, in := hostfs.Within(p.ws, path); in {
		cur := p.ws
		for _, c := range strings.Split(rel, string(filepath.Separator)) {
			cur = filepath.Join(cur, c)
			if _, err := os.Lstat(cur); errors.Is(err, fs.ErrNotExist) {
				path = cur
				break
			}
		}
	}
	if p.bound[path] {
		return
	}
	p.bound[path] = true
	p.pinParents(path)
	p.Mounts = append(p.Mounts, mount.Mount{Kind: mount.Empty, Src: "", Dst: path})
	p.Placeholders = append(p.Placeholders, path)
}

// readOnly binds an existing protected entry onto itself read-only.
func (p *Plan) readOnly(path string, typ fs.FileMode, rule protected.Rule) {
	if typ&fs.ModeSymlink != 0 {
		p.fail(path, rule)
		return
	}
	if p.bound[path] {
		return
	}
	p.bound[path] = true
	p.pinParents(path)
	p.Mounts = append(p.Mounts, mount.Mount{Kind: mount.ROBind, Src: path, Dst: path})
}

// pinParents binds every directory strictly between the workspace and path
// onto itself, parents first, once each.
func (p *Plan) pinParents(path string) {
	rel, err := filepath.Rel(p.ws, filepath.Dir(path))
	if err != nil || rel == "." {
		return
	}
	cur := p.ws
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, c)
		if !p.pinned[cur] {
			p.pinned[cur] = true
			p.Mounts = append(p.Mounts, mount.Mount{Kind: mount.Bind, Src: cur, Dst: cur})
		}
	}
}

// Prepare refuses a workspace whose protected paths cannot be protected,
// and creates the placeholders: the mount points of the missing
// directories (from pool, see dirPool), and the placeholder files. Call
// removePlaceholders with the same pool after the run. The mount points
// are made here, on the host, rather than by whoever mounts over them in
// the sandbox, where the kernel is still tearing down what bubblewrap left
// of the host's mount table and each costs more.
func (p *Plan) Prepare(pool *DirPool) error {
	if p.Err != nil {
		return p.Err
	}
	for _, d := range p.Placeholders {
		// One that exists by now is mounted over as planned (an empty
		// directory over a directory; over anything else the mount fails
		// and the command does not run).
		if err := pool.take(d); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("sandbox: placeholder for %s: %w", d, err)
		}
	}
	for i, h := range p.files {
		f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			// Created since the plan: it is bound read-only all the same,
			// but it is not ours to remove.
			p.files[i].path = ""
			continue
		}
		if err != nil {
			return fmt.Errorf("sandbox: placeholder for %s: %w", h.path, err)
		}
		_, err = f.WriteString(h.content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("sandbox: placeholder for %s: %w", h.path, err)
		}
	}
	return nil
}

// RemovePlaceholders removes the placeholder files, and the mount points
// of the placeholder directories (into pool, or rmdir), when they are
// still what custos put there (nothing else in custos creates protected
// paths, but anything else found there is never touched).
func (p *Plan) RemovePlaceholders(pool *DirPool) {
	for _, h := range p.files {
		if h.path == "" {
			continue
		}
		if b, err := os.ReadFile(h.path); err == nil && string(b) == h.content {
			_ = os.Remove(h.path)
		}
	}
	for i := len(p.Placeholders) - 1; i >= 0; i-- {
		// Only an empty directory goes, never a file or a symbolic link,
		// nor one with something in it.
		pool.give(p.Placeholders[i])
	}
}

var ErrUnprotectable = errors.New("a symbolic link stands where a protected path must be; custos cannot keep it read-only, so commands are refused until it is replaced by the real file or directory")

// MountsWithoutPlaceholders are the plan's mounts of what exists (the
// protected paths bound read-only, their parents pinned), without the
// placeholders of what is missing: for a long-lived server on an overlay
// of the workspace, which must not leave placeholders in the workspace
// for as long as it runs. What it creates at a missing protected name
// lands in its overlay's upper layer, which the host guard judges before
// anything of it is applied (hostguard: withheld, or checked).
func (p *Plan) MountsWithoutPlaceholders() []mount.Mount {
	holders := map[string]bool{}
	for _, h := range p.files {
		holders[h.path] = true
	}
	out := make([]mount.Mount, 0, len(p.Mounts))
	for _, m := range p.Mounts {
		if m.Kind == mount.Empty || m.Kind == mount.ROBind && holders[m.Dst] {
			continue
		}
		out = append(out, m)
	}
	return out
}
