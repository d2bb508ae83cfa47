package retention

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/custos-dev/custos/sandbox/hostfs"
)

// Cursor is a position in a pass's walk: the workspaces (each its jobs,
// then its blobs), then the caches, then the quarantine, each in name
// order. A pass goes on strictly after it.
type Cursor struct {
	Area int    `json:"area,omitempty"` // 0: before everything
	Dir  string `json:"dir,omitempty"`
	Step int    `json:"step,omitempty"`
	Name string `json:"name,omitempty"`
}

// Areas of the walk, in order.
const (
	areaWorkspaces = 1 + iota
	areaCaches
	areaQuarantine
)

// Steps within a workspace.
const (
	stepJobs = iota
	stepBlobs
	stepCheckpoints
)

func (c Cursor) compare(d Cursor) int {
	return cmp.Or(cmp.Compare(c.Area, d.Area), strings.Compare(c.Dir, d.Dir),
		cmp.Compare(c.Step, d.Step), strings.Compare(c.Name, d.Name))
}

type planner struct {
	in      Input
	lim     Limits
	open    map[string]bool // open jobs by FileName
	plan    Plan
	gone    map[string]bool // paths this plan removes
	stopped bool
}

// PlanPass plans one bounded pass. It removes nothing (Apply does).
func PlanPass(in Input) (Plan, error) {
	p := &planner{in: in, lim: in.Limits, open: map[string]bool{}, gone: map[string]bool{}}
	p.plan.Freed = map[Kind]int64{}
	if p.lim.MaxExamined <= 0 {
		p.lim.MaxExamined = DefaultMaxExamined
	}
	if p.lim.MaxRemoved <= 0 {
		p.lim.MaxRemoved = DefaultMaxRemoved
	}
	for id := range in.Open {
		p.open[FileName(id)] = true
	}
	if !in.OpenKnown {
		p.plan.JobFilesKept = "the open jobs are unknown (no Temporal server answered): no transcript, audit or blob is removed"
	}
	for _, step := range []func() error{p.workspaces, p.caches, p.quarantine, p.serverHomes} {
		if err := step(); err != nil {
			return Plan{}, err
		}
	}
	if p.stopped {
		return p.plan, nil
	}
	p.plan.Done, p.plan.Next = true, Cursor{}
	if in.Policy.MaxBytes > 0 {
		if err := p.overCap(); err != nil {
			return Plan{}, err
		}
	}
	return p.plan, nil
}

// visit says whether this pass looks at key: not when an earlier pass did,
// nor once the pass's budget is spent (then the pass stops there).
func (p *planner) visit(key Cursor) bool {
	if p.stopped || p.in.Cursor.compare(key) >= 0 {
		return false
	}
	if p.plan.Examined >= p.lim.MaxExamined || len(p.plan.Remove) >= p.lim.MaxRemoved {
		p.stopped = true
		return false
	}
	p.plan.Next = key
	return true
}

func (p *planner) add(e Entry) {
	p.plan.Remove = append(p.plan.Remove, e)
	p.plan.Freed[e.Kind] += e.Bytes
	p.gone[e.Path] = true
}

// old says whether an entry last changed at t is past the retention d.
func (p *planner) old(t time.Time, d time.Duration) bool { return p.in.Now.Sub(t) > d }

// dirNames lists dir's entries in name order; a missing dir is empty.
func dirNames(dir string) ([]os.DirEntry, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("retention: listing %s: %w", dir, err)
	}
	return ents, nil
}

func (p *planner) workspaces() error {
	if !p.in.OpenKnown {
		// Fail closed: a job we cannot tell ended keeps all its files.
		return nil
	}
	ents, err := dirNames(filepath.Join(p.in.State, workspacesDir))
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() || p.stopped {
			continue
		}
		if err := p.jobs(e.Name()); err != nil {
			return err
		}
		if err := p.blobs(e.Name()); err != nil {
			return err
		}
		if err := p.checkpoints(e.Name()); err != nil {
			return err
		}
	}
	return nil
}

// jobNames are the jobs that have a transcript or an audit in ws.
func jobNames(wsDir string) ([]string, error) {
	var names []string
	for _, sub := range []string{sessionsDir, auditDir} {
		ents, err := dirNames(filepath.Join(wsDir, sub))
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if n, ok := strings.CutSuffix(e.Name(), jobExt); ok && e.Type().IsRegular() {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// jobs plans the removal of the files of ws's ended jobs past their
// retention: the transcript after Policy.JobFiles, the audit after
// Policy.Audits. An open job's files stay, whatever their age.
func (p *planner) jobs(ws string) error {
	wsDir := filepath.Join(p.in.State, workspacesDir, ws)
	names, err := jobNames(wsDir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if !p.visit(Cursor{Area: areaWorkspaces, Dir: ws, Step: stepJobs, Name: name}) {
			continue
		}
		p.plan.Examined++
		if p.open[name] {
			continue
		}
		for _, f := range []struct {
			kind Kind
			dir  string
			keep time.Duration
		}{{Transcripts, sessionsDir, p.in.Policy.JobFiles}, {Audits, auditDir, p.in.Policy.Audits}} {
			path := filepath.Join(wsDir, f.dir, name+jobExt)
			fi, err := os.Lstat(path)
			if err != nil || !fi.Mode().IsRegular() || !p.old(fi.ModTime(), f.keep) {
				continue
			}
			p.add(Entry{Kind: f.kind, Path: path, Workspace: ws, Job: name, Bytes: fi.Size(), ModTime: fi.ModTime(),
				Why: "job ended, unchanged for " + age(p.in.Now.Sub(fi.ModTime()))})
		}
	}
	return nil
}

// blobMark is how a transcript names a blob (api.BlobMarker).
var blobMark = []byte("[custos-blob sha256:")

// blobs plans the removal of ws's blobs past Policy.JobFiles that no
// transcript staying after this pass names. The transcripts are read
// whole each time, so a blob a live or young transcript names is never
// taken; should one not be readable, no blob of ws goes.
func (p *planner) blobs(ws string) error {
	prev := p.plan.Next
	if !p.visit(Cursor{Area: areaWorkspaces, Dir: ws, Step: stepBlobs}) {
		return nil
	}
	sessions := filepath.Join(p.in.State, workspacesDir, ws, sessionsDir)
	ents, err := dirNames(filepath.Join(sessions, blobsDir))
	if err != nil || len(ents) == 0 {
		return err
	}
	named, err := p.namedBlobs(sessions)
	if err != nil {
		return nil // fail closed: keep every blob of ws
	}
	p.sweep(sweep{kind: Blobs, ws: ws, dir: filepath.Join(sessions, blobsDir), ents: ents, named: named, prev: prev,
		why: "no transcript kept names it", state: func(fi fs.FileInfo) (time.Time, int64) { return fi.ModTime(), fi.Size() }})
	return nil
}

// sweep is a directory of content-addressed files (64 hex digits a name)
// of which those named are kept.
type sweep struct {
	kind  Kind
	ws    string
	dir   string
	ents  []os.DirEntry
	named map[string]bool
	// prev is where the next pass starts when this one stops within.
	prev Cursor
	// why says what does not name a file removed ("no … names it").
	why string
	// state is a file's last change and the bytes removing it frees.
	state func(fs.FileInfo) (time.Time, int64)
}

// sweep plans the removal of s's files that are not named and unchanged
// for Policy.JobFiles (blobs no transcript names, checkpoint objects no
// record names). Stopped within at the pass's limit, the next pass starts
// again at s.prev and reads what names the files anew.
func (p *planner) sweep(s sweep) {
	for _, e := range s.ents {
		if len(p.plan.Remove) >= p.lim.MaxRemoved {
			p.stopped, p.plan.Next = true, s.prev
			return
		}
		p.plan.Examined++
		if len(e.Name()) != 64 || s.named[e.Name()] {
			continue
		}
		path := filepath.Join(s.dir, e.Name())
		fi, err := os.Lstat(path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		changed, bytes := s.state(fi)
		if !p.old(changed, p.in.Policy.JobFiles) {
			continue
		}
		p.add(Entry{Kind: s.kind, Path: path, Workspace: s.ws, Bytes: bytes, ModTime: changed,
			Why: s.why + ", unchanged for " + age(p.in.Now.Sub(changed))})
	}
}

// namedBlobs reads every transcript in sessions this plan keeps and
// returns the blobs they name.
func (p *planner) namedBlobs(sessions string) (map[string]bool, error) {
	ents, err := dirNames(sessions)
	if err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, e := range ents {
		path := filepath.Join(sessions, e.Name())
		if !strings.HasSuffix(e.Name(), jobExt) || p.gone[path] {
			continue
		}
		p.plan.Examined++
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("retention: reading %s: %w", path, err)
		}
		for rest := data; ; {
			i := bytes.Index(rest, blobMark)
			if i < 0 {
				break
			}
			rest = rest[i+len(blobMark):]
			if len(rest) >= 64 {
				named[string(rest[:64])] = true
			}
		}
	}
	return named, nil
}

// caches plans the removal of workspace caches unused for Policy.Caches
// (Apply leaves one a command holds).
func (p *planner) caches() error {
	root := filepath.Join(p.in.State, cacheDir)
	ents, err := dirNames(root)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || !p.visit(Cursor{Area: areaCaches, Dir: e.Name()}) {
			continue
		}
		p.plan.Examined++
		if ent, ok := cacheEntry(filepath.Join(root, e.Name())); ok && p.old(ent.ModTime, p.in.Policy.Caches) {
			ent.Why = "unused for " + age(p.in.Now.Sub(ent.ModTime))
			p.add(ent)
		}
	}
	return nil
}

// cacheEntry describes a workspace cache: its last use is the mtime of
// its "used" file, its size the one last measured (a walk of a large
// build cache is what a bounded pass must not do).
func cacheEntry(dir string) (Entry, bool) {
	fi, err := os.Lstat(filepath.Join(dir, "used"))
	if err != nil {
		if fi, err = os.Lstat(dir); err != nil {
			return Entry{}, false
		}
	}
	e := Entry{Kind: Caches, Path: dir, Workspace: filepath.Base(dir), ModTime: fi.ModTime()}
	if b, err := os.ReadFile(filepath.Join(dir, "size")); err == nil {
		e.Bytes, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	return e, true
}

// quarantine plans the removal of quarantined runs older than
// Policy.Quarantine.
func (p *planner) quarantine() error {
	root := filepath.Join(p.in.State, quarantineDir)
	ents, err := dirNames(root)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !p.visit(Cursor{Area: areaQuarantine, Dir: e.Name()}) {
			continue
		}
		p.plan.Examined++
		path := filepath.Join(root, e.Name())
		fi, err := os.Lstat(path)
		if err != nil || !p.old(fi.ModTime(), p.in.Policy.Quarantine) {
			continue
		}
		p.add(Entry{Kind: Quarantine, Path: path, Bytes: hostfs.TreeSize(path), ModTime: fi.ModTime(),
			Why: "set aside " + age(p.in.Now.Sub(fi.ModTime())) + " ago"})
	}
	return nil
}

// age writes d in days, or hours under two days.
func age(d time.Duration) string {
	if d < 48*time.Hour {
		return strconv.Itoa(int(d.Hours())) + "h"
	}
	return strconv.Itoa(int(d.Hours()/24)) + " days"
}
