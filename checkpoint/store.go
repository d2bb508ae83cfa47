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
	"time"

	"github.com/custos-dev/custos/internal/atomicfile"
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
	Done    bool     `json:"done"`
	Changes []Change `json:"changes"`
	// Notes are what of the call cannot be undone, said, not hidden.
	Notes []string `json:"notes,omitempty"`
}

// Store is a checkpoint directory (api.CheckpointDir).
type Store struct{ Dir string }

func (s Store) objects() string { return filepath.Join(s.Dir, "objects") }

// JobDir is where job's records are.
func (s Store) JobDir(job string) string { return filepath.Join(s.Dir, "jobs", safeName(job)) }

// safeName keeps a job ID one path component.
func safeName(id string) string {
	r := strings.NewReplacer("/", "_", "\\", "_", "\x00", "_")
	id = r.Replace(id)
	if id == "." || id == ".." || id == "" {
		return "_" + id
	}
	return id
}

// ObjectPath is where the content sum is kept.
func (s Store) ObjectPath(sum string) string {
	if len(sum) < 2 {
		return filepath.Join(s.objects(), "_", sum)
	}
	return filepath.Join(s.objects(), sum[:2], sum)
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
// as sum) unless the store has it; a content it has is marked fresh, so
// the collection does not take it from a job that names it now. The new
// object is not synced: Recording.Commit syncs them all at once.
func (s Store) putObject(f *os.File, sum string, n int64) error {
	p := s.ObjectPath(sum)
	if fi, err := os.Stat(p); err == nil && fi.Size() == n {
		now := time.Now()
		_ = os.Chtimes(p, now, now)
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
	return nil
}

// putBytes stores data and returns its sum.
func (s Store) putBytes(data []byte) (string, error) {
	h := sha256.Sum256(data)
	sum := hex.EncodeToString(h[:])
	p := s.ObjectPath(sum)
	if fi, err := os.Stat(p); err == nil && fi.Size() == int64(len(data)) {
		now := time.Now()
		_ = os.Chtimes(p, now, now)
		return sum, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", fmt.Errorf("checkpoint objects: %w", err)
	}
	if err := atomicfile.Write(p, data, 0o600); err != nil {
		return "", fmt.Errorf("checkpoint object %s: %w", short(sum), err)
	}
	return sum, nil
}

// recordName orders a job's records by turn, then by when they began.
func recordName(r Record) string {
	return fmt.Sprintf("%06d-%019d-%s.json", r.Turn, r.Seq, safeName(r.Call))
}

// writeRecord replaces r's file whole, synced.
func (s Store) writeRecord(r Record) error {
	dir := s.JobDir(r.Job)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("checkpoint records: %w", err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("checkpoint record: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, recordName(r)), data, 0o600); err != nil {
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
