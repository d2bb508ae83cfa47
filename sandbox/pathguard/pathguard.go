package pathguard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/custos-dev/custos/protected"
	"github.com/custos-dev/custos/sandbox/gitdir"
	"github.com/custos-dev/custos/sandbox/hostfs"
)

// Sentinel errors of the path guard. Callers test them with errors.Is; the
// returned errors wrap them together with the offending path.
var (
	// ErrOutsideWorkspace means the path, lexically or after resolving
	// symlinks, leaves the workspace.
	ErrOutsideWorkspace = errors.New("path is outside the workspace")
	// ErrProtectedPath means the path may be read but not written by the
	// file tools: the host runs what it names (see protected.By). Refusals
	// are *ProtectedError values, which name the rule.
	ErrProtectedPath = errors.New("path is protected and read-only")
)

// maxSymlinkHops bounds symlink resolution, like the kernel's ELOOP limit,
// so a symlink cycle inside the workspace ends with an error, not a hang.
const maxSymlinkHops = 40

// Resolve is the one guard every file tool goes through. p is taken
// relative to the workspace; an absolute p is accepted only when it lies
// inside the workspace. It returns the canonical absolute path of the target:
// every symlink in it resolved, so the returned path contains no symlink at
// the time of the call.
//
// The checks, in order:
//  1. lexical: after cleaning, p must not climb out with "..";
//  2. canonical: the target is resolved component by component (symlinks
//     followed, including dangling ones and ones whose target does not exist
//     yet), and the result must lie inside the canonical workspace, so a
//     symlink inside the workspace cannot point out of it;
//  3. with write set, protected paths are refused, both as named and as
//     resolved (a symlink "x" -> ".git/hooks" does not make hooks writable),
//     and so is the hooks directory the workspace repository's
//     core.hooksPath names.
//
// TOCTOU: between this call returning and the caller opening the path,
// another process could replace a directory on the path with a symlink
// (out of the workspace, or to a Read-denied or protected file inside it).
// Callers close that window by opening the answer through Root, which
// follows no symlink at all (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS):
// the name opened is the name checked, or the open fails with
// ErrPathChanged.
func Resolve(workspace, p string, write bool) (string, error) {
	canon, _, err := ResolveWithWorkspace(workspace, p, write)
	return canon, err
}

// ResolveWithWorkspace is Resolve that also returns the canonical
// workspace it resolved p under (CanonicalWorkspace's answer), so that a
// caller needing both resolves the workspace once.
func ResolveWithWorkspace(workspace, p string, write bool) (canon, canonWS string, err error) {
	if err := checkPath(p); err != nil {
		return "", "", err
	}
	absWS, canonWS, err := canonicalWorkspace(workspace)
	if err != nil {
		return "", "", err
	}
	canon, err = resolve(absWS, canonWS, p, write)
	return canon, canonWS, err
}

// ResolveUnder is Resolve for a workspace the caller resolved itself a
// moment ago in the same call (CanonicalWorkspace, ResolveWithWorkspace):
// canonWS is taken as canonical and not resolved again. Every component
// of p is still resolved, and the result must lie inside canonWS. A tool
// checking many paths of one answer (the LSP tool's result locations)
// pays for the workspace once, not once per path.
func ResolveUnder(canonWS, p string, write bool) (string, error) {
	if err := checkPath(p); err != nil {
		return "", err
	}
	if !filepath.IsAbs(canonWS) || filepath.Clean(canonWS) != canonWS {
		return "", fmt.Errorf("workspace %q is not a canonical absolute path", canonWS)
	}
	return resolve(canonWS, canonWS, p, write)
}

// ResolveOpen is ResolveWithWorkspace with the canonical workspace opened
// as a Root, for a caller that does its I/O through it (the file tools):
// the same checks, the Root named by the canonical workspace. On Linux the
// workspace is opened once and named by the kernel (openWorkspace), in
// place of a system call for each of its components, a stat and an open.
func ResolveOpen(workspace, p string, write bool) (root *Root, canon string, err error) {
	if err := checkPath(p); err != nil {
		return nil, "", err
	}
	root, absWS, err := openWorkspace(workspace)
	if err != nil {
		return nil, "", err
	}
	canon, err = resolve(absWS, root.Name(), p, write)
	if err != nil {
		_ = root.Close()
		return nil, "", err
	}
	return root, canon, nil
}

// checkPath refuses what is no path at all.
func checkPath(p string) error {
	if p == "" {
		return errors.New("empty path")
	}
	if strings.ContainsRune(p, 0) {
		return fmt.Errorf("path %q contains a NUL byte", p)
	}
	return nil
}

// resolve is Resolve's checks of p under the workspace, named absWS as
// given and canonWS resolved.
func resolve(absWS, canonWS, p string, write bool) (string, error) {
	// Lexical check. An absolute path may name the workspace through either
	// its given or its canonical spelling (e.g. /tmp vs /private/tmp).
	var rel string
	if filepath.IsAbs(p) {
		cp := filepath.Clean(p)
		r, ok := hostfs.Within(absWS, cp)
		if !ok {
			r, ok = hostfs.Within(canonWS, cp)
		}
		if !ok {
			return "", fmt.Errorf("%s: %w", p, ErrOutsideWorkspace)
		}
		rel = r
	} else {
		rel = filepath.Clean(p)
		if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "", fmt.Errorf("%s: %w", p, ErrOutsideWorkspace)
		}
	}
	if write {
		if rule, ok := protected.By(rel); ok {
			return "", &ProtectedError{Path: p, Rule: rule}
		}
	}

	// Canonical check: start from the canonical workspace, which is
	// symlink-free, and walk the remaining components ourselves.
	canon, err := canonicalize(canonWS, rel)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", p, err)
	}
	crel, ok := hostfs.Within(canonWS, canon)
	if !ok {
		return "", fmt.Errorf("%s (resolves to %s): %w", p, canon, ErrOutsideWorkspace)
	}
	if write {
		if rule, ok := protected.By(crel); ok {
			return "", &ProtectedError{Path: fmt.Sprintf("%s (resolves to %s)", p, crel), Rule: rule}
		}
		if gitdir.InRootHooksDir(canonWS, canon) {
			return "", &ProtectedError{Path: p + " (in the directory core.hooksPath names)", Rule: protected.GitHooks}
		}
		if gitdir.InRootIncludes(canonWS, canon) {
			return "", &ProtectedError{Path: p + " (a file the repository's git config includes)", Rule: protected.GitConfig}
		}
	}
	return canon, nil
}

// CanonicalWorkspace returns the workspace with every symlink resolved: the
// root that paths returned by Resolve lie under. The workspace must exist
// and be a directory.
func CanonicalWorkspace(workspace string) (string, error) {
	_, c, err := canonicalWorkspace(workspace)
	return c, err
}

func canonicalWorkspace(workspace string) (abs, canon string, err error) {
	if workspace == "" {
		return "", "", errors.New("no workspace configured")
	}
	abs, err = filepath.Abs(workspace)
	if err != nil {
		return "", "", fmt.Errorf("workspace %s: %w", workspace, err)
	}
	canon, err = filepath.EvalSymlinks(abs)
	if err != nil {
		return "", "", fmt.Errorf("workspace %s: %w", workspace, err)
	}
	fi, err := os.Stat(canon)
	if err != nil {
		return "", "", fmt.Errorf("workspace %s: %w", workspace, err)
	}
	if !fi.IsDir() {
		return "", "", fmt.Errorf("workspace %s is not a directory", workspace)
	}
	return abs, canon, nil
}

// openWorkspacePortable is openWorkspace by CanonicalWorkspace and
// OpenRoot.
func openWorkspacePortable(workspace string) (*Root, string, error) {
	abs, canon, err := canonicalWorkspace(workspace)
	if err != nil {
		return nil, "", err
	}
	root, err := OpenRoot(canon)
	if err != nil {
		return nil, "", fmt.Errorf("open workspace: %w", err)
	}
	return root, abs, nil
}

// canonicalize resolves rel under base (canonical, symlink-free) the way the
// kernel would, except that it keeps going past components that do not exist
// yet: those are appended lexically. Unlike filepath.EvalSymlinks it also
// resolves a dangling symlink to where it points, which is where a write
// through it would land.
func canonicalize(base, rel string) (string, error) {
	resolved := base
	rest := splitPath(rel)
	hops := 0
	missing := false // once a component is missing, the rest cannot be symlinks
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			// resolved never contains a symlink, so its lexical parent is
			// its real parent.
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		if missing {
			resolved = next
			continue
		}
		fi, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				missing = true
				resolved = next
				continue
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if len(rest) > 0 && !fi.IsDir() {
				return "", fmt.Errorf("%s: %w", next, errNotDir)
			}
			resolved = next
			continue
		}
		hops++
		if hops > maxSymlinkHops {
			return "", fmt.Errorf("%s: too many levels of symbolic links", next)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			resolved = string(filepath.Separator)
			if v := filepath.VolumeName(target); v != "" {
				resolved = v + string(filepath.Separator)
			}
		}
		rest = append(splitPath(target), rest...)
	}
	return resolved, nil
}

var errNotDir = errors.New("not a directory")

func splitPath(p string) []string {
	p = strings.TrimPrefix(p, filepath.VolumeName(p))
	return strings.Split(filepath.ToSlash(p), "/")
}
