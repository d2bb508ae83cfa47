package protect

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/custos-dev/custos/sandbox/hostfs"
)

// DirPool holds empty directories for one workspace's placeholders, in the
// workspace's cache directory on the host (beside the part the sandbox
// sees, never in it). A run renames one into place for each missing
// protected directory and back afterwards, instead of making and removing
// it: a rename costs ext4 some 20 µs, where a directory made and removed
// costs it from a quarter to over a millisecond (an inode and a block
// allocated and freed, and where the parent's block group is full, a
// search of the others), a dozen times over for a workspace without any of
// the protected names. A pool that is empty, or on another mount than the
// workspace (rename fails with EXDEV), leaves mkdir and rmdir to do it.
type DirPool struct {
	dir   string   // "": no pool
	names []string // the entries listed when the run began, not yet taken
	size  int      // the entries in the pool, as far as this run knows
	off   bool     // renames do not work here this run
	made  bool     // the pool's directory exists (checked once a run)
}

// dirPoolMax bounds a pool: past it, directories are removed, not kept.
const dirPoolMax = 256

// pooledPrefix names the entries a run may take; a directory put back
// with something in it keeps another name (see give).
const pooledPrefix = "p-"

// OpenDirPool lists the pool in the cache directory cacheDir ("" for
// none).
func OpenDirPool(cacheDir string) *DirPool {
	if cacheDir == "" {
		return &DirPool{}
	}
	p := &DirPool{dir: filepath.Join(cacheDir, "placeholders")}
	ents, _ := os.ReadDir(p.dir) // missing: an empty pool, made on the first give
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), pooledPrefix) {
			p.names = append(p.names, e.Name())
		}
	}
	p.size, p.made = len(p.names), ents != nil
	return p
}

// take puts an empty directory at dst, from the pool when it can (never
// replacing anything there), else with mkdir. Like mkdir, it reports
// fs.ErrExist when dst exists.
func (p *DirPool) take(dst string) error {
	for p.dir != "" && !p.off && len(p.names) > 0 {
		src := filepath.Join(p.dir, p.names[0])
		p.names = p.names[1:]
		err := hostfs.RenameNoReplace(src, dst)
		switch {
		case err == nil:
			p.size--
			return nil
		case errors.Is(err, unix.EEXIST):
			return &fs.PathError{Op: "mkdir", Path: dst, Err: fs.ErrExist}
		case errors.Is(err, unix.ENOENT):
			continue // taken by another run of this workspace meanwhile
		default:
			p.off = true // EXDEV (another mount), no renameat2, ...
		}
	}
	return os.Mkdir(dst, 0o755)
}

// give takes the empty directory at dst away again: into the pool, or
// with rmdir. It leaves anything else alone (not a directory, a symbolic
// link, not empty): like rmdir, it only ever removes an empty directory.
func (p *DirPool) give(dst string) {
	// A directory, not a link (Lstat): a file or a link found there is
	// someone else's, and is never moved, not even into the pool and back.
	fi, err := os.Lstat(dst)
	if err != nil || !fi.IsDir() {
		return
	}
	if p.dir == "" || p.off || p.size >= dirPoolMax {
		_ = unix.Rmdir(dst) // rmdir removes nothing but an empty directory
		return
	}
	if !p.made {
		if err := os.Mkdir(p.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			_ = unix.Rmdir(dst)
			return
		}
		p.made = true
	}
	kept := filepath.Join(p.dir, pooledPrefix+hostfs.RandHex())
	if err := hostfs.RenameNoReplace(dst, kept); err != nil {
		_ = unix.Rmdir(dst)
		return
	}
	// Whether it is empty is checked once it is in the pool, where nothing
	// else writes.
	if hostfs.EmptyDir(kept) {
		p.size++
		return
	}
	// Something was written into it (by a host process, during the run):
	// put it back where it was at once. Where that name is taken again by
	// now, it stays in the pool under a name no run takes, rather than be
	// lost.
	if err := hostfs.RenameNoReplace(kept, dst); err != nil {
		_ = os.Rename(kept, filepath.Join(p.dir, "written-"+hostfs.RandHex()))
	}
}
