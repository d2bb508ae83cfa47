package retention

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/custos-dev/custos/sandbox/hostfs"
)

// overCap, once a pass has reached the end of the walk, plans the removal
// of the oldest removable entries until the state directory fits
// Policy.MaxBytes: ended jobs' transcripts, caches, the quarantine. Never
// an open job's files, never an audit younger than its retention (the age
// rules already took the older ones), never a blob (one goes once no
// transcript names it), never an overlay or snapshot.
func (p *planner) overCap() error {
	u, err := Measure(p.in.State, false)
	if err != nil {
		return err
	}
	total := u.Total - p.plan.Bytes()
	if total <= p.in.Policy.MaxBytes {
		return nil
	}
	cands, err := p.capCandidates()
	if err != nil {
		return err
	}
	slices.SortStableFunc(cands, func(a, b Entry) int { return a.ModTime.Compare(b.ModTime) })
	why := "over the cap of " + strconv.FormatInt(p.in.Policy.MaxBytes, 10) + " bytes, oldest first"
	for _, c := range cands {
		if total <= p.in.Policy.MaxBytes || len(p.plan.Remove) >= p.lim.MaxRemoved {
			break
		}
		c.Why = why
		p.add(c)
		total -= c.Bytes
	}
	return nil
}

// capCandidates lists what the cap may take that the plan does not yet.
func (p *planner) capCandidates() ([]Entry, error) {
	var out []Entry
	keep := func(e Entry) {
		if !p.gone[e.Path] {
			out = append(out, e)
		}
	}
	if p.in.OpenKnown {
		if err := eachDir(filepath.Join(p.in.State, workspacesDir), func(d string) {
			ents, _ := os.ReadDir(filepath.Join(d, sessionsDir))
			for _, e := range ents {
				name, ok := strings.CutSuffix(e.Name(), jobExt)
				if fi, err := e.Info(); ok && !p.open[name] && err == nil && fi.Mode().IsRegular() {
					keep(Entry{Kind: Transcripts, Path: filepath.Join(d, sessionsDir, e.Name()), Workspace: filepath.Base(d),
						Job: name, Bytes: fi.Size(), ModTime: fi.ModTime()})
				}
			}
		}); err != nil {
			return nil, err
		}
	}
	if err := eachDir(filepath.Join(p.in.State, cacheDir), func(d string) {
		if e, ok := cacheEntry(d); ok {
			keep(e)
		}
	}); err != nil {
		return nil, err
	}
	ents, err := dirNames(filepath.Join(p.in.State, quarantineDir))
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		path := filepath.Join(p.in.State, quarantineDir, e.Name())
		if fi, err := os.Lstat(path); err == nil {
			keep(Entry{Kind: Quarantine, Path: path, Bytes: hostfs.TreeSize(path), ModTime: fi.ModTime()})
		}
	}
	return out, nil
}
