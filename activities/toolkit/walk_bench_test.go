package toolkit

import (
	"context"
	"io/fs"
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkWalkFiles lists the module's files as Glob does: through the
// workspace's Root (every directory opened by openat2 without following a
// link, every entry's Lstat through it), and, for comparison, by path with
// filepath.WalkDir, as Glob and Grep walked before.
func BenchmarkWalkFiles(b *testing.B) {
	_, file, _, _ := runtime.Caller(0)
	ws, err := filepath.EvalSymlinks(filepath.Join(filepath.Dir(file), "..", ".."))
	if err != nil {
		b.Fatal(err)
	}
	none := func(string) bool { return false }
	b.Run("root", func(b *testing.B) {
		for b.Loop() {
			tgt, err := SearchRoot(ws, "")
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			if err := WalkFiles(context.Background(), tgt.Root, tgt.Rel, none, func(string, fs.FileInfo) error { n++; return nil }); err != nil || n < 100 {
				b.Fatal(err, n)
			}
			tgt.Close()
		}
	})
	b.Run("filepath.WalkDir", func(b *testing.B) {
		for b.Loop() {
			n := 0
			err := filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() {
					if d.Name() == ".git" {
						return fs.SkipDir
					}
					return nil
				}
				if _, err := d.Info(); err == nil {
					n++
				}
				return nil
			})
			if err != nil || n < 100 {
				b.Fatal(err, n)
			}
		}
	})
}
