package shell

import (
	"path"
	"sort"
	"strings"

	"github.com/custos-dev/custos/approval/programs"
)

// The working directory of the commands of a command line, followed through
// cd so that relative paths resolve as the shell would resolve them.

// maxCwds bounds the directories tracked after cd; past it the working
// directory is unknown (and relative paths unresolvable).
const maxCwds = 8

// cwdSet is the set of directories the next command may run in. A cd adds
// its target but keeps the old directory, since a cd may fail and the
// commands after it still run (cd nowhere; cat secrets/key).
type cwdSet struct {
	dirs    []string // absolute, clean, sorted
	unknown bool
}

func startCwd(env Env) cwdSet {
	if env.Workspace == "" {
		return cwdSet{unknown: true}
	}
	return cwdSet{dirs: []string{path.Clean(env.Workspace)}}
}

func (c cwdSet) clone() cwdSet {
	return cwdSet{dirs: append([]string(nil), c.dirs...), unknown: c.unknown}
}

func (c cwdSet) equal(o cwdSet) bool {
	if c.unknown != o.unknown || len(c.dirs) != len(o.dirs) {
		return false
	}
	for i := range c.dirs {
		if c.dirs[i] != o.dirs[i] {
			return false
		}
	}
	return true
}

// union adds the directories of o.
func (c *cwdSet) union(o cwdSet) {
	if c.unknown || o.unknown {
		*c = cwdSet{unknown: true}
		return
	}
	for _, d := range o.dirs {
		c.add(d)
	}
}

// add inserts one directory, keeping the set sorted and bounded.
func (c *cwdSet) add(nd string) {
	if c.unknown {
		return
	}
	i := sort.SearchStrings(c.dirs, nd)
	if i < len(c.dirs) && c.dirs[i] == nd {
		return
	}
	c.dirs = append(c.dirs, "")
	copy(c.dirs[i+1:], c.dirs[i:])
	c.dirs[i] = nd
	if len(c.dirs) > maxCwds {
		*c = cwdSet{unknown: true}
	}
}

// cd adds the directories a cd to target may reach, and returns them alone:
// where the commands after "cd target &&" run.
func (c *cwdSet) cd(target programs.Word, home string) cwdSet {
	if c.unknown {
		return cwdSet{unknown: true}
	}
	t := target.Text
	switch {
	case !target.Static || t == "-" || strings.ContainsAny(t, "*?[{"): // a glob names no one directory
		*c = cwdSet{unknown: true}
		return *c
	case t == "":
		if home == "" {
			*c = cwdSet{unknown: true}
			return *c
		}
		t = home
	}
	var to cwdSet
	for _, d := range c.dirs {
		nd := t
		if !strings.HasPrefix(t, "/") {
			nd = path.Join(d, t)
		}
		to.add(path.Clean(nd))
	}
	c.union(to)
	return to
}

// resolve returns the absolute paths a static word names from every
// directory in the set, or nil when it cannot be told.
func (c cwdSet) resolve(a programs.Word) []string {
	if !a.Static || a.Text == "" {
		return nil
	}
	p := a.Text
	if strings.HasPrefix(p, "/") {
		p = path.Clean(p)
		rel, how := procAlias(p)
		switch how {
		case aliasNone:
			return []string{p}
		case aliasRoot:
			return []string{rel}
		case aliasUnknown:
			return nil
		}
		p = rel // aliasCwd: relative to the current directory
	}
	if c.unknown {
		return nil
	}
	out := make([]string, len(c.dirs))
	for i, d := range c.dirs {
		out[i] = path.Join(d, p)
	}
	return out
}

// How an absolute path aliases another through /proc or /dev/fd.
const (
	aliasNone    = iota
	aliasCwd     // /proc/self/cwd/x: x in the current directory
	aliasRoot    // /proc/self/root/x: /x
	aliasUnknown // another process's cwd or root, or a directory's descriptor
)

// procAlias resolves the magic links through which a path names another one,
// so that /proc/self/cwd/.env is .env.
func procAlias(p string) (string, int) {
	var rest string
	switch {
	case strings.HasPrefix(p, "/proc/"):
		rest = p[len("/proc/"):]
	case strings.HasPrefix(p, "/dev/fd/"):
		// /dev/fd/3/x: x in the directory open as descriptor 3.
		if strings.Count(p, "/") > 3 {
			return "", aliasUnknown
		}
		return "", aliasNone
	default:
		return "", aliasNone
	}
	proc, rest, _ := strings.Cut(rest, "/")
	link, sub, _ := strings.Cut(rest, "/")
	if proc == "" || (link != "cwd" && link != "root" && !(link == "fd" && strings.Contains(sub, "/"))) {
		return "", aliasNone
	}
	if proc != "self" && proc != "thread-self" {
		return "", aliasUnknown // another process: its directories are unknown here
	}
	switch link {
	case "cwd":
		if sub == "" {
			sub = "."
		}
		return sub, aliasCwd
	case "root":
		return path.Clean("/" + sub), aliasRoot
	}
	return "", aliasUnknown // /proc/self/fd/3/x
}
