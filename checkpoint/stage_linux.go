//go:build linux

package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// Staging: a Bash call's recording must be durable before the merge, and
// a thousand files read and hashed then cost the call a tenth of a second.
// So, before the merge, each side of a changed file is only hard-linked
// into the record's stage directory (a link to the very inode; the merge
// replaces the workspace's name, so the before side is the stage's
// alone), and the record names the stage entries. After the merge the
// record is finalized in the background: each staged file hashed and
// linked into objects/, the record rewritten with the sums, the stage
// removed. Whoever reads a record that is still staged (Records: changes,
// rewind, fork; or after a crash) finalizes it first, under a lock on the
// stage directory, so both never do it at once.

// startStage makes the record's stage directory and opens it; on a store
// that cannot stage (it exists already), the recording reads and hashes
// instead.
func (r *Recording) startStage() {
	dir := r.s.stageDir(r.rec)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return
	}
	if err := unix.Mkdir(dir, 0o700); err != nil {
		return
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return
	}
	r.stageFd = fd
}

// endStage closes the stage directory, and removes it when nothing was
// staged in it.
func (r *Recording) endStage() {
	if r.stageFd < 0 {
		return
	}
	unix.Close(r.stageFd)
	r.stageFd = -1
	if !r.rec.Staged {
		_ = os.RemoveAll(r.s.stageDir(r.rec))
	}
}

// stageAt is captureAt that stages a regular file instead of reading it;
// a file on another file system than the store is read and stored.
func (r *Recording) stageAt(dirfd int, name string, fresh *[]stored) (Entry, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return r.s.captureAt(dirfd, name, fresh)
	}
	idx := strconv.FormatInt(r.staged.Add(1), 10)
	if err := unix.Linkat(dirfd, name, r.stageFd, idx, 0); err != nil {
		return r.s.captureAt(dirfd, name, fresh)
	}
	return Entry{Kind: File, Mode: unixMode(st.Mode), Size: st.Size, Stage: idx}, nil
}

// finalizing are the finalizers running in the background (Wait).
var finalizing sync.WaitGroup

// Wait waits for the records being finalized in the background: a worker
// stopping, a test ending.
func Wait() { finalizing.Wait() }

// finalizeLater finalizes the staged record r in the background.
func (s Store) finalizeLater(r Record) {
	finalizing.Add(1)
	go func() {
		defer finalizing.Done()
		_ = s.finalize(filepath.Join(s.JobDir(r.Job), recordName(r)), s.stageDir(r))
	}()
}

// finalize turns the staged record at path into a plain one: its staged
// files hashed and stored, the record rewritten with the sums, the stage
// removed. A record finalized meanwhile is left as it is.
func (s Store) finalize(path, stage string) error {
	lock, err := unix.Open(stage, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil // finalized already
	}
	if err != nil {
		return fmt.Errorf("checkpoint: finalize: %w", err)
	}
	defer unix.Close(lock)
	if err := unix.Flock(lock, unix.LOCK_EX); err != nil {
		return fmt.Errorf("checkpoint: finalize: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("checkpoint: finalize: %w", err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("checkpoint: finalize %s: %w", path, err)
	}
	if !r.Staged {
		return nil
	}
	var fresh []stored
	for i := range r.Changes {
		for _, e := range []*Entry{&r.Changes[i].Before, &r.Changes[i].After} {
			if e.Stage == "" {
				continue
			}
			if err := s.unstage(lock, e, &fresh); err != nil {
				return fmt.Errorf("checkpoint: finalize %s: %w", path, err)
			}
		}
	}
	return s.finishStage(r, fresh, stage)
}

// unstage hashes the staged file of e, stores it and names it in e.
func (s Store) unstage(stagefd int, e *Entry, fresh *[]stored) error {
	fd, err := unix.Openat(stagefd, e.Stage, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	sum, err := hashFD(fd)
	if err != nil {
		return err
	}
	p := s.ObjectPath(sum)
	if ok, damaged := reuse(p, sum, st.Size); !ok {
		if damaged {
			_ = os.Remove(p)
		}
		if err := s.linkObject(fd, p); err != nil {
			return err
		}
		*fresh = append(*fresh, stored{path: p, linked: true})
	}
	e.Sum, e.Size, e.Stage = sum, st.Size, ""
	return nil
}

// finishStage writes the finalized record r (its objects' names synced
// first) and removes its stage.
func (s Store) finishStage(r Record, fresh []stored, stage string) error {
	if len(fresh) > 0 {
		if err := fsyncDirs(s.objects()); err != nil {
			return fmt.Errorf("checkpoint: finalize: %w", err)
		}
	}
	kept := r.Changes[:0]
	for _, c := range r.Changes {
		if !(c.Before.Same(c.After) && c.Before.Mode == c.After.Mode) {
			kept = append(kept, c)
		}
	}
	r.Changes, r.Staged = kept, false
	if err := s.writeRecord(r, true); err != nil {
		return err
	}
	if err := fsyncDirs(s.JobDir(r.Job)); err != nil {
		return fmt.Errorf("checkpoint: finalize: %w", err)
	}
	return os.RemoveAll(stage)
}
