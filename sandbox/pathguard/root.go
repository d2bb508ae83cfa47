package pathguard

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrPathChanged means a path the guard resolved to a symlink-free name
// had a symbolic link on it when it was opened: something (a sandboxed
// command) swapped a directory or the file for a link between the check
// and the I/O. The open fails rather than follow the link, which could lead
// to a Read-denied or protected file the check never saw.
var ErrPathChanged = errors.New("the path changed while it was being opened (a symbolic link appeared on it); try again")

// Open opens rel for reading.
func (r *Root) Open(rel string) (*os.File, error) { return r.OpenFile(rel, os.O_RDONLY, 0) }

// ReadFile reads the whole file rel.
func (r *Root) ReadFile(rel string) ([]byte, error) {
	f, err := r.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// ReadDir lists the directory rel, sorted by name, as os.ReadDir does.
// The entries' Info is taken through the root (Lstat), not by path.
func (r *Root) ReadDir(rel string) ([]os.DirEntry, error) {
	f, err := r.OpenFile(rel, os.O_RDONLY|dirFlag, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make([]os.DirEntry, 0, len(names))
	for _, n := range names {
		fi, err := r.Lstat(filepath.Join(rel, n))
		if err != nil {
			continue // gone meanwhile
		}
		out = append(out, dirEntry{fi})
	}
	sortEntries(out)
	return out, nil
}

// local checks rel the way the guard's answers are: relative, and no ".."
// component (a canonical name never needs one).
func local(op, rel string) (string, error) {
	c := filepath.Clean(rel)
	if filepath.IsAbs(c) || c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
		return "", &os.PathError{Op: op, Path: rel, Err: fmt.Errorf("%w", ErrOutsideWorkspace)}
	}
	return c, nil
}

// dirEntry is an entry of ReadDir, its Info taken through the root.
type dirEntry struct{ fi fs.FileInfo }

func (d dirEntry) Name() string               { return d.fi.Name() }
func (d dirEntry) IsDir() bool                { return d.fi.IsDir() }
func (d dirEntry) Type() fs.FileMode          { return d.fi.Mode().Type() }
func (d dirEntry) Info() (fs.FileInfo, error) { return d.fi, nil }

func sortEntries(es []os.DirEntry) {
	slices.SortFunc(es, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
}
