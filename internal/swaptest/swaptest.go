// Package swaptest is the move of the time-of-check attacks the path
// guard's callers are tested against (package pathguard, the file tools,
// checkpoints): between a check of a name and its open, a sandboxed
// command swaps a directory on the path for a link.
package swaptest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Dir replaces the directory ws/dir with a symbolic link to target,
// keeping the directory as dir.was. A relative target stays inside the
// workspace, where os.Root would follow it.
func Dir(t testing.TB, ws, dir, target string) {
	t.Helper()
	require.NoError(t, os.Rename(filepath.Join(ws, dir), filepath.Join(ws, dir+".was")))
	require.NoError(t, os.Symlink(target, filepath.Join(ws, dir)))
}
