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
// touch its index or run its config's programs. Only an object name is
// ever the answer: the files are read by name, links followed (a
// worktree's .git names a directory anywhere), so a HEAD or ref a command
// made a link to a Read-denied file must not put that file's content in
// the record (and in rewind's output) as the "commit".
func gitHead(ws string) string {
	if h := gitHeadFiles(ws); isObjectName(h) {
		return h
	}
	return ""
}

// isObjectName says whether s is a git object name: 40 (SHA-1) or 64
// (SHA-256) lower-case hex digits.
func isObjectName(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

func gitHeadFiles(ws string) string {
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
