package hostfs

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/custos-dev/custos/internal/atomicfile"
)

// WriteIfChanged writes data to path (owner-only, not through a link)
// unless it already holds exactly that.
func WriteIfChanged(path, data string) error {
	if b, err := os.ReadFile(path); err == nil && string(b) == data {
		return nil
	}
	// A file of its own per writer, renamed over: concurrent writers
	// never mix, a reader never sees half.
	return atomicfile.Write(path, []byte(data), 0o600)
}

// RemoveAllWritable removes a tree in which the go command left module
// directories read-only, making each directory writable first.
func RemoveAllWritable(dir string) error {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// RandHex is 12 random hex digits, for names no other process picks.
func RandHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ReadRecord reads the JSON record at path into v, if the file may be
// trusted: a regular file (not a link) of the user's own that no one else
// may write. The records are what one process leaves the next (a probe,
// the git identity).
func ReadRecord(path string, v any) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || OwnedByUser(fi) != "" || fi.Mode().Perm()&0o022 != 0 {
		return false
	}
	b, err := os.ReadFile(path)
	return err == nil && json.Unmarshal(b, v) == nil
}

// WriteRecord writes v as the JSON record at path, owner-only and whole or
// not at all (best effort: a record is only ever a saving).
func WriteRecord(path string, v any) {
	b, err := json.Marshal(v)
	if err != nil || os.MkdirAll(filepath.Dir(path), 0o700) != nil {
		return
	}
	_ = WriteIfChanged(path, string(b))
}

// Recent reports whether a record written at at is younger than ttl.
func Recent(at time.Time, ttl time.Duration) bool {
	age := time.Since(at)
	return age >= 0 && age < ttl
}

// TrimForLog cuts s to 300 bytes for a log line or an error message.
func TrimForLog(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// SetIDBits are the set-user-ID and set-group-ID bits of a mode (S_ISUID |
// S_ISGID): a file made in the sandbox never reaches the host with them.
const SetIDBits = 0o6000

// WorkspaceKey names what belongs to the workspace ws in custos' own
// directories: its cache, its host-config snapshots and overlays.
func WorkspaceKey(ws string) string {
	sum := sha256.Sum256([]byte(ws))
	return hex.EncodeToString(sum[:8])
}

// TreeSize adds up the sizes of the regular files below path (links are
// not followed); what cannot be read counts nothing.
func TreeSize(path string) int64 {
	var n int64
	_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
