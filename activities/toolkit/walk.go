package toolkit

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/custos-dev/custos/sandbox/pathguard"
)

// WalkFiles calls visit, in lexical order, for every file (regular, link or
// special: as Lstat sees it) under dirRel, relative to root's workspace,
// skipping .git directories below it, the directories skip names (dirRel
// itself too) (slash-separated,
// workspace-relative) and unreadable subtrees. Every directory is listed
// through root, by the name the walk built from its parent's listing: a
// directory swapped for a symbolic link after its parent was listed (to a
// Read-denied directory) fails to open and is skipped, never followed, as
// filepath.WalkDir's listing by path would follow it.
func WalkFiles(ctx context.Context, root *pathguard.Root, dirRel string, skip func(rel string) bool, visit func(rel string, fi fs.FileInfo) error) error {
	entries, err := root.ReadDir(dirRel)
	if err != nil || skip(filepath.ToSlash(dirRel)) {
		return err
	}
	return walkDir(ctx, root, dirRel, entries, skip, visit)
}

func walkDir(ctx context.Context, root *pathguard.Root, dir string, entries []os.DirEntry, skip func(string) bool, visit func(string, fs.FileInfo) error) error {
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel := filepath.Join(dir, e.Name())
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if !fi.IsDir() {
			if err := visit(filepath.ToSlash(rel), fi); err != nil {
				return err
			}
			continue
		}
		if e.Name() == ".git" || skip(filepath.ToSlash(rel)) {
			continue
		}
		sub, err := root.ReadDir(rel)
		if err != nil {
			continue // unreadable, or no longer the directory listed: skipped
		}
		if err := walkDir(ctx, root, rel, sub, skip, visit); err != nil {
			return err
		}
	}
	return nil
}
