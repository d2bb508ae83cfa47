package activities

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/custos-dev/custos/sandbox/pathguard"
	"github.com/stretchr/testify/require"
)

// A kept text is given back while the file is unchanged, and never once
// it was rewritten, even with its size and modification time put back;
// a file changed within the last moments is read every time.
func TestLSPTextsFollowTheFile(t *testing.T) {
	ws := t.TempDir()
	p := filepath.Join(ws, "a.go")
	old := time.Now().Add(-time.Hour)
	write := func(text string) {
		t.Helper()
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		require.NoError(t, os.Chtimes(p, old, old))
	}
	root, err := pathguard.OpenRoot(ws)
	require.NoError(t, err)
	defer root.Close()
	cache := &textCache{texts: map[fileID]string{}}
	reads := 0
	read := func() string {
		t.Helper()
		fi, err := root.Stat("a.go")
		require.NoError(t, err)
		text, err := cache.read(root, "a.go", fi, func([]byte) error { reads++; return nil })
		require.NoError(t, err)
		return text
	}
	write("package a // one\n")
	require.Equal(t, "package a // one\n", read())
	require.Equal(t, "package a // one\n", read())
	require.Equal(t, 2, reads, "a file changed just now is read every time")

	// Later: the change has settled.
	textClock = func() time.Time { return time.Now().Add(time.Hour) }
	t.Cleanup(func() { textClock = time.Now })
	require.Equal(t, "package a // one\n", read())
	require.Equal(t, "package a // one\n", read())
	require.Equal(t, 3, reads, "an unchanged file is read once")

	time.Sleep(50 * time.Millisecond) // past the file system's clock tick
	write("package a // two\n")       // the same size and modification time
	require.Equal(t, "package a // two\n", read())
	require.Equal(t, 4, reads)
}
