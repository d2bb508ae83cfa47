package pathguard

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// local checks rel the way the guard's answers are: relative, and no ".."
// component (a canonical name never needs one).
func local(op, rel string) (string, error) {
	c := filepath.Clean(rel)
	if filepath.IsAbs(c) || c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
		return "", &os.PathError{Op: op, Path: rel, Err: fmt.Errorf("%w", ErrOutsideWorkspace)}
	}
	return c, nil
}
