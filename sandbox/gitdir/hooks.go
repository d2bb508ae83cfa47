package gitdir

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/custos-dev/custos/protected"
	"github.com/custos-dev/custos/sandbox/hostfs"
)

// core.hooksPath moves a repository's hooks out of .git/hooks, usually into
// the work tree (husky: .husky or .husky/_, the latter git-ignored, so a
// changed hook there never shows in a diff). Those hooks run on the host as
// surely as .git/hooks, so the directory it names is protected too.
//
// The reading is deliberately small: the [core] section of each file git
// reads for the repository (config, config.worktree, the common config of
// a linked worktree, and every file those include, see include.go). Since
// an include may or may not be active, every core.hooksPath value any of
// them holds names a hooks directory.

// CoreValues returns core.hooksPath and core.worktree from a git config
// file ("" when unset or unreadable), the last value of each.
func CoreValues(file string) (hooksPath, worktree string) {
	hps, worktree := coreAll(file)
	if len(hps) > 0 {
		hooksPath = hps[len(hps)-1]
	}
	return hooksPath, worktree
}

// coreAll returns every core.hooksPath value of a git config file, in
// order, and the last core.worktree.
func coreAll(file string) (hooksPaths []string, worktree string) {
	b, err := ReadRegular(file)
	if err != nil {
		return nil, ""
	}
	inCore := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				inCore = false
				continue
			}
			inCore = strings.EqualFold(strings.TrimSpace(line[1:end]), "core")
			line = strings.TrimSpace(line[end+1:]) // "[core] hooksPath = x" is valid
			if line == "" {
				continue
			}
		}
		if !inCore {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		if rest, quoted := strings.CutPrefix(val, `"`); quoted {
			if j := strings.IndexByte(rest, '"'); j >= 0 {
				val = rest[:j]
			}
		} else if i := strings.IndexAny(val, "#;"); i >= 0 {
			val = strings.TrimSpace(val[:i])
		}
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "hookspath":
			hooksPaths = append(hooksPaths, val)
		case "worktree":
			worktree = val
		}
	}
	return hooksPaths, worktree
}

// HooksDirOf returns the hooks directory a git directory's config names
// through core.hooksPath (the last value of its own files), as an absolute
// path, or "" when there is none or it cannot be placed.
func HooksDirOf(gitdir, worktreeHint string) string {
	dirs := hooksDirs(gitdir, worktreeHint, RepoConfigs(gitdir), true)
	if len(dirs) == 0 {
		return ""
	}
	return dirs[len(dirs)-1]
}

// HooksDirsOf returns every hooks directory a git directory's config
// files, and the files they include (home expands ~/), name through
// core.hooksPath, as absolute paths: any of them may be the active one.
// A relative value is relative to the work tree, which is core.worktree
// (relative to the git directory) or else worktreeHint. err says the
// included files could not all be read (ErrIncludes); dirs is what was
// found all the same.
func HooksDirsOf(gitdir, worktreeHint, home string) (dirs []string, err error) {
	files := RepoConfigs(gitdir)
	incs, err := Closure(files, home)
	for _, in := range incs {
		files = append(files, in.Path)
	}
	dirs = hooksDirs(gitdir, worktreeHint, files, false)
	return dirs, err
}

// hooksDirs places the core.hooksPath values of files (the last only,
// when last is set).
func hooksDirs(gitdir, worktreeHint string, files []string, last bool) []string {
	var hps []string
	var wt string
	for _, f := range files {
		h, w := coreAll(f)
		if last && len(h) > 1 {
			h = h[len(h)-1:]
		}
		hps = append(hps, h...)
		if w != "" {
			wt = w
		}
	}
	if last && len(hps) > 1 {
		hps = hps[len(hps)-1:]
	}
	if wt != "" {
		if !filepath.IsAbs(wt) {
			wt = filepath.Join(gitdir, wt)
		}
	} else {
		wt = worktreeHint
	}
	var out []string
	for _, hp := range hps {
		switch {
		case hp == "":
		case strings.HasPrefix(hp, "~"):
			// The host user's home: never inside the sandbox's view.
		case filepath.IsAbs(hp):
			out = append(out, filepath.Clean(hp))
		case wt != "":
			out = append(out, filepath.Join(wt, hp))
		}
	}
	return out
}

// rootGitDir returns the git directory of the workspace's own repository
// (a .git directory, or the repository a pointer file names), for the path
// guard ("" when there is none). Nested repositories are the sandbox's
// concern only.
func rootGitDir(ws string) string {
	gd := filepath.Join(ws, protected.GitDir)
	fi, err := os.Lstat(gd)
	switch {
	case err != nil:
		return ""
	case fi.IsDir():
		return gd
	case fi.Mode().IsRegular():
		if target, ok := ReadPointer(gd); ok {
			return target
		}
	}
	return ""
}

// InRootHooksDir reports whether canon (canonical) lies in a hooks
// directory the workspace repository's core.hooksPath names, in its
// config or a file that includes.
func InRootHooksDir(canonWS, canon string) bool {
	gd := rootGitDir(canonWS)
	if gd == "" {
		return false
	}
	hds, _ := HooksDirsOf(gd, canonWS, Home())
	for _, hd := range hds {
		if real, err := filepath.EvalSymlinks(hd); err == nil {
			hd = real
		}
		if _, in := hostfs.Within(hd, canon); in {
			return true
		}
	}
	return false
}

// InRootIncludes reports whether canon (canonical) is a file the
// workspace repository's config, or the host user's own, includes, or a
// symbolic link on the way to one; when those cannot be read, it reports
// true (fail closed).
func InRootIncludes(canonWS, canon string) bool {
	home := Home()
	roots := HostConfigs(home)
	if gd := rootGitDir(canonWS); gd != "" {
		roots = append(RepoConfigs(gd), roots...)
	}
	incs, err := Closure(roots, home)
	if err != nil {
		return true
	}
	for _, in := range incs {
		if in.Real == canon || in.Path == canon || slices.Contains(in.Links, canon) {
			return true
		}
	}
	return false
}

// ReadPointer reads a "gitdir: <path>" pointer file and returns its
// target directory, symlinks resolved, wherever it is.
func ReadPointer(file string) (string, bool) {
	b, err := ReadRegular(file)
	if err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	t, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return "", false
	}
	t = strings.TrimSpace(t)
	if !filepath.IsAbs(t) {
		t = filepath.Join(filepath.Dir(file), t)
	}
	real, err := filepath.EvalSymlinks(t)
	if err != nil {
		return "", false
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", false
	}
	return real, true
}

// maxGitFile bounds what is read of a git config or pointer file.
const maxGitFile = 1 << 20

// ReadRegular reads at most maxGitFile bytes of a regular file. Everything
// here reads files a command may have planted, so a FIFO or a device (which
// would block the worker or never end) is refused without blocking: the
// open does not wait for a writer, and the type is checked on the open file.
func ReadRegular(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", path, errNotRegular)
	}
	return io.ReadAll(io.LimitReader(f, maxGitFile))
}

var errNotRegular = errors.New("not a regular file")
