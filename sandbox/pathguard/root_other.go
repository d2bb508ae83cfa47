//go:build !linux

package pathguard

import (
	"os"
	"slices"
	"strings"
)

// Root is the canonical workspace opened for the file tools' I/O. Outside
// Linux it is an os.Root: the I/O stays inside the workspace, but a link
// that stays inside it is followed (openat2's RESOLVE_NO_SYMLINKS is
// Linux's); the agent's sandbox and file tools run on Linux only.
type Root struct {
	*os.Root
	name string
}

// OpenRoot opens the canonical workspace canonWS.
func OpenRoot(canonWS string) (*Root, error) {
	r, err := os.OpenRoot(canonWS)
	if err != nil {
		return nil, err
	}
	return &Root{Root: r, name: canonWS}, nil
}

// openWorkspace opens the canonical workspace (ResolveOpen).
func openWorkspace(workspace string) (*Root, string, error) {
	return openWorkspacePortable(workspace)
}

// Name is the workspace the root was opened on.
func (r *Root) Name() string { return r.name }

// ReadDir lists the directory rel, sorted by name.
func (r *Root) ReadDir(rel string) ([]os.DirEntry, error) {
	f, err := r.Root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	es, err := f.ReadDir(-1)
	slices.SortFunc(es, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return es, err
}
