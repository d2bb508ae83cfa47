package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/custos-dev/custos/sandbox/pathguard"
)

// Call names the tool call a Recording is of.
type Call struct {
	Job, Call, Tool, What string
	Turn                  int
}

// Recording is one call's checkpoint while it is made: Before is called
// for each path the call is about to change, while the workspace still
// holds it, After with what it will hold, then Commit before the change
// and Done after it.
type Recording struct {
	s Store
	// ws is the workspace, opened as the file tools open it: every name
	// is read exactly as given, a symbolic link on it (a directory
	// swapped for one after the guard's check) failing the read with
	// pathguard.ErrPathChanged rather than followed to a file the check
	// never saw, whose content would then be the record's.
	ws    *pathguard.Root
	rec   Record
	byRel map[string]int // index in rec.Changes
	fresh []stored       // objects stored and not synced yet
	// stageFd is the stage directory while a Bash call's upper layer is
	// recorded (-1: none); staged counts the files linked into it.
	stageFd int
	staged  atomic.Int64
}

// Start begins the checkpoint of call in the workspace ws (canonical).
func (s Store) Start(c Call, ws string) (*Recording, error) {
	root, err := pathguard.OpenRoot(ws)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: open the workspace: %w", err)
	}
	return &Recording{s: s, ws: root, byRel: map[string]int{}, stageFd: -1, rec: Record{
		Job: c.Job, Turn: c.Turn, Call: c.Call, Tool: c.Tool, What: c.What,
		Seq: time.Now().UnixNano(), Head: gitHead(ws), Workspace: ws,
	}}, nil
}

// Close releases the workspace.
func (r *Recording) Close() {
	r.endStage()
	_ = r.ws.Close()
}

// Note says in the record what of the call cannot be undone.
func (r *Recording) Note(s string) { r.rec.Notes = append(r.rec.Notes, s) }

// InGit says whether rel lies in a .git directory (or is one): never
// recorded, never restored.
func InGit(rel string) bool {
	for _, c := range strings.Split(filepath.ToSlash(rel), "/") {
		if c == ".git" {
			return true
		}
	}
	return false
}

// change is rel's change, made on first use with both sides unknown.
func (r *Recording) change(rel string) *Change {
	rel = filepath.ToSlash(rel)
	i, ok := r.byRel[rel]
	if !ok {
		i = len(r.rec.Changes)
		r.byRel[rel] = i
		r.rec.Changes = append(r.rec.Changes, Change{Path: rel})
	}
	return &r.rec.Changes[i]
}

// Before records what the workspace holds at rel now, unless rel already
// has its before. A directory's contents are not: BeforeTree is for a
// directory the call removes or replaces.
func (r *Recording) Before(rel string) error {
	if InGit(rel) {
		return nil
	}
	c := r.change(rel)
	if c.Before.Kind != "" {
		return nil
	}
	e, err := r.s.capture(r.ws, rel, &r.fresh)
	if err != nil {
		return err
	}
	c.Before = e
	return nil
}

// BeforeTree is Before for rel and everything under it, each of which the
// call removes (its after is nothing unless After says otherwise).
func (r *Recording) BeforeTree(rel string) error {
	if InGit(rel) {
		return nil
	}
	if err := r.Before(rel); err != nil {
		return err
	}
	c := r.change(rel)
	if c.After.Kind == "" {
		c.After = Entry{Kind: Absent}
	}
	if c.Before.Kind != Dir {
		return nil
	}
	ents, err := readDir(r.ws, rel)
	if err != nil {
		return fmt.Errorf("checkpoint: %s: %w", rel, err)
	}
	for _, name := range ents {
		if err := r.BeforeTree(path.Join(filepath.ToSlash(rel), name)); err != nil {
			return err
		}
	}
	return nil
}

// After records what rel will hold.
func (r *Recording) After(rel string, e Entry) {
	if InGit(rel) {
		return
	}
	r.change(rel).After = e
}

// AfterData records that rel will be a file of data with mode.
func (r *Recording) AfterData(rel string, data []byte, mode fs.FileMode) error {
	sum, err := r.s.putBytes(data, &r.fresh)
	if err != nil {
		return err
	}
	r.After(rel, Entry{Kind: File, Mode: uint32(mode.Perm() | mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)), Size: int64(len(data)), Sum: sum})
	return nil
}

// AfterFrom records that rel will hold what src holds at srcRel (an
// overlay's upper layer, whose entries the merge moves into place).
func (r *Recording) AfterFrom(src *pathguard.Root, srcRel, rel string) error {
	if InGit(rel) {
		return nil
	}
	e, err := r.s.capture(src, srcRel, &r.fresh)
	if err != nil {
		return err
	}
	r.After(rel, e)
	return nil
}

// Commit writes the record, not Done, with its objects, and syncs them: a
// change made after it returns is recorded whatever happens next. Changes
// whose two sides are one state are dropped.
func (r *Recording) Commit() error {
	kept := r.rec.Changes[:0]
	for _, c := range r.rec.Changes {
		if c.Before.Kind == "" {
			c.Before = Entry{Kind: Absent}
		}
		staged := c.Before.Stage != "" || c.After.Stage != ""
		if c.After.Kind == "" || !staged && c.Before.Same(c.After) && c.Before.Mode == c.After.Mode {
			continue
		}
		r.rec.Staged = r.rec.Staged || staged
		kept = append(kept, c)
	}
	r.rec.Changes = kept
	r.byRel = nil
	defer r.endStage()
	if len(kept) == 0 && len(r.rec.Notes) == 0 {
		return nil
	}
	all, err := syncObjects(r.s.objects(), r.fresh)
	if err != nil {
		return fmt.Errorf("checkpoint: sync objects: %w", err)
	}
	r.fresh = nil
	if err := r.s.writeRecord(r.rec, true); err != nil {
		return err
	}
	if all {
		return nil
	}
	// The names: the objects', the record's, and the directories that
	// may be new (on a journalling file system the first sync commits
	// them all, and the others find nothing left to do).
	jobs := filepath.Dir(r.s.JobDir(r.rec.Job))
	if err := fsyncDirs(r.s.stageDir(r.rec), r.s.objects(), r.s.JobDir(r.rec.Job), jobs, r.s.Dir); err != nil {
		return fmt.Errorf("checkpoint: sync: %w", err)
	}
	return nil
}

// Done marks the record applied: the workspace holds every After.
func (r *Recording) Done() error {
	if len(r.rec.Changes) == 0 && len(r.rec.Notes) == 0 {
		return nil
	}
	// Not synced: lost in a crash, the record says "not done", which
	// accepts the change's either side.
	r.rec.Done = true
	if err := r.s.writeRecord(r.rec, false); err != nil {
		return err
	}
	if r.rec.Staged {
		r.s.finalizeLater(r.rec)
	}
	return nil
}

// Record is the record as made so far.
func (r *Recording) Record() Record { return r.rec }

// capture is the Entry of rel in root, a file's content stored when
// fresh is not nil (and named in it when new).
func (s Store) capture(root *pathguard.Root, rel string, fresh *[]stored) (Entry, error) {
	fi, err := root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) || isNotDir(err) {
		return Entry{Kind: Absent}, nil
	}
	if err != nil {
		return Entry{}, fmt.Errorf("checkpoint: %s: %w", rel, err)
	}
	mode := uint32(fi.Mode().Perm() | fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
	switch {
	case fi.IsDir():
		return Entry{Kind: Dir, Mode: mode}, nil
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := root.Readlink(rel)
		if err != nil {
			return Entry{}, fmt.Errorf("checkpoint: %s: %w", rel, err)
		}
		return Entry{Kind: Symlink, Target: t}, nil
	case !fi.Mode().IsRegular():
		return Entry{Kind: Other, Mode: mode}, nil
	}
	sum, n, err := s.storeFile(root, rel, fi, fresh)
	if err != nil {
		return Entry{}, fmt.Errorf("checkpoint: %s: %w", rel, err)
	}
	return Entry{Kind: File, Mode: mode, Size: n, Sum: sum}, nil
}

// storeFile hashes the regular file rel (fi, as Lstat saw it) and stores
// it unless fresh is nil, refusing a file swapped for another after Lstat.
func (s Store) storeFile(root *pathguard.Root, rel string, fi fs.FileInfo, fresh *[]stored) (string, int64, error) {
	f, err := root.Open(rel)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	ofi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if !os.SameFile(fi, ofi) {
		return "", 0, errors.New("changed while being recorded")
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if fresh == nil {
		return sum, n, nil
	}
	return sum, n, s.putObject(f, sum, n, fresh)
}

// readDir lists the directory rel of root, names only, not followed.
func readDir(root *pathguard.Root, rel string) ([]string, error) {
	d, err := root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// isNotDir is ENOTDIR: a path under what is now a file is not there.
func isNotDir(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && strings.Contains(pe.Err.Error(), "not a directory")
}
