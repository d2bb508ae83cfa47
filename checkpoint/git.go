package checkpoint

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// gitHead is the commit the workspace's git HEAD names, read from its
// files ("" without a repository or when it cannot be read): no git is
// run, and nothing of the repository is written, so recording can never
// touch its index or run its config's programs.
func gitHead(ws string) string {
	gitDir := filepath.Join(ws, ".git")
	if data, err := os.ReadFile(gitDir); err == nil {
		// A worktree or submodule: ".git" is a file naming its directory.
		d, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
		if !ok {
			return ""
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(ws, d)
		}
		gitDir = d
	}
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return ""
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
	if !ok {
		return strings.TrimSpace(string(head)) // detached
	}
	return resolveRef(gitDir, ref)
}

// resolveRef reads ref in gitDir, its common directory and packed-refs.
func resolveRef(gitDir, ref string) string {
	dirs := []string{gitDir}
	if c, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		d := strings.TrimSpace(string(c))
		if !filepath.IsAbs(d) {
			d = filepath.Join(gitDir, d)
		}
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if v, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(ref))); err == nil {
			return strings.TrimSpace(string(v))
		}
	}
	for _, d := range dirs {
		f, err := os.Open(filepath.Join(d, "packed-refs"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if sum, name, ok := strings.Cut(sc.Text(), " "); ok && name == ref {
				f.Close()
				return sum
			}
		}
		f.Close()
	}
	return ""
}
