package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
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

	"github.com/custos-dev/custos/internal/atomicfile"
	"github.com/custos-dev/custos/internal/filename"
)

// Kinds of Entry.
const (
	Absent  = "absent"
	File    = "file"
	Dir     = "dir"
	Symlink = "symlink"
	// Other is a fifo, socket or device: recorded as there, never restored.
	Other = "other"
)

// Entry is the state of one path: its kind, its permission bits (set-id
// and sticky included), and for a file its size and content's SHA-256,
// for a symbolic link its target (never followed).
type Entry struct {
	Kind   string `json:"kind"`
	Mode   uint32 `json:"mode,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Sum    string `json:"sum,omitempty"`
	Target string `json:"target,omitempty"`
	// Stage names the file's hard link in the record's stage directory
	// while the record is staged (Sum is then unknown).
	Stage string `json:"stage,omitempty"`
}

// Same reports whether a and b are one state. A directory's mode is not
// compared: a new directory's depends on the umask of whoever made it.
func (e Entry) Same(o Entry) bool {
	if e.Kind != o.Kind {
		return false
	}
	switch e.Kind {
	case File:
		return e.Sum == o.Sum && e.Mode == o.Mode
	case Symlink:
		return e.Target == o.Target
	}
	return true
}

// Change is what one call did to one path (slash-separated, relative to
// the workspace).
type Change struct {
	Path   string `json:"path"`
	Before Entry  `json:"before"`
	After  Entry  `json:"after"`
}

// Record is one call's checkpoint.
type Record struct {
	Job  string `json:"job"`
	Turn int    `json:"turn"`
	Call string `json:"call"`
	Tool string `json:"tool"`
	// What is the call in a few words: the command, the path.
	What string `json:"what,omitempty"`
	// Seq orders a turn's calls: when the recording began (Unix ns).
	Seq int64 `json:"seq"`
	// Workspace is the workspace (canonical) the call changed.
	Workspace string `json:"workspace"`
	// Head is the workspace's git HEAD when the call began ("" none).
	Head string `json:"head,omitempty"`
	// Done says the change was applied whole; until then the workspace
	// may hold either side of each change.
	Done bool `json:"done"`
	// Staged says some Entry is still a staged file, not an object.
	Staged  bool     `json:"staged,omitempty"`
	Changes []Change `json:"changes"`
	// Notes are what of the call cannot be undone, said, not hidden.
	Notes []string `json:"notes,omitempty"`
}

// Store is a checkpoint directory (api.CheckpointDir).
type Store struct{ Dir string }

func (s Store) objects() string { return filepath.Join(s.Dir, "objects") }

// JobDir is where job's records are.
func (s Store) JobDir(job string) string { return filepath.Join(s.Dir, "jobs", filename.Safe(job)) }

// ObjectPath is where the content sum is kept: one flat directory, so
// the objects a call stores are made durable by one directory sync.
func (s Store) ObjectPath(sum string) string {
	return filepath.Join(s.objects(), sum)
}

// Object reads the content sum back, checking it.
func (s Store) Object(sum string) ([]byte, error) {
	data, err := os.ReadFile(s.ObjectPath(sum))
	if err != nil {
		return nil, fmt.Errorf("checkpoint object %s: %w", short(sum), err)
	}
	got := sha256.Sum256(data)
	if hex.EncodeToString(got[:]) != sum {
		return nil, fmt.Errorf("checkpoint object %s is damaged", short(sum))
	}
	return data, nil
}

func short(sum string) string { return sum[:min(len(sum), 12)] }

// putObject stores the content of the open file f (size n, hashed already
// as sum) unless the store has it. The object is a hard link to f's inode
// when the store is on f's file system: no data is copied, and the inode
// the tool or the merge is about to replace (a rename puts another in its
// place) is then the store's alone. Elsewhere it is a copy. A new object
// is not synced but added to fresh: Recording.Commit syncs them.
func (s Store) putObject(f *os.File, sum string, n int64, fresh *[]stored) error {
	p := s.ObjectPath(sum)
	ok, damaged := reuse(p, sum, n)
	if ok {
		return nil
	}
	if damaged {
		_ = os.Remove(p)
	}
	err := linkInode(f, p)
	if errors.Is(err, fs.ErrNotExist) {
		// The object's directory is made once, on the first miss, not
		// checked for every object.
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return fmt.Errorf("checkpoint objects: %w", err)
		}
		err = linkInode(f, p)
	}
	if err == nil || errors.Is(err, fs.ErrExist) {
		*fresh = append(*fresh, stored{path: p, linked: true})
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("checkpoint objects: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("checkpoint object: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("checkpoint object: %w", err)
	}
	_, err = io.Copy(tmp, f)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("checkpoint object %s: %w", short(sum), err)
	}
	*fresh = append(*fresh, stored{path: p})
	return nil
}

// stored is an object stored and not synced yet: linked (a hard link to
// a workspace file's inode, whose data is the workspace's) or a copy.
type stored struct {
	path   string
	linked bool
}

// reuse says whether the object p (sum, n bytes) is stored already, or
// is there but damaged. One that is still a workspace file's inode too
// (more than one link: a command's file the merge moved into place) may
// have been changed in place since, so its content is checked; one that
// is the store's alone is marked fresh for the collection.
func reuse(p, sum string, n int64) (ok, damaged bool) {
	fi, err := os.Stat(p)
	if err != nil {
		return false, false
	}
	if fi.Size() != n {
		return false, true
	}
	if st, isUnix := fi.Sys().(*syscall.Stat_t); isUnix && st.Nlink > 1 {
		ok = hashOf(p) == sum
		return ok, !ok
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now)
	return true, false
}

// hashOf is the SHA-256 of the file p ("" when it cannot be read).
func hashOf(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// putBytes stores data, unsynced (added to fresh), and returns its sum.
func (s Store) putBytes(data []byte, fresh *[]stored) (string, error) {
	h := sha256.Sum256(data)
	sum := hex.EncodeToString(h[:])
	p := s.ObjectPath(sum)
	if ok, _ := reuse(p, sum, int64(len(data))); ok {
		return sum, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", fmt.Errorf("checkpoint objects: %w", err)
	}
	if err := writeRename(p, data, false); err != nil {
		return "", fmt.Errorf("checkpoint object %s: %w", short(sum), err)
	}
	*fresh = append(*fresh, stored{path: p})
	return sum, nil
}

// writeRename writes data beside p and renames it over p, synced first
// when sync.
func writeRename(p string, data []byte, sync bool) error {
	if sync {
		return atomicfile.Write(p, data, 0o600)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// stageDir is where a record's staged files are, beside it (stage_linux.go).
func (s Store) stageDir(r Record) string {
	return filepath.Join(s.JobDir(r.Job), "stage-"+strings.TrimSuffix(recordName(r), ".json"))
}

// recordName orders a job's records by turn, then by when they began.
func recordName(r Record) string {
	return fmt.Sprintf("%06d-%019d-%s.json", r.Turn, r.Seq, filename.Safe(r.Call))
}

// writeRecord replaces r's file whole, synced when sync.
func (s Store) writeRecord(r Record, sync bool) error {
	dir := s.JobDir(r.Job)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("checkpoint records: %w", err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("checkpoint record: %w", err)
	}
	if err := writeRename(filepath.Join(dir, recordName(r)), data, sync); err != nil {
		return fmt.Errorf("checkpoint record: %w", err)
	}
	return nil
}

// Records are job's records, by turn and then in the order they began.
// A job with none has none (no error).
func (s Store) Records(job string) ([]Record, error) {
	ents, err := os.ReadDir(s.JobDir(job))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoints of %s: %w", job, err)
	}
	var out []Record
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(s.JobDir(job), e.Name()))
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", e.Name(), err)
		}
		var r Record
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", e.Name(), err)
		}
		if r.Staged {
			if r, err = s.finalized(r); err != nil {
				return nil, err
			}
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b Record) int {
		if a.Turn != b.Turn {
			return a.Turn - b.Turn
		}
		return int(min(max(a.Seq-b.Seq, -1), 1))
	})
	return out, nil
}

// Find is the store under custos' state directory state that holds job's
// checkpoints (any workspace's), and whether one does.
func Find(state, job string) (Store, bool) {
	dirs, _ := filepath.Glob(filepath.Join(state, "workspaces", "*", "checkpoints"))
	for _, d := range dirs {
		s := Store{Dir: d}
		if fi, err := os.Stat(s.JobDir(job)); err == nil && fi.IsDir() {
			return s, true
		}
	}
	return Store{}, false
}

// fsyncCopies syncs each copied object's data; a link's data is the
// workspace's, and its directory entry is synced with the directory.
func fsyncCopies(objs []stored) error {
	for _, o := range objs {
		if !o.linked {
			if err := fsyncPath(o.path); err != nil {
				return err
			}
		}
	}
	return nil
}

// fsyncDirs syncs each directory of dirs, so the names made in them
// (objects, a record renamed into place, new directories) are durable.
func fsyncDirs(dirs ...string) error {
	for _, d := range dirs {
		if err := fsyncPath(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

func fsyncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// finalized is the staged record r once finalized (by this call, or by
// the one that held the stage's lock meanwhile).
func (s Store) finalized(r Record) (Record, error) {
	path := filepath.Join(s.JobDir(r.Job), recordName(r))
	if err := s.finalize(path, s.stageDir(r)); err != nil {
		return r, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	var out Record
	if err := json.Unmarshal(data, &out); err != nil {
		return r, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return out, nil
}
