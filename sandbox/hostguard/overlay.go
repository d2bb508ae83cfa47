package hostguard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/custos-dev/custos/protected"
	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/overlaymerge"
	"github.com/custos-dev/custos/sandbox/protect"
)

// Deferred visibility. The check after a command
// (snapshot.go) finds what a command planted for the host, but a tool on
// the host could act on it while the command still ran: an editor's
// repository scan, a prompt's `git status` in a new sub/. So, with the
// mount step, every guarded command runs on an overlay of its workspace:
// the workspace is the lower layer, and what the command writes lands in
// an upper layer in custos' state directory (<state>/overlay/<run>), which
// nothing on the host looks at. Once the command has ended (every process
// of it gone), custos checks the result and only then applies the upper
// layer to the workspace (Apply):
//
//   - An upper layer with no name git or another VCS reads (.git, HEAD,
//     config, hooks, objects, ...) and nothing in a hooks directory the
//     snapshot before the command knew of cannot have planted anything the
//     check looks at: it is applied at once, without a walk.
//   - Otherwise the check runs on the merged view, before anything is
//     applied: a helper process (this binary, helperHostCheckName) in a
//     user and mount namespace of its own mounts the same overlay at the
//     workspace's own path, so absolute paths, .git pointers and symlinks
//     mean there what they mean on the host, and runs the check there
//     against the snapshot taken before the command. What it neutralises
//     goes through the overlay into the upper layer (a hook set aside is a
//     whiteout there), so what is applied afterwards is already
//     neutralised.
//   - If that helper cannot run, custos fails closed: the suspect parts of
//     the upper layer are set aside into the quarantine, not applied, and
//     the rest is.
//
// The snapshot's file (pending.go) names the run's overlay, so
// a worker killed mid-command leaves the next one both the check and the
// merge to finish.

// helperHostCheckName is argv[0] of the host-config check's helper: this
// binary run again, on the host (never in a sandbox), to check a run's
// merged view. sandbox.MaybeRunHelper hands it to RunHelper.
const HelperHostCheckName = "custos-sandbox-hostcheck"

// hostCheckWired records that this process' main() dispatches
// helperHostCheckName (sandbox.MaybeRunHelper does, and calls
// wireHostCheck): without it, running this binary again could start, say,
// the whole worker, so the check on the merged view fails closed instead.
var hostCheckWired atomic.Bool

// WireHelper says this process' main() dispatches the helper.
func WireHelper() { hostCheckWired.Store(true) }

// OverlayRoot is where runs' overlays live, beside the quarantine (never
// mounted into a sandbox but its own run's, and not a workspace cache,
// which eviction removes).
func (c Settings) OverlayRoot() string {
	return filepath.Join(filepath.Dir(filepath.Clean(c.Quarantine())), "overlay")
}

// newOverlay makes a run's overlay directory for ws: upper (with the
// workspace root's permissions, which the overlay's root shows) and work.
func (c Settings) newOverlay(ws string) (string, error) {
	root := c.OverlayRoot()
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", fmt.Errorf("sandbox: workspace overlay: %w", err)
	}
	d, err := os.MkdirTemp(root, fmt.Sprintf("%s-%d-%s-", hostfs.WorkspaceKey(ws), os.Getpid(), ownStart()))
	if err != nil {
		return "", fmt.Errorf("sandbox: workspace overlay: %w", err)
	}
	perm := fs.FileMode(0o755)
	if fi, err := os.Stat(ws); err == nil {
		perm = fi.Mode().Perm()
	}
	err = errors.Join(os.Mkdir(filepath.Join(d, "upper"), 0o700), os.Mkdir(filepath.Join(d, "work"), 0o700),
		os.WriteFile(filepath.Join(d, "workspace"), []byte(ws), 0o600))
	if err == nil {
		err = os.Chmod(filepath.Join(d, "upper"), perm)
	}
	if err != nil {
		_ = os.RemoveAll(d)
		return "", fmt.Errorf("sandbox: workspace overlay: %w", err)
	}
	return d, nil
}

// OverlayPool keeps the overlay directories of a sandbox's finished runs,
// emptied by their merge, for the next run in the same workspace: making
// and removing the three directories and a file costs a few milliseconds
// of metadata writes per command on a slow disk, where reusing them costs
// one directory read. The work directory's leftovers are overlayfs' own to
// clean at the next mount. A process that dies leaves its pool to the
// next sweep (sweepOverlays), which removes empty overlays.
type OverlayPool struct {
	mu       sync.Mutex
	free     map[string][]string // by workspace
	n        int
	cleaning int // given back, their work directories being cleaned
	Busy     sync.WaitGroup
}

// maxPooledOverlays bounds the pool (a few per workspace at most).
const maxPooledOverlays = 16

// Take is an overlay directory for ws, pooled or new.
func (p *OverlayPool) Take(c Settings, ws string) (string, error) {
	if p != nil {
		p.mu.Lock()
		for len(p.free[ws]) > 0 {
			l := p.free[ws]
			d := l[len(l)-1]
			p.free[ws], p.n = l[:len(l)-1], p.n-1
			if ents, err := os.ReadDir(filepath.Join(d, "upper")); err == nil && len(ents) == 0 {
				p.mu.Unlock()
				return d, nil
			}
			_ = hostfs.RemoveAllWritable(d) // not as it was left: not reused
		}
		p.mu.Unlock()
	}
	return c.newOverlay(ws)
}

// Give returns a run's overlay directory, its upper layer applied. Its
// work directory is cleaned for the next mount in the background, and
// the directory is taken again only once that is done.
func (p *OverlayPool) Give(ws, d string) {
	if p == nil {
		_ = hostfs.RemoveAllWritable(d)
		return
	}
	p.mu.Lock()
	full := p.n+p.cleaning >= maxPooledOverlays || len(p.free[ws]) >= 2
	if !full {
		p.cleaning++
	}
	p.mu.Unlock()
	if full {
		_ = hostfs.RemoveAllWritable(d)
		return
	}
	p.Busy.Go(func() {
		err := overlayClean(d)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.cleaning--
		if err != nil {
			_ = hostfs.RemoveAllWritable(d)
			return
		}
		if p.free == nil {
			p.free = map[string][]string{}
		}
		p.free[ws] = append(p.free[ws], d)
		p.n++
	})
}

// overlayClean readies an overlay directory's work directory for a mount:
// overlayfs refuses to mount one a volatile mount has used (its
// work/incompat/volatile says the upper layer may not have reached the
// disk); custos knows when the overlay went, with every process using it.
func overlayClean(d string) error {
	w := filepath.Join(d, "work", "work")
	if _, err := os.Lstat(w); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := hostfs.RemoveAllWritable(w); err != nil {
		return fmt.Errorf("sandbox: clean the overlay's work directory: %w", err)
	}
	return nil
}

// Names (lower case) in an upper layer that may mean a repository, its
// config or its hooks was made or changed: those the check's walk decides
// by (snapshot.go), and the files it reads. A directory of such a name
// matters when the command made it (or replaced one): a merged directory,
// one the workspace had and still has, is only looked into, so that a
// commit in the workspace's repository (objects, refs), src/hooks or a
// config directory does not call for the check. A file of such a name
// matters however it was made; HEAD only when it is new and makes a
// directory a repository (git rewrites an existing one on every checkout,
// and logs/HEAD is a reflog).
var (
	vcsDirNames  = map[string]bool{".git": true, ".hg": true, ".jj": true, "hooks": true, "objects": true, "refs": true, "modules": true, "worktrees": true}
	vcsFileNames = map[string]bool{".git": true, "config": true, "config.worktree": true, "commondir": true, "gitdir": true}
	// Read only inside the directories of those version-control systems.
	vcsOwnFiles = map[string]string{"hgrc": ".hg", "config.toml": ".jj"}
)

// suspects are the shallowest entries of upper that the check must see
// (see vcsDirNames, or inside a hooks directory the snapshot before knew
// of); none: the layer can be applied without a check. An upper layer
// that cannot be read whole is all suspect.
func (g *Guard) suspects(upper string) []string {
	var out []string
	// merged: rel is a directory the workspace has (a real one, as are all
	// above it: a symbolic link there is never looked through) and the
	// command did not replace; below one that is not, everything is new.
	var walk func(rel, vcs string, merged bool)
	walk = func(rel, vcs string, merged bool) {
		ents, err := os.ReadDir(filepath.Join(upper, rel))
		if err != nil {
			out = append(out, rel)
			return
		}
		for _, e := range ents {
			r := filepath.Join(rel, e.Name())
			name := strings.ToLower(e.Name())
			sub := merged && e.IsDir() && g.mergedDir(upper, r)
			if g.before.inHooksDir(r) || g.before.nearInclude(r, sub) || g.suspectName(r, name, e, vcs, merged, sub) {
				out = append(out, r)
				continue
			}
			if e.IsDir() {
				inner := vcs
				if name == ".hg" || name == ".jj" {
					inner = name
				}
				walk(r, inner, sub)
			}
		}
	}
	walk(".", "", true)
	return out
}

// suspectName reports whether upper entry rel (name lower-cased, inside
// the version-control directory vcs, "" none; in a merged directory or
// not, itself a merged directory or not) calls for the check by its name
// alone.
func (g *Guard) suspectName(rel, name string, e fs.DirEntry, vcs string, inMerged, merged bool) bool {
	if e.IsDir() {
		return vcsDirNames[name] && !merged
	}
	if name == "head" {
		// A new HEAD beside objects and refs (or commondir) the directory
		// already had makes it a repository; in a new directory, those
		// made with it are suspects of their own.
		if !inMerged {
			return false
		}
		if _, err := os.Lstat(filepath.Join(g.ws, rel)); err == nil {
			return false
		}
		dir := filepath.Join(g.ws, filepath.Dir(rel))
		_, cerr := os.Lstat(filepath.Join(dir, "commondir"))
		_, oerr := os.Lstat(filepath.Join(dir, "objects"))
		_, rerr := os.Lstat(filepath.Join(dir, "refs"))
		return cerr == nil || (oerr == nil && rerr == nil)
	}
	return vcsFileNames[name] || (vcsOwnFiles[name] != "" && vcsOwnFiles[name] == vcs)
}

// mergedDir reports whether the upper directory rel, in a merged
// directory, is merged with a directory the workspace already has (not
// made by the command, nor replacing what was there: opaque).
func (g *Guard) mergedDir(upper, rel string) bool {
	fi, err := os.Lstat(filepath.Join(g.ws, rel))
	if err != nil || !fi.IsDir() {
		return false
	}
	return !overlayOpaque(filepath.Join(upper, rel))
}

// inHooksDir reports whether rel is, or is below, a hooks directory the
// walk looked at (one core.hooksPath names may not exist yet).
func (s *hostSnapshot) inHooksDir(rel string) bool {
	for d := rel; d != "." && d != "/" && d != ""; d = filepath.Dir(d) {
		if s.hookDirs[d] {
			return true
		}
	}
	return false
}

// finishOverlay is finish for a run on an overlay: the check where it is
// needed, then the upper layer applied to the workspace.
func (g *Guard) finishOverlay(res *Report) {
	upper := filepath.Join(g.overlay, "upper")
	if _, err := os.Lstat(upper); errors.Is(err, fs.ErrNotExist) {
		return // removed meanwhile (by hand): nothing of it to apply
	}
	g.withholdProtected(upper, res)
	if sus := g.suspects(upper); len(sus) > 0 {
		g.seeds = sus
		r, err := viewChecker(g)
		if err != nil {
			g.setAsideUnchecked(upper, sus, err, res)
		} else {
			res.HostConfig, res.HostConfigKept, res.HostConfigUnchecked = r.HostConfig, r.HostConfigKept, r.HostConfigUnchecked
		}
	}
	done := func(error) {}
	if g.beforeMerge != nil {
		d, err := g.beforeMerge(upper)
		if err != nil {
			// Nothing is applied that could not be taken back.
			res.Unmerged = fmt.Sprintf("custos could not record a checkpoint of what the command wrote (%v), so none of it was applied; it is kept in %s", err, upper)
			return
		}
		done = d
	}
	err := g.merge(upper, res)
	done(err)
	if err != nil {
		res.Unmerged = fmt.Sprintf("custos could not apply all the command wrote to the workspace (%v); what is left of it is kept in %s", err, upper)
		return
	}
	g.overlays.Give(g.ws, g.overlay) // nil pool: removed
}

// merge applies upper to the workspace (Apply) and says in res what
// it did not apply as the command left it.
func (g *Guard) merge(upper string, res *Report) error {
	st, err := overlaymerge.Apply(upper, g.ws)
	for _, rel := range st.SetID {
		res.Withheld = append(res.Withheld, Change{Path: rel, What: "set-uid or set-gid",
			Action: "applied without its set-uid and set-gid bits (on the host it would run with the worker's rights)"})
	}
	for _, rel := range st.Special {
		res.Withheld = append(res.Withheld, Change{Path: rel, What: "fifo or socket",
			Action: "not applied (a tool on the host that opens a fifo waits forever)"})
	}
	return err
}

// withholdProtected sets aside, before anything of upper is applied,
// every entry the command made at a protected name (protected.Files and
// protected.Dirs, wherever they appear down to protectedSearchDepth, as
// planProtected protects those that exist; node_modules and git
// directories are the plan's and the check's): those that exist are
// mounted read-only and those missing at the root are held by
// placeholders, so what is found here is a name that did not exist
// where the command made it. It is kept in the quarantine, never
// applied.
func (g *Guard) withholdProtected(upper string, res *Report) {
	var q *quarantine
	var walk func(rel string, depth int)
	walk = func(rel string, depth int) {
		ents, err := os.ReadDir(filepath.Join(upper, rel))
		if err != nil {
			return // what cannot be read here, the merge reports
		}
		for _, e := range ents {
			r := filepath.Join(rel, e.Name())
			name := strings.ToLower(e.Name())
			rule := protected.Lookup(name)
			switch {
			case rule != nil:
				if q == nil {
					q = &quarantine{root: g.qroot, ws: g.ws}
				}
				res.Withheld = append(res.Withheld, Change{Path: r, What: rule.Name + " the command created", Action: withhold(q, upper, r)})
			case e.IsDir() && depth < protect.SearchDepth && name != "node_modules" && name != protected.GitDir:
				walk(r, depth+1)
			}
		}
	}
	walk(".", 1)
	if q != nil && q.dir != "" {
		q.manifest(res.Withheld)
	}
}

// withhold moves the upper entry rel into q, or removes it when it cannot
// be kept, and says which.
func withhold(q *quarantine, upper, rel string) string {
	err := q.moveIn(filepath.Join(upper, rel), rel)
	if err == nil {
		return "set aside, not applied: kept in " + filepath.Join(q.dir, rel)
	}
	if rerr := hostfs.RemoveAllWritable(filepath.Join(upper, rel)); rerr != nil {
		return fmt.Sprintf("could NOT be withheld (%v)", rerr)
	}
	return fmt.Sprintf("not applied and removed: it could not be kept (%v)", err)
}

// setAsideUnchecked moves the suspect entries of upper into the quarantine
// instead of applying them, when the check could not run on the merged
// view (why): fail closed.
func (g *Guard) setAsideUnchecked(upper string, sus []string, why error, res *Report) {
	q := &quarantine{root: g.qroot, ws: g.ws}
	for _, rel := range sus {
		c := Change{Path: rel, What: "version-control files the command wrote",
			Action: fmt.Sprintf("set aside, not applied: custos could not check them (%v)", why)}
		if err := q.moveIn(filepath.Join(upper, rel), rel); err != nil {
			if rerr := hostfs.RemoveAllWritable(filepath.Join(upper, rel)); rerr != nil {
				c.Action = fmt.Sprintf("could NOT be removed (%v)", rerr)
			} else {
				c.Action = fmt.Sprintf("not applied and removed: custos could not check them (%v) nor keep them (%v)", why, err)
			}
		}
		res.HostConfig = append(res.HostConfig, c)
	}
	res.HostConfigKept = q.dir
	q.manifest(res.HostConfig)
}

// viewChecker is viewCheck; a test makes it fail.
var viewChecker = viewCheck

// viewResult is what the view check's helper reports.
type viewResult struct {
	HostConfig          []Change `json:"hostConfig,omitempty"`
	HostConfigKept      string   `json:"hostConfigKept,omitempty"`
	HostConfigUnchecked string   `json:"hostConfigUnchecked,omitempty"`
}

// viewRequest is what the worker hands the helper on its stdin.
type viewRequest struct {
	Before  pendingGuard `json:"before"`
	Overlay string       `json:"overlay"`
	QRoot   string       `json:"qroot"`
	// Seeds are the upper layer's suspects (include.go).
	Seeds []string `json:"seeds,omitempty"`
}

// runViewCheck is the helper's work, in its namespaces with the overlay
// mounted at the workspace: the check against the snapshot before.
func runViewCheck(req viewRequest, listDir func(rel, abs string) ([]hostfs.DirEnt, error)) viewResult {
	g := &Guard{ws: req.Before.WS, before: req.Before.snapshot(), qroot: req.QRoot, budget: req.Before.Budget, view: true, listDir: listDir,
		overlay: req.Overlay, seeds: req.Seeds}
	var r Report
	g.check(&r)
	return viewResult{r.HostConfig, r.HostConfigKept, r.HostConfigUnchecked}
}

// sweepOverlays applies, into out, the overlays of runs in ws (every
// workspace for ws "") whose process is gone and whose snapshot's file did not name them
// (recoverInterrupted finished those): a worker killed before its command
// began leaves an empty one; one whose snapshot could not be written
// leaves one no check can judge, so its version-control parts are set
// aside, failing closed, and the rest is applied.
func (c Settings) sweepOverlays(ws string, out *Report) {
	for _, e := range wsEntries(c.OverlayRoot(), ws) {
		pid, start, ok := pendingOwner(e.Name())
		if !ok || alive(pid, start) {
			continue
		}
		dir := filepath.Join(c.OverlayRoot(), e.Name())
		b, err := os.ReadFile(filepath.Join(dir, "workspace"))
		owner := string(b)
		if err != nil || owner == "" || (ws != "" && owner != ws) {
			continue
		}
		g := &Guard{ws: owner, before: &hostSnapshot{hookDirs: map[string]bool{}}, qroot: c.Quarantine(), overlay: dir}
		upper := filepath.Join(dir, "upper")
		var r Report
		g.withholdProtected(upper, &r)
		if sus := g.suspects(upper); len(sus) > 0 {
			g.setAsideUnchecked(upper, sus, errors.New("its command was interrupted before its snapshot was kept"), &r)
		}
		if err := g.merge(upper, &r); err == nil {
			_ = hostfs.RemoveAllWritable(dir)
		}
		out.addInterrupted(r)
	}
}
