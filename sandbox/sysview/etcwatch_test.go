package sysview

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/sandbox/mount"
)

// A kept look at the system holds until anything it was read from
// changes: an entry added, written, chmod'ed or removed in a watched
// directory, or a directory below; a link's target replaced; the view's
// directory gone. A change elsewhere leaves it kept, and a look that
// changes between its two takes, or binds a host directory, is not kept.
func TestSysMountWatch(t *testing.T) {
	root := t.TempDir()
	sys, sub, elsewhere, view := filepath.Join(root, "etc"), filepath.Join(root, "etc/ssl"), filepath.Join(root, "other"), filepath.Join(root, "view")
	for _, d := range []string{sub, elsewhere, view} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	write := func(p, s string) { require.NoError(t, os.WriteFile(p, []byte(s), 0o644)) }
	write(filepath.Join(sys, "hosts"), "127.0.0.1 localhost\n")
	write(filepath.Join(sub, "cert.pem"), "x")
	write(filepath.Join(elsewhere, "target"), "a")
	link := filepath.Join(sys, "resolv.conf")
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "target"), link))
	looks := 0
	var bound bool
	w := sysMountWatch{look: func(string) (sysLook, error) {
		looks++
		fi, _ := os.Stat(link)
		l := sysLook{folded: []mount.Mount{{Kind: mount.ROBind, Src: view, Dst: "/etc"}}, dir: view, watch: []string{sys, sub}, links: map[string]os.FileInfo{link: fi}}
		if bound {
			l.folded = append(l.folded, mount.Mount{Kind: mount.ROBind, Src: sub, Dst: "/etc/ssl"})
		}
		return l, nil
	}}
	t.Cleanup(func() {
		w.mu.Lock()
		w.dropLocked()
		w.mu.Unlock()
	})
	keep := func() {
		t.Helper()
		_, err := w.lookAndKeep("base")
		require.NoError(t, err)
		_, _, ok := w.current("base")
		require.True(t, ok, "kept")
	}
	if newDirWatch() == nil {
		t.Fatal("no inotify on this Linux")
	}

	changes := []struct {
		name   string
		change func()
	}{
		{"an entry added", func() { write(filepath.Join(sys, "new"), "") }},
		{"a file written in place", func() {
			f, err := os.OpenFile(filepath.Join(sys, "hosts"), os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, _ = f.WriteString("10.0.0.1 x\n")
			require.NoError(t, f.Close())
		}},
		{"a file chmod'ed", func() { require.NoError(t, os.Chmod(filepath.Join(sys, "hosts"), 0o600)) }},
		{"a file in a directory below written", func() { write(filepath.Join(sub, "cert.pem"), "y") }},
		{"an entry removed below", func() { require.NoError(t, os.Remove(filepath.Join(sub, "cert.pem"))) }},
		{"a link's target replaced", func() {
			write(filepath.Join(elsewhere, "next"), "b")
			require.NoError(t, os.Rename(filepath.Join(elsewhere, "next"), filepath.Join(elsewhere, "target")))
		}},
		{"the view's directory gone", func() { require.NoError(t, os.Rename(view, view+".old")); require.NoError(t, os.Mkdir(view, 0o755)) }},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			keep()
			c.change()
			_, _, ok := w.current("base")
			assert.False(t, ok, "still kept after: %s", c.name)
		})
	}

	t.Run("a change elsewhere", func(t *testing.T) {
		keep()
		write(filepath.Join(elsewhere, "unrelated"), "")
		_, _, ok := w.current("base")
		assert.True(t, ok)
		_, _, ok = w.current("other-base")
		assert.False(t, ok, "kept for another views' directory")
	})
	t.Run("changed between the two looks", func(t *testing.T) {
		look := w.look
		defer func() { w.look = look }()
		w.look = func(base string) (sysLook, error) {
			l, err := look(base)
			if looks%2 == 0 { // the second of the two
				l.folded = append(l.folded, mount.Mount{Kind: mount.Symlink, Src: "usr/bin", Dst: "/bin"})
			}
			return l, err
		}
		looks = 0
		_, err := w.lookAndKeep("base")
		require.NoError(t, err)
		require.Equal(t, 2, looks)
		_, _, ok := w.current("base")
		assert.False(t, ok)
	})
	t.Run("a directory bound from the host", func(t *testing.T) {
		bound = true
		defer func() { bound = false }()
		_, err := w.lookAndKeep("base")
		require.NoError(t, err)
		_, _, ok := w.current("base")
		assert.False(t, ok)
	})
}

// On the host's own system: what a look found is kept, unless it binds a
// directory of the host's /etc, and the next call, served from it, is the
// same.
func TestSystemMountsKept(t *testing.T) {
	first, view := MountsFor("")
	_, _, kept := sysWatch.current(etcViewBase())
	assert.Equal(t, view && !boundFromHost(first), kept)
	again, view2 := MountsFor("")
	assert.Equal(t, first, again)
	assert.Equal(t, view, view2)
}
