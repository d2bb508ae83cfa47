package gitdir

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
// The reading is deliberately small: the [core] section of the repository's
// own config and config.worktree, last value wins. Included files
// ([include], [includeIf]) are not followed; an included hooksPath is left
// writable, which the README states.

// gitCoreValues returns core.hooksPath and core.worktree from a git config
// file ("" when unset or unreadable).
func CoreValues(file string) (hooksPath, worktree string) {
	b, err := ReadRegular(file)
	if err != nil {
		return "", ""
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
			hooksPath = val
		case "worktree":
			worktree = val
		}
	}
	return hooksPath, worktree
}

// HooksDirOf returns the hooks directory a git directory's config names
// through core.hooksPath, as an absolute path, or "" when there is none or
// it cannot be placed: a relative value is relative to the work tree, which
// is core.worktree (relative to the git directory) or else worktreeHint.
func HooksDirOf(gitdir, worktreeHint string) string {
	var hp, wt string
	files := []string{filepath.Join(gitdir, "config"), filepath.Join(gitdir, "config.worktree")}
	if b, err := ReadRegular(filepath.Join(gitdir, "commondir")); err == nil {
		// A linked worktree: the shared config comes first.
		common := strings.TrimSpace(string(b))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitdir, common)
		}
		files = append([]string{filepath.Join(common, "config")}, files...)
	}
	for _, f := range files {
		h, w := CoreValues(f)
		if h != "" {
			hp = h
		}
		if w != "" {
			wt = w
		}
	}
	switch {
	case hp == "":
		return ""
	case strings.HasPrefix(hp, "~"):
		return "" // the host user's home: never inside the sandbox's view
	case filepath.IsAbs(hp):
		return filepath.Clean(hp)
	}
	if wt != "" {
		if !filepath.IsAbs(wt) {
			wt = filepath.Join(gitdir, wt)
		}
	} else {
		wt = worktreeHint
	}
	if wt == "" {
		return ""
	}
	return filepath.Join(wt, hp)
}

// rootHooksDir returns the core.hooksPath directory of the workspace's own
// repository (a .git directory, or a pointer file and the repository it
// points to), for the path guard. Nested repositories are the sandbox's
// concern only.
func rootHooksDir(ws string) string {
	gd := filepath.Join(ws, protected.GitDir)
	fi, err := os.Lstat(gd)
	switch {
	case err != nil:
		return ""
	case fi.IsDir():
		return HooksDirOf(gd, ws)
	case fi.Mode().IsRegular():
		if target, ok := ReadPointer(gd); ok {
			return HooksDirOf(target, ws)
		}
	}
	return ""
}

// InRootHooksDir reports whether canon (canonical) lies in the hooks
// directory the workspace repository's core.hooksPath names.
func InRootHooksDir(canonWS, canon string) bool {
	hd := rootHooksDir(canonWS)
	if hd == "" {
		return false
	}
	if real, err := filepath.EvalSymlinks(hd); err == nil {
		hd = real
	}
	_, in := hostfs.Within(hd, canon)
	return in
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
