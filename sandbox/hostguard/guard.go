package hostguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/custos-dev/custos/internal/statedir"
	"github.com/custos-dev/custos/sandbox/gitdir"
	"github.com/custos-dev/custos/sandbox/hostfs"
)

// What custos does with host config a command created or changed (see
// snapshot.go), before the command's result leaves the sandbox package.
//
// Set aside means moved out of the workspace into custos' state directory
// (QuarantineDir: a directory of the run under <state>/quarantine), never
// into the workspace: a quarantine the host's tools can see would still be
// a repository git finds, and nothing there is mounted into a sandbox, so
// no later command can put it back. What is kept there loses its execute
// bits. Stripped means the file stays, minus the entries that are not
// inert; the version the command left is kept in the quarantine all the
// same. The result tells the model, and Result.HostConfig carries it to
// the activity's result and the job's record.

// Change is one thing a command left that a tool on the host
// would run or take direction from, and what custos did with it.
type Change struct {
	// Path is relative to the workspace.
	Path string `json:"path"`
	// What it is: "git hook", "git config", "git directory pointer",
	// "git commondir", "version-control config".
	What string `json:"what"`
	// Action: "set aside", "stripped of core.fsmonitor, core.pager", ...
	Action string `json:"action"`
}

func (c Change) String() string {
	return fmt.Sprintf("%s (%s): %s", c.Path, c.What, c.Action)
}

// Guard is one command's watch over host config: the snapshot taken
// before it, and where to keep what is set aside.
type Guard struct {
	ws       string
	before   *hostSnapshot
	qroot    string
	budget   int
	listings *hostfs.HostListings
	// pending is the snapshot's file (pending.go), emptied by
	// finish; recoveredFrom the file of an interrupted command's snapshot,
	// removed by finish; recovered what an interrupted earlier command in
	// ws left.
	pending       *pendingFile
	recoveredFrom string
	recovered     Report
	// overlay is the run's overlay directory (overlay.go), ""
	// when the command wrote to the workspace directly; view is set in the
	// helper that checks a merged view, where the workspace's files are
	// the overlay's (another device, and for a changed file another inode).
	overlay string
	view    bool
	// overlays takes overlay back once applied (nil: it is removed).
	overlays *OverlayPool
	// listDir lists the directories of the walk after the command (nil:
	// as the snapshot before did).
	listDir func(rel, abs string) ([]hostfs.DirEnt, error)
	// beforeMerge is told of the overlay's upper layer before it is
	// applied (OnMerge).
	beforeMerge MergeHook
	// seeds are the upper layer's suspects, which the check looks at
	// first, wherever they are (include.go).
	seeds []string
}

// MergeHook is told, before anything of the upper layer upper is applied
// to the workspace, that it is about to be (the job's checkpoint records
// the workspace's side of every path it touches); done is called with
// the merge's error once the merge ended. An error refuses the merge: the
// upper layer is kept, as for a merge that failed.
type MergeHook func(upper string) (done func(error), err error)

// OnMerge sets the hook the overlay's merge tells first (nil: none).
func (g *Guard) OnMerge(h MergeHook) { g.beforeMerge = h }

// GuardHostConfig takes the snapshot before a command in ws (canonical);
// listings (may be nil) keeps directory listings between runs. What an
// interrupted earlier command in ws left is neutralised first.
func (c Settings) Guard(ws string, listings *hostfs.HostListings) *Guard {
	return c.GuardWith(ws, listings, listings.Take(ws), "", nil)
}

// GuardWith is guardHostConfig with the listings to start from (dirs, nil
// for none) already taken from listings, for a run on overlay ("" none),
// which goes back to overlays once applied.
func (c Settings) GuardWith(ws string, listings *hostfs.HostListings, dirs *hostfs.DirListings, overlay string, overlays *OverlayPool) *Guard {
	recovered := c.recoverInterrupted(ws)
	home := gitdir.Home()
	before := takeSnapshot(ws, snapOpts{budget: c.ScanEntries, keep: true, dirs: dirs, modules: overlay == "",
		home: home, hostConfigs: gitdir.HostConfigs(home)})
	g := &Guard{ws: ws, before: before,
		qroot: c.Quarantine(), budget: c.ScanEntries, listings: listings, recovered: recovered,
		overlay: overlay, overlays: overlays}
	g.pending = c.savePending(g.before, overlay)
	return g
}

// Settings are where the host guard keeps what it sets aside, its runs'
// overlays and the snapshots of running commands, and how much of a
// workspace one walk reads. The sandbox's Config holds them.
type Settings struct {
	// CacheDir is the workspace caches' directory: the guard's own
	// directories are beside it (unless QuarantineDir names one).
	CacheDir string
	// QuarantineDir is where what the guard sets aside is kept.
	QuarantineDir string
	// ScanEntries is the directory-entry budget of one walk (0: the
	// default, about 0.4 s of readdir).
	ScanEntries int
}

// Report is what the host guard did to a command's writes, part of the
// command's result.
type Report struct {
	// HostConfig is what the command created or changed that a tool on
	// the host would run (git hooks, git config naming programs, pointers
	// to repositories), each neutralised before Run returned; what was set
	// aside is kept in HostConfigKept. HostConfigUnchecked says when part
	// of the workspace was too large to check. HostConfigNote words them
	// for the model.
	HostConfig          []Change `json:"hostConfig,omitempty"`
	HostConfigKept      string   `json:"hostConfigKept,omitempty"`
	HostConfigUnchecked string   `json:"hostConfigUnchecked,omitempty"`
	// Unmerged says what of the command's writes custos could not apply
	// to the workspace from its overlay, and where it kept them.
	Unmerged string `json:"unmerged,omitempty"`
	// Withheld is what of the command's writes custos did not apply as the
	// command left them: protected names it created, set-uid and set-gid
	// bits, fifos and sockets.
	Withheld []Change `json:"withheld,omitempty"`
}

// Quarantine is Settings.QuarantineDir, or <state>/quarantine beside the
// workspace caches (neither is ever mounted into a sandbox).
func (c Settings) Quarantine() string {
	switch {
	case c.QuarantineDir != "":
		return c.QuarantineDir
	case c.CacheDir != "":
		return filepath.Join(filepath.Dir(filepath.Clean(c.CacheDir)), "quarantine")
	}
	if d, err := statedir.Dir(); err == nil {
		return filepath.Join(d, "quarantine") // beside the default sandbox-cache
	}
	return filepath.Join(os.TempDir(), "custos-quarantine")
}

// Finish runs after the command, however it ended: it finds what the
// command created or changed and neutralises it, and records that in res.
func (g *Guard) Finish(res *Report) {
	if g.pending != nil {
		defer g.pending.done()
	}
	if g.recoveredFrom != "" {
		defer os.Remove(g.recoveredFrom)
	}
	if g.overlay != "" {
		g.finishOverlay(res)
		g.listings.Put(g.ws, g.before.dirs.Done())
	} else {
		after := g.check(res)
		g.listings.Put(g.ws, after.dirs.Done())
	}
	if len(g.recovered.HostConfig) > 0 {
		res.HostConfig = append(slices.Clip(g.recovered.HostConfig), res.HostConfig...)
		if res.HostConfigKept == "" {
			res.HostConfigKept = g.recovered.HostConfigKept
		}
	}
}

// sameSig reports whether the command left a file as it was. On a merged
// view a file it did not touch is the lower layer's, shown on the
// overlay's device (and, with layers on two file systems, under another
// inode number); its times and size still say whether it changed: a
// change copies it up, which sets its ctime to now.
func (g *Guard) sameSig(a, b hostfs.FileSig) bool {
	if g.view {
		a.Dev, a.Ino, b.Dev, b.Ino = 0, 0, 0, 0
	}
	return a == b
}

// check finds what the command created or changed and neutralises it,
// recording that in res; it returns the snapshot after.
func (g *Guard) check(res *Report) *hostSnapshot {
	b := g.before
	after := takeSnapshot(g.ws, snapOpts{budget: g.budget, dirs: b.dirs.Done(), listDir: g.listDir,
		modules: b.modules, home: b.home, hostConfigs: b.hostConfigs, seeds: g.seeds})
	q := &quarantine{root: g.qroot, ws: g.ws}
	paths := make([]string, 0, len(after.items))
	for rel := range after.items {
		paths = append(paths, rel)
	}
	slices.Sort(paths)
	unchecked := 0
	for _, rel := range paths {
		it := after.items[rel]
		old, had := g.before.items[rel]
		if had && g.sameSig(old.sig, it.sig) {
			continue // the command did not touch it
		}
		if !had && !g.before.covers(it) && !g.wrote(rel) {
			unchecked++ // the snapshot never looked there: not ours to judge
			continue
		}
		if c, ok := g.neutralise(rel, it, had, after, q); ok {
			res.HostConfig = append(res.HostConfig, c)
		}
	}
	if len(res.HostConfig) > 0 {
		res.HostConfigKept = q.dir
		q.manifest(res.HostConfig)
	}
	if g.before.truncated || after.truncated {
		res.HostConfigUnchecked = fmt.Sprintf("the workspace holds more than %d directory entries, so custos checked only its first %d (shallowest first) for git directories, hooks and config this call may have left for the host to run", after.budget, after.budget)
		if unchecked > 0 {
			res.HostConfigUnchecked += fmt.Sprintf("; %d such files were left as they are because custos could not tell whether the command made them", unchecked)
		}
	}
	return after
}

// neutralise handles one created or changed item.
func (g *Guard) neutralise(rel string, it hsItem, had bool, after *hostSnapshot, q *quarantine) (Change, bool) {
	c := Change{Path: rel, What: it.kind.String()}
	abs := after.abs(rel)
	if it.kind != hsHook && !it.sig.Mode.IsRegular() {
		// A symbolic link can lead to a file the next command changes
		// without touching the link; a FIFO or a device is no config.
		c.Action = q.setAside(rel)
		return c, true
	}
	switch it.kind {
	case hsHook:
		c.Action = q.setAside(rel)
	case hsCommondir:
		b, err := gitdir.ReadRegular(abs)
		target := strings.TrimSpace(string(b))
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(abs), target)
		}
		if err == nil && target != "" && after.isGitDir(target) {
			return c, false
		}
		c.Action = q.setAside(rel)
	case hsGitPointer:
		if t, ok := after.pointerTarget(rel); ok && after.gitdirs[t] {
			return c, false // a repository the walk sees, judged on its own
		}
		c.Action = q.setAside(rel)
	case hsGitConfig, hsGitInclude:
		return g.gitConfig(c, rel, had, q)
	case hsVCSConfig:
		old, kept := g.before.content[rel]
		if !had || !kept {
			c.Action = q.setAside(rel)
			return c, true
		}
		cur, _ := gitdir.ReadRegular(abs)
		q.keep(rel, cur)
		if err := writeReplacing(abs, old); err != nil {
			c.Action = q.setAside(rel)
			return c, true
		}
		c.Action = "restored to what it was before the command"
	}
	return c, true
}

// wrote reports whether the command wrote rel, for certain: it is in the
// upper layer of the run's overlay (false without one).
func (g *Guard) wrote(rel string) bool {
	if g.overlay == "" {
		return false
	}
	_, err := os.Lstat(filepath.Join(g.overlay, "upper", rel))
	return err == nil
}

// isGitDir reports whether abs (symlinks resolved) is a git directory the
// walk found.
func (s *hostSnapshot) isGitDir(abs string) bool {
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return false
	}
	rel, ok := s.inside(real)
	return ok && s.gitdirs[rel]
}

// gitConfig strips a git config file of the entries the command added that
// are not inert; without git on the worker, or when git cannot read the
// file, the file is set aside whole.
func (g *Guard) gitConfig(c Change, rel string, had bool, q *quarantine) (Change, bool) {
	abs := filepath.Join(g.ws, rel)
	git, ok := findHostGit()
	data, err := gitdir.ReadRegular(abs)
	if !ok || err != nil {
		c.Action = q.setAside(rel)
		return c, true
	}
	stage, err := os.MkdirTemp("", "custos-hostconfig-")
	if err != nil {
		c.Action = q.setAside(rel)
		return c, true
	}
	defer os.RemoveAll(stage)
	old, kept := g.before.content[rel]
	active, err := git.activeEntries(stage, data, old, had && kept)
	switch {
	case err != nil:
		c.Action = q.setAside(rel) + " (git cannot read it)"
		return c, true
	case len(active) == 0:
		return c, false
	}
	q.keep(rel, data)
	stripped, err := git.strip(stage, data, active)
	if err == nil {
		var left []gitEntry
		if left, err = git.activeEntries(stage, stripped, old, had && kept); err == nil && len(left) > 0 {
			err = fmt.Errorf("%d entries remain", len(left))
		}
	}
	if err == nil {
		err = writeReplacing(abs, stripped)
	}
	if err != nil {
		c.Action = q.setAside(rel)
		return c, true
	}
	keys := make([]string, 0, len(active))
	for _, e := range active {
		if !slices.Contains(keys, e.key) {
			keys = append(keys, e.key)
		}
	}
	c.Action = "stripped of " + strings.Join(keys, ", ")
	return c, true
}

// writeReplacing writes data to path by a rename of a new file in the same
// directory (never through a link at path), keeping path's permissions.
func writeReplacing(path string, data []byte) error {
	perm := fs.FileMode(0o644)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		perm = fi.Mode().Perm() &^ 0o111
	}
	tmp := filepath.Join(filepath.Dir(path), ".custos-host-config-"+hostfs.RandHex())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// quarantine is one run's directory under root, made when first needed.
type quarantine struct {
	root, ws, dir string
	err           error
}

func (q *quarantine) open() error {
	if q.dir != "" || q.err != nil {
		return q.err
	}
	if q.err = os.MkdirAll(q.root, 0o700); q.err != nil {
		return q.err
	}
	name := time.Now().UTC().Format("20060102T150405Z") + "-" + filepath.Base(q.ws) + "-" + hostfs.RandHex()
	d := filepath.Join(q.root, name)
	if q.err = os.Mkdir(d, 0o700); q.err == nil {
		q.dir = d
	}
	return q.err
}

// setAside moves rel out of the workspace into the quarantine, and says
// what became of it. When it cannot be kept it is removed all the same:
// what the host would run must not stay.
func (q *quarantine) setAside(rel string) string {
	src := filepath.Join(q.ws, rel)
	if err := q.moveIn(src, rel); err != nil {
		if rerr := os.RemoveAll(src); rerr != nil {
			return fmt.Sprintf("could NOT be removed (%v)", rerr)
		}
		return fmt.Sprintf("removed (could not be kept: %v)", err)
	}
	return "set aside"
}

// moveIn moves src into the quarantine as rel, by a rename or, across
// file systems, a copy, and takes the execute bits off what it kept.
func (q *quarantine) moveIn(src, rel string) error {
	if err := q.open(); err != nil {
		return err
	}
	dst := filepath.Join(q.dir, rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	err := os.Rename(src, dst)
	if errors.Is(err, syscall.EXDEV) {
		if err = copyTree(src, dst); err == nil {
			err = hostfs.RemoveAllWritable(src)
		}
	}
	defang(dst)
	return err
}

// keep stores the version of rel the command left, before it is stripped.
func (q *quarantine) keep(rel string, data []byte) {
	if q.open() != nil {
		return
	}
	dst := filepath.Join(q.dir, rel)
	if os.MkdirAll(filepath.Dir(dst), 0o700) == nil {
		_ = os.WriteFile(dst, data, 0o600)
	}
}

// manifest records the run's changes beside what was kept.
func (q *quarantine) manifest(cs []Change) {
	if q.dir == "" {
		return
	}
	b, _ := json.MarshalIndent(struct {
		Workspace string    `json:"workspace"`
		Time      time.Time `json:"time"`
		Changes   []Change  `json:"changes"`
	}{q.ws, time.Now().UTC(), cs}, "", "  ")
	_ = os.WriteFile(filepath.Join(q.dir, "manifest.json"), append(b, '\n'), 0o600)
}

// defang takes the execute bits off what was set aside.
func defang(root string) {
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		if d.IsDir() {
			_ = os.Chmod(p, 0o700)
		} else {
			_ = os.Chmod(p, 0o600)
		}
		return nil
	})
}

// maxQuarantineCopy bounds a cross-device copy into the quarantine.
const maxQuarantineCopy = 64 << 20

// copyTree copies src (a file, a symlink or a directory) to dst, for a
// quarantine on another file system; too much to copy is an error.
func copyTree(src, dst string) error {
	budget := int64(maxQuarantineCopy)
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(t, to)
		case d.IsDir():
			return os.MkdirAll(to, 0o700)
		case !d.Type().IsRegular():
			return nil // a FIFO or device: nothing to keep
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		n, err := io.Copy(out, io.LimitReader(in, budget+1))
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if budget -= n; err == nil && budget < 0 {
			err = fmt.Errorf("more than %d bytes", maxQuarantineCopy)
		}
		return err
	})
}

// HostConfigNote is what the model is told about Result.HostConfig and
// Result.HostConfigUnchecked ("" when there is nothing to say).
func (r Report) HostConfigNote() string {
	var parts []string
	if len(r.HostConfig) > 0 {
		items := make([]string, len(r.HostConfig))
		for i, c := range r.HostConfig {
			items[i] = c.String()
		}
		s := "custos neutralised what this call left for tools on the host to run " +
			"(git on the host runs hooks and config such as core.fsmonitor in any repository an editor or shell prompt shows): " +
			strings.Join(items, "; ")
		if r.HostConfigKept != "" {
			s += ". The originals are kept for the user in " + r.HostConfigKept
		}
		parts = append(parts, s+". Do not recreate them; if the work needs them, ask the user to set them up on the host")
	}
	if r.HostConfigUnchecked != "" {
		parts = append(parts, r.HostConfigUnchecked)
	}
	if len(r.Withheld) > 0 {
		items := make([]string, len(r.Withheld))
		for i, c := range r.Withheld {
			items[i] = c.String()
		}
		parts = append(parts, "custos did not apply all this call wrote as it left it: "+strings.Join(items, "; "))
	}
	if r.Unmerged != "" {
		parts = append(parts, r.Unmerged)
	}
	return strings.Join(parts, ". ")
}
