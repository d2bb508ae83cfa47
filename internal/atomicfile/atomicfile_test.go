package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// Write replaces the content and the mode, and leaves nothing else in the
// directory.
func TestWriteReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(name, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(name, []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(name)
	if err != nil || string(got) != "new\n" {
		t.Errorf("content %q (%v), want %q", got, err, "new\n")
	}
	if info, err := os.Stat(name); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v (%v), want 0600", info.Mode().Perm(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %v, want only the file", entries)
	}
}

// A file that cannot be replaced (a directory stands at its name) keeps
// what was there, and no temporary file is left.
func TestWriteFailureLeavesTheOldFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "taken")
	if err := os.MkdirAll(filepath.Join(name, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(name, []byte("x"), 0o600); err == nil {
		t.Fatal("Write over a non-empty directory succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 || entries[0].Name() != "taken" || !entries[0].IsDir() {
		t.Errorf("the directory holds %v, want only the untouched one", entries)
	}
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Error("Write into a missing directory succeeded")
	}
}
