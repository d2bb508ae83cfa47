package gitdir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// A repository's config may pull in other files: [include] path = F and
// [includeIf "COND"] path = F, in any file it includes in turn. Git reads
// an included file as if its entries stood in the config itself, so a
// core.fsmonitor, a filter, a hook path or an alias there runs on the host
// as surely as one in .git/config. Whether a condition holds (gitdir:,
// onbranch:, hasconfig:remote.*.url:) can change with the next checkout or
// remote, so every include is taken as active.
//
// The include directives are read by git itself (`git config --file -
// --no-includes --list --null`, no system or global config, no repository
// around it), so that no parser of ours reads a file differently from
// git; a file whose bytes never spell "include" (in any case) cannot hold
// one and is not handed to git. A path is taken as git takes it: ~/ and
// ~user/ from the home directories, a relative one against the directory
// of the file that names it, symbolic links followed as the kernel does.

// maxIncludeDepth is deeper than git's own limit (10), past which git
// dies without running anything.
const maxIncludeDepth = 16

// maxIncludeFiles bounds the files one closure reads; more is an error.
const maxIncludeFiles = 256

// ErrIncludes says the included files of a config could not be known.
var ErrIncludes = errors.New("cannot read the files a git config includes")

// Include is one file a git config includes.
type Include struct {
	// Path is the file as git names it: absolute, ~ expanded, cleaned.
	Path string
	// Real is Path with its symbolic links resolved as far as it exists
	// (a missing rest is appended as named).
	Real string
	// Links are the symbolic links met resolving Path, in order.
	Links []string
}

// Closure returns the files the config files roots (absolute) include,
// recursively, each once: a cycle ends where it began. home is the home
// directory ~/ means ("" leaves ~/ paths out). A root or an included file
// that is missing or not a regular file includes nothing (git skips a
// missing one, and cannot read the other); one git cannot read, or too
// many files, is an error wrapping ErrIncludes.
func Closure(roots []string, home string) ([]Include, error) {
	type pending struct {
		path  string
		depth int
	}
	seen := map[string]bool{}
	var queue []pending
	for _, r := range roots {
		seen[filepath.Clean(r)] = true
		queue = append(queue, pending{filepath.Clean(r), 0})
	}
	var out []Include
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		paths, err := includePaths(f.path)
		if err != nil {
			return out, err
		}
		for _, v := range paths {
			p, ok := includeTarget(v, f.path, home)
			if !ok || seen[p] {
				continue
			}
			if seen[p] = true; len(seen) > maxIncludeFiles {
				return out, fmt.Errorf("%w: more than %d files", ErrIncludes, maxIncludeFiles)
			}
			real, links := Resolve(p)
			out = append(out, Include{Path: p, Real: real, Links: links})
			if f.depth+1 < maxIncludeDepth {
				queue = append(queue, pending{p, f.depth + 1})
			}
		}
	}
	return out, nil
}

// includeTarget is the file include value v in file names, as git
// expands it; ok is false for one git cannot place (an unknown user, a
// ~/ path with no home, %(prefix)/: git's own installation).
func includeTarget(v, file, home string) (string, bool) {
	switch {
	case v == "":
		return "", false
	case v == "~" || strings.HasPrefix(v, "~/"):
		if home == "" {
			return "", false
		}
		return filepath.Join(home, strings.TrimPrefix(v, "~")), true
	case strings.HasPrefix(v, "~"):
		name, rest, _ := strings.Cut(v[1:], "/")
		u, err := user.Lookup(name)
		if err != nil || u.HomeDir == "" {
			return "", false
		}
		return filepath.Join(u.HomeDir, rest), true
	case strings.HasPrefix(v, "%(prefix)/"):
		return "", false
	case filepath.IsAbs(v):
		return filepath.Clean(v), true
	}
	return filepath.Join(filepath.Dir(file), v), true
}

// maxLinkHops bounds symbolic-link resolution, as the kernel's ELOOP does.
const maxLinkHops = 40

// Resolve resolves the symbolic links of the absolute path p component
// by component, as the kernel would open it, past the first missing
// component (the rest appended as named); links are the links met.
func Resolve(p string) (real string, links []string) {
	cur := "/"
	rest := strings.Split(filepath.Clean(p), "/")
	for hops := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return filepath.Join(append([]string{next}, rest...)...), links
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		t, err := os.Readlink(next)
		if hops++; err != nil || hops > maxLinkHops {
			return filepath.Join(append([]string{next}, rest...)...), append(links, next)
		}
		links = append(links, next)
		if filepath.IsAbs(t) {
			cur = "/"
		}
		rest = append(strings.Split(t, "/"), rest...)
	}
	return cur, links
}

// includeCache keeps the include values of config contents already read
// (by content: what git read once it reads the same way again).
var includeCache = struct {
	sync.Mutex
	m map[string][]string
}{m: map[string][]string{}}

// maxIncludeCache bounds includeCache (emptied when full).
const maxIncludeCache = 512

// includePaths are the include values (include.path, includeif.*.path)
// of config file path, as git reads them.
func includePaths(path string) ([]string, error) {
	b, err := ReadRegular(path)
	if err != nil || !bytes.Contains(bytes.ToLower(b), []byte("include")) {
		return nil, nil // missing or not a regular file: git reads nothing there
	}
	includeCache.Lock()
	v, ok := includeCache.m[string(b)]
	includeCache.Unlock()
	if ok {
		return v, nil
	}
	out, err := gitList(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrIncludes, path, err)
	}
	for _, rec := range strings.Split(string(out), "\x00") {
		k, val, has := strings.Cut(rec, "\n")
		if has && isIncludeKey(k) {
			v = append(v, val)
		}
	}
	includeCache.Lock()
	if len(includeCache.m) >= maxIncludeCache {
		clear(includeCache.m)
	}
	includeCache.m[string(b)] = v
	includeCache.Unlock()
	return v, nil
}

// isIncludeKey reports whether key (as git --list spells it: section and
// name lower case) is an include directive.
func isIncludeKey(k string) bool {
	if k == "include.path" {
		return true
	}
	cond, ok := strings.CutPrefix(k, "includeif.")
	return ok && strings.HasSuffix(cond, ".path") && len(cond) > len(".path")
}

// gitList lists config data's entries with git, fed on its stdin.
func gitList(data []byte) ([]byte, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, git, "config", "--file", "-", "--no-includes", "--list", "--null")
	cmd.Dir = "/"
	cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent",
		"GIT_CEILING_DIRECTORIES=/", "PATH=/usr/bin:/bin", "LC_ALL=C"}
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// RepoConfigs are the config files git reads for the git directory gd
// (absolute): its config and config.worktree, and for a linked worktree
// (or a submodule sharing one) the common directory's config first.
func RepoConfigs(gd string) []string {
	files := []string{filepath.Join(gd, "config"), filepath.Join(gd, "config.worktree")}
	if b, err := ReadRegular(filepath.Join(gd, CommonDir)); err == nil {
		common := strings.TrimSpace(string(b))
		if common != "" {
			if !filepath.IsAbs(common) {
				common = filepath.Join(gd, common)
			}
			files = append([]string{filepath.Join(common, "config")}, files...)
		}
	}
	return files
}

// HostConfigs are the host user's own git config files (home: the home
// directory), which may include a workspace's file as well: the system's,
// ~/.gitconfig and the XDG one.
func HostConfigs(home string) []string {
	files := []string{"/etc/gitconfig"}
	if home != "" {
		files = append(files, filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config"))
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		files = append(files, filepath.Join(x, "git", "config"))
	}
	return files
}

// Home is the home directory git on the host expands ~/ with ("" when
// there is none).
func Home() string {
	if h := os.Getenv("HOME"); h != "" {
		return h
	}
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return ""
}
