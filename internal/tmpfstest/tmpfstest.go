// Package tmpfstest gives a test a small file system of its own that it can
// fill: a tmpfs mounted on a temporary directory. A full disk cannot be
// faked honestly with a stub (the errors come from the kernel, mid-write),
// so the tests that need one mount a real one, which takes root.
package tmpfstest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// OptOut is the environment variable that lets a test run without root
// skip (saying so) instead of failing.
const OptOut = "CUSTOS_TEST_NO_TMPFS"

// Mount mounts a tmpfs of size (mount's syntax: "1m") on a new temporary
// directory and unmounts it when the test ends. Without root the test
// fails, unless OptOut is set to 1: a full-disk test skipped in silence
// would prove nothing.
func Mount(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv(OptOut) == "1" {
			t.Skipf("not root: cannot mount a tmpfs to fill (%s=1)", OptOut)
		}
		t.Fatalf("not root: this test mounts a small tmpfs to fill; run it as root, or set %s=1 to skip it", OptOut)
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0755", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v: %s", dir, err, out)
	}
	// Registered after TempDir's cleanup, so it runs before it.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("unmount the tmpfs on %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// Fill writes a file in dir until the file system holding it refuses
// (ENOSPC) and returns its name: removing it gives the space back.
func Fill(t testing.TB, dir string) string {
	t.Helper()
	name := filepath.Join(dir, "filler")
	f, err := os.Create(name)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			break
		}
	}
	// Fill the last pages too: a write of one byte must fail.
	for {
		if _, err := f.Write([]byte{0}); err != nil {
			break
		}
	}
	return name
}
