package checkpoint

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/custos-dev/custos/sandbox/pathguard"
)

// Plan is what putting a job's workspace back as it was at the end of
// turn To takes: each path the job changed after it, with the state to
// put back (Before) and the one the job left (After).
type Plan struct {
	Job     string   `json:"job"`
	To      int      `json:"to"`
	Restore []Change `json:"restore"`
	// Conflicts are the paths that no longer hold what the job left
	// (someone else changed them since): not overwritten without force.
	Conflicts []Conflict `json:"conflicts,omitempty"`
	// Head is the git HEAD when the first call after To began ("" none):
	// commits since then stay, a rewind never touches .git.
	Head string `json:"head,omitempty"`
	// Notes are what the calls after To did that no rewind undoes.
	Notes []string `json:"notes,omitempty"`
	// Calls counts the calls after To.
	Calls int `json:"calls"`
}

// Conflict is a path someone else changed since the job did.
type Conflict struct {
	Path string `json:"path"`
	Left Entry  `json:"left"` // what the job left
	Now  Entry  `json:"now"`
}

// PlanRewind works out the rewind of job's changes in ws after turn to,
// from its records: each path goes back to its state before the first
// call after to that changed it, if it still holds what the last one left.
func (s Store) PlanRewind(job, ws string, to int) (Plan, error) {
	recs, err := s.Records(job)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Job: job, To: to}
	first := map[string]int{}
	// accept are the states a path may hold and still be the job's: the
	// last After, or its Before when that call may not have finished.
	accept := map[string][]Entry{}
	for _, r := range recs {
		if r.Turn <= to {
			continue
		}
		if p.Calls == 0 {
			p.Head = r.Head
		}
		p.Calls++
		for _, n := range r.Notes {
			p.Notes = append(p.Notes, fmt.Sprintf("turn %d, %s %s: %s", r.Turn, r.Tool, r.Call, n))
		}
		for _, c := range r.Changes {
			if _, ok := first[c.Path]; !ok {
				first[c.Path] = len(p.Restore)
				p.Restore = append(p.Restore, c)
			}
			p.Restore[first[c.Path]].After = c.After
			accept[c.Path] = []Entry{c.After}
			if !r.Done {
				accept[c.Path] = append(accept[c.Path], c.Before)
			}
		}
	}
	return p, s.conflicts(ws, &p, accept)
}

// conflicts fills p.Conflicts: the paths whose state now is none of
// accept's.
func (s Store) conflicts(ws string, p *Plan, accept map[string][]Entry) error {
	root, err := pathguard.OpenRoot(ws)
	if err != nil {
		return fmt.Errorf("rewind: open the workspace: %w", err)
	}
	defer root.Close()
	for _, c := range p.Restore {
		now, err := s.capture(root, filepath.FromSlash(c.Path), nil)
		if errors.Is(err, pathguard.ErrPathChanged) {
			// A link on the way (a command left one where a directory
			// was): nothing is at this name unless the link is followed,
			// which a rewind never does. The link's own path, when the
			// job changed it, is restored first (stepOrder).
			now, err = Entry{Kind: Absent}, nil
		}
		if err != nil {
			return fmt.Errorf("rewind: %w", err)
		}
		if !slices.ContainsFunc(accept[c.Path], now.Same) {
			p.Conflicts = append(p.Conflicts, Conflict{Path: c.Path, Left: c.After, Now: now})
		}
	}
	return nil
}

// ErrConflicts is ApplyRewind's refusal to overwrite what someone else
// changed.
var ErrConflicts = errors.New("files changed since the job left them")

// Applied is what a rewind did.
type Applied struct {
	Restored int      `json:"restored"`
	Failed   []string `json:"failed,omitempty"`
}

// ApplyRewind puts p's paths back in ws: removals deepest first, then
// directories, files and links shallowest first. It refuses when p has
// conflicts, unless force. A directory that still holds what the job
// never made is not removed (Failed names it).
func (s Store) ApplyRewind(ws string, p Plan, force bool) (Applied, error) {
	if len(p.Conflicts) > 0 && !force {
		return Applied{}, ErrConflicts
	}
	out, err := s.apply(ws, p.Restore)
	if err != nil {
		return out, err
	}
	return out, s.retire(p.Job, p.To)
}

// apply puts each change's Before at its path in ws.
func (s Store) apply(ws string, changes []Change) (Applied, error) {
	root, err := pathguard.OpenRoot(ws)
	if err != nil {
		return Applied{}, fmt.Errorf("rewind: open the workspace: %w", err)
	}
	defer root.Close()
	steps := slices.Clone(changes)
	slices.SortStableFunc(steps, stepOrder)
	var out Applied
	for _, c := range steps {
		if InGit(c.Path) || c.Before.Kind == Other {
			continue
		}
		if err := s.restore(root, filepath.FromSlash(c.Path), c.Before); err != nil {
			out.Failed = append(out.Failed, fmt.Sprintf("%s: %v", c.Path, err))
			continue
		}
		out.Restored++
	}
	return out, nil
}

// PutAt makes the paths job changed in ws (a fresh checkout: a fork's
// worktree) hold what they held at the end of turn: the state before
// the first later call that changed them, else the last call's result.
func (s Store) PutAt(ws, job string, turn int) (Applied, error) {
	recs, err := s.Records(job)
	if err != nil {
		return Applied{}, err
	}
	at := map[string]int{}
	fixed := map[string]bool{} // a later call found its state
	var states []Change
	for _, r := range recs {
		for _, c := range r.Changes {
			i, seen := at[c.Path]
			if !seen {
				i = len(states)
				at[c.Path] = i
				states = append(states, Change{Path: c.Path})
			}
			switch {
			case r.Turn <= turn:
				states[i].Before = c.After
			case !fixed[c.Path]:
				states[i].Before, fixed[c.Path] = c.Before, true
			}
		}
	}
	return s.apply(ws, states)
}

// retire moves job's records after turn to aside (into rewound/): what
// they changed is undone, so a later rewind must not undo it again, and
// the job's next turns may reuse their numbers.
func (s Store) retire(job string, to int) error {
	recs, err := s.Records(job)
	if err != nil {
		return err
	}
	dir := filepath.Join(s.JobDir(job), "rewound")
	for _, r := range recs {
		if r.Turn <= to {
			continue
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("rewind: %w", err)
		}
		if err := os.Rename(filepath.Join(s.JobDir(job), recordName(r)), filepath.Join(dir, recordName(r))); err != nil {
			return fmt.Errorf("rewind: set the rewound records aside: %w", err)
		}
	}
	return nil
}

// stepOrder puts removals first, deepest first, then the rest
// shallowest first, so a directory exists before what goes in it and is
// empty before it goes.
func stepOrder(a, b Change) int {
	ra, rb := a.Before.Kind == Absent, b.Before.Kind == Absent
	switch {
	case ra && !rb:
		return -1
	case rb && !ra:
		return 1
	case ra:
		return depth(b.Path) - depth(a.Path)
	}
	if d := depth(a.Path) - depth(b.Path); d != 0 {
		return d
	}
	return strings.Compare(a.Path, b.Path)
}

func depth(p string) int { return strings.Count(p, "/") }

// restore puts e at rel in root. Every name is opened as the file tools
// open theirs (pathguard.Root): a link on rel's way, where the records
// say a directory was (swapped in since the plan, or left by someone
// else), fails the step, which Failed names, and nothing is read, written
// or removed through it.
func (s Store) restore(root *pathguard.Root, rel string, e Entry) error {
	fi, err := root.Lstat(rel)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	switch e.Kind {
	case Absent:
		if !exists {
			return nil
		}
		return root.Remove(rel)
	case Dir:
		if exists && fi.IsDir() {
			return root.Chmod(rel, fs.FileMode(e.Mode).Perm())
		}
		if exists {
			if err := root.Remove(rel); err != nil {
				return err
			}
		}
		if err := root.Mkdir(rel, 0o700); err != nil {
			return err
		}
		return root.Chmod(rel, fs.FileMode(e.Mode).Perm())
	}
	if exists && fi.IsDir() {
		if err := root.Remove(rel); err != nil {
			return err
		}
	}
	return s.place(root, rel, e)
}

// place makes a file or link e beside rel and renames it over rel.
func (s Store) place(root *pathguard.Root, rel string, e Entry) error {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(rel), ".custos-rewind-"+hex.EncodeToString(rnd[:]))
	if e.Kind == Symlink {
		if err := root.Symlink(e.Target, tmp); err != nil {
			return err
		}
		return renameOrDrop(root, tmp, rel)
	}
	data, err := s.Object(e.Sum)
	if err != nil {
		return err
	}
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(fileMode(e.Mode))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = root.Remove(tmp)
		return err
	}
	return renameOrDrop(root, tmp, rel)
}

func renameOrDrop(root *pathguard.Root, tmp, rel string) error {
	if err := root.Rename(tmp, rel); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	return nil
}

// fileMode is a recorded mode as os.FileMode, set-id and sticky bits kept.
func fileMode(m uint32) fs.FileMode {
	fm := fs.FileMode(m).Perm()
	if m&uint32(fs.ModeSetuid) != 0 {
		fm |= fs.ModeSetuid
	}
	if m&uint32(fs.ModeSetgid) != 0 {
		fm |= fs.ModeSetgid
	}
	if m&uint32(fs.ModeSticky) != 0 {
		fm |= fs.ModeSticky
	}
	return fm
}
