//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/custos-dev/custos/internal/gittest"
	"github.com/custos-dev/custos/protected"
	"github.com/custos-dev/custos/sandbox/hostfs"
)

// setIDScript gives files set-uid and set-gid bits every way a command
// has: chmod (fchmodat), install (fchmod), creat and open with O_CREAT,
// mknod of a regular file. Each line prints what it made.
const setIDScript = `touch a b && chmod 4755 a; chmod g+s b; install -m 4755 /dev/null c
python3 -c 'import os; os.close(os.open("d", os.O_CREAT|os.O_WRONLY, 0o4755))'
python3 -c 'import os, stat; os.mknod("e", stat.S_IFREG|0o6755)'
python3 -c 'import os; os.close(os.open("f", os.O_CREAT|os.O_WRONLY)); os.chmod("f", 0o2700)'
stat -c '%n %a' a b c d e f 2>&1; true`

// TestBwrapSetIDRefused: no command can make a set-uid or set-gid file,
// however it asks the kernel (the seccomp filter refuses the mode), and
// nothing set-id lands in the workspace. The control, the same script
// under bubblewrap without the filter, makes every one of them.
func TestBwrapSetIDRefused(t *testing.T) {
	needRoot(t) // the control's files are set-uid root only where the tests run as root
	sb := newBwrap(t, Config{}).(*bwrapSandbox)
	ws := mustEval(t, t.TempDir())
	_, out := runUnprotected(t, sb, ws, setIDScript)
	for _, f := range []string{"a 4755", "b 2644", "c 4755", "d 4755", "e 6755", "f 2700"} {
		assert.Contains(t, out, f, "control: the kernel makes it without the filter")
	}
	for _, f := range []string{"a", "b", "c", "d", "e", "f"} {
		require.NoError(t, os.RemoveAll(filepath.Join(ws, f)))
	}
	res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash(setIDScript), Timeout: 30 * time.Second})
	require.NoError(t, err)
	assert.Contains(t, res.Stdout+res.Stderr, "Operation not permitted", "the refusal is not said")
	ents, err := os.ReadDir(ws)
	require.NoError(t, err)
	for _, e := range ents {
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(filepath.Join(ws, e.Name()), &st))
		assert.Zero(t, st.Mode&hostfs.SetIDBits, "%s is set-id (%#o) on the host", e.Name(), st.Mode&0o7777)
	}
}

// TestBwrapProtectedNamesWhetherOrNot: every protected name is protected
// whether it exists or not. At the root of a project (not a home
// directory) a command can create none of them, files as well as
// directories, and the home-only ones too; below the root, where the list
// protects them as well, one it creates is withheld: set aside in the
// quarantine, not applied, and named in the result. What it writes beside
// them is applied.
func TestBwrapProtectedNamesWhetherOrNot(t *testing.T) {
	stateRoot := t.TempDir()
	t.Cleanup(func() { _ = hostfs.RemoveAllWritable(stateRoot) })
	sb := overlayOn(t, newBwrap(t, Config{CacheDir: filepath.Join(stateRoot, "cache")}).(*bwrapSandbox))
	ws := mustEval(t, t.TempDir())
	gittest.NewRepo(t, ws)
	var names []string
	for _, l := range [][]protected.Name{protected.Files, protected.Dirs} {
		for _, n := range l {
			names = append(names, n.Name)
		}
	}
	var script strings.Builder
	for _, n := range names {
		fmt.Fprintf(&script, "echo x > %s 2>/dev/null && echo MADE %s; mkdir -p %s/x 2>/dev/null && echo MADE %s/; ", n, n, n, n)
	}
	script.WriteString("mkdir -p sub/deeper newdir && echo ok > sub/ok.txt && echo x > sub/.bashrc && echo x > sub/deeper/.gitconfig && " +
		"mkdir -p newdir/.vscode && echo '{}' > newdir/.vscode/tasks.json && echo x > newdir/.mcp.json && echo DEEP")
	res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash(script.String()), Timeout: 30 * time.Second})
	require.NoError(t, err)
	assert.NotContains(t, res.Stdout, "MADE", "a protected name was created at the root")
	require.Contains(t, res.Stdout, "DEEP", res.Stderr)
	for _, n := range names {
		assert.False(t, exists(ws, n), "%s is on the host", n)
	}
	assert.True(t, contains(ws, "sub/ok.txt", "ok"), "the command's ordinary file is not applied")
	withheld := fmt.Sprint(res.Withheld)
	for _, rel := range []string{"sub/.bashrc", "sub/deeper/.gitconfig", "newdir/.vscode", "newdir/.mcp.json"} {
		assert.False(t, exists(ws, rel), "%s reached the host", rel)
		assert.Contains(t, withheld, rel, "the result does not name it")
	}
	assert.Contains(t, withheld, "kept in "+sb.cfg.guard().Quarantine())
	assert.True(t, exists(ws, "newdir"), "the directory beside the withheld entries is not applied")
}
