package approval

import (
	"path"
	"sort"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// AccessKind says how a shell command uses a file it names.
type AccessKind uint8

const (
	// AccessRead: the file's contents are read (cat .env, < .env, grep KEY .env).
	AccessRead AccessKind = iota + 1
	// AccessWrite: the file is created, changed, replaced or removed
	// (> x, tee x, cp a x, rm x, touch x).
	AccessWrite
	// AccessReadWrite: both (<> x, sed -i x, mv x y moves x away).
	AccessReadWrite
	// AccessMention: an argument of a command whose use of its arguments
	// custos does not know (git add .env, python x.py .env). Deny and ask
	// rules on such a path send the command to a person.
	AccessMention
	// AccessConnect: a /dev/tcp or /dev/udp redirection, which bash turns
	// into a network connection.
	AccessConnect
)

func (k AccessKind) reads() bool  { return k == AccessRead || k == AccessReadWrite }
func (k AccessKind) writes() bool { return k == AccessWrite || k == AccessReadWrite }

// FileAccess is one file a command line reads, writes or names.
type FileAccess struct {
	Kind AccessKind
	// Paths are the absolute, clean paths the word may name: one per
	// directory the command may run in (a cd that may fail leaves two).
	// Nil when the word cannot be resolved statically (a variable, a
	// substitution, a cd to an unknown place).
	Paths []string
	// Word is the word as the shell sees it after quote removal (its source
	// text when it is dynamic).
	Word string
	// Via says where the access comes from: "redirection", "tee operand",
	// "cp destination", "sed -i" …
	Via string
	// Glob is set when the word holds glob characters the shell may expand
	// to other names (quoting is not tracked, so '*' counts too: fail closed).
	Glob bool
	// cmd is the index in Analysis.Commands of the command whose operand
	// this is; -1 for redirections and wrapper options.
	cmd int
	// dir is set for destinations that may be directories written into
	// (cp a out/): an Edit rule covering the directory's content allows them.
	dir bool
}

// destination records a write to a path that may be a directory the
// command writes into.
func (w *walker) destination(a argWord, via string) {
	n := len(w.a.out.Files)
	w.access(AccessWrite, a, via)
	for i := n; i < len(w.a.out.Files); i++ {
		w.a.out.Files[i].dir = true
	}
}

// role is how a command uses one of its arguments.
type role uint8

const (
	roleNone role = iota
	roleRead
	roleWrite
	roleReadWrite
	roleMention
)

func (r role) kind() AccessKind {
	switch r {
	case roleRead:
		return AccessRead
	case roleWrite:
		return AccessWrite
	case roleReadWrite:
		return AccessReadWrite
	case roleMention:
		return AccessMention
	}
	return 0
}

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
func (c *cwdSet) cd(target argWord, home string) cwdSet {
	if c.unknown {
		return cwdSet{unknown: true}
	}
	t := target.s
	switch {
	case !target.static || t == "-" || hasGlobMeta(t):
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
func (c cwdSet) resolve(a argWord) []string {
	if !a.static || a.s == "" {
		return nil
	}
	if strings.HasPrefix(a.s, "/") {
		return []string{path.Clean(a.s)}
	}
	if c.unknown {
		return nil
	}
	out := make([]string, len(c.dirs))
	for i, d := range c.dirs {
		out[i] = path.Join(d, a.s)
	}
	return out
}

// access records one file access of word a.
func (w *walker) access(kind AccessKind, a argWord, via string) {
	if a.pipe || kind == 0 {
		return // a process substitution is a pipe, not a file
	}
	if a.static && (a.s == "-" || a.s == "") && kind != AccessConnect {
		return // stdin / stdout, or nothing
	}
	if w.inFindExec > 0 && a.static && strings.Contains(a.s, "{}") {
		a = argWord{s: a.s} // find -exec cat {} \;: the file is found at run time
	}
	if !a.static && a.node != nil {
		// A dynamic word may still be static once tracked variables are
		// substituted: judge each value it may take.
		if vals, static := w.wordVars(a.node); static {
			for _, v := range vals {
				w.access(kind, argWord{s: v, static: true}, via)
			}
			return
		}
	}
	fa := FileAccess{Kind: kind, Word: a.s, Via: via, Glob: a.static && hasShellGlob(a.s), cmd: w.curCmd}
	if kind != AccessConnect {
		fa.Paths = w.cwd.resolve(a)
	}
	w.a.out.Files = append(w.a.out.Files, fa)
}

// hasShellGlob reports unquoted-looking glob characters in a word.
func hasShellGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// mention records a word of a command whose use of it is unknown, and the
// parts of it that may be paths: the value of --opt=VALUE or KEY=VALUE and
// the file of @FILE (curl -d @.env and friends).
func (w *walker) mention(a argWord, via string) {
	if !a.static || a.pipe {
		// A dynamic argument of an unknown command may be anything; it is
		// judged as a mention that cannot be resolved.
		w.access(AccessMention, a, via)
		return
	}
	w.access(AccessMention, a, via)
	s := a.s
	if _, v, ok := strings.Cut(s, "="); ok && v != "" {
		w.access(AccessMention, argWord{s: strings.TrimPrefix(v, "@"), static: true}, via)
	}
	if rest, ok := strings.CutPrefix(s, "@"); ok && rest != "" {
		w.access(AccessMention, argWord{s: rest, static: true}, via)
	}
}

// redirectAccess records the file a redirection reads or writes, or the
// connection it opens. fd duplications and the harmless devices name no file.
func (w *walker) redirectAccess(kind AccessKind, word *syntax.Word, vals []string, static, pipe bool) {
	if pipe {
		return
	}
	if !static && word != nil {
		if vs, st := w.wordVars(word); st {
			vals, static = vs, true
		}
	}
	for _, v := range vals {
		clean := v
		if static && v != "" {
			clean = path.Clean(v)
		}
		if strings.HasPrefix(clean, "/dev/tcp/") || strings.HasPrefix(clean, "/dev/udp/") {
			w.access(AccessConnect, argWord{s: clean, static: static}, "redirection")
			continue
		}
		if static && harmlessRedirect(clean) {
			continue
		}
		w.access(kind, argWord{s: v, static: static}, "redirection")
	}
}

// harmlessRedirect are the devices a redirection may read or write without
// touching a file: the null and zero devices, the standard streams and file
// descriptors.
func harmlessRedirect(p string) bool {
	return harmlessDevice(p) || p == "/dev/stdin" || strings.HasPrefix(p, "/proc/self/fd/")
}

// operands records the file accesses of one simple command's arguments.
// args[0] is the command (wrappers already stripped).
func (w *walker) operands(args []argWord) {
	if len(args) == 0 || !args[0].static {
		return
	}
	if combos := w.substituteArgs(args); combos != nil {
		// Variables with several values (a for loop's) are alternatives,
		// not several arguments: each combination is judged on its own, so
		// that for f in a b; do sort -o $f x; done writes a and b.
		for _, c := range combos {
			w.operandsOf(c)
		}
		return
	}
	w.operandsOf(args)
}

// maxArgCombos bounds the combinations substituteArgs builds.
const maxArgCombos = 16

// substituteArgs replaces dynamic arguments that tracked variables resolve
// with their values, one combination of values per result. It returns nil
// when no argument resolves. A dynamic word that brace expansion split
// into several arguments is left alone (it stays unresolved).
func (w *walker) substituteArgs(args []argWord) [][]argWord {
	combos := [][]argWord{nil}
	changed := false
	for i, a := range args {
		alts := []argWord{a}
		split := (i > 0 && args[i-1].node == a.node) || (i+1 < len(args) && args[i+1].node == a.node)
		if !a.static && !a.pipe && a.node != nil && !split {
			if vals, static := w.wordVars(a.node); static && len(vals) > 0 {
				alts = alts[:0]
				for _, v := range vals {
					alts = append(alts, argWord{s: v, static: true})
				}
				changed = true
			}
		}
		if len(combos)*len(alts) > maxArgCombos {
			return nil
		}
		next := make([][]argWord, 0, len(combos)*len(alts))
		for _, c := range combos {
			for _, alt := range alts {
				next = append(next, append(append([]argWord(nil), c...), alt))
			}
		}
		combos = next
	}
	if !changed {
		return nil
	}
	return combos
}

func (w *walker) operandsOf(args []argWord) {
	name := path.Base(args[0].s)
	rest := args[1:]
	if noFileArgs[name] {
		return
	}
	if special, ok := specialOperands[name]; ok {
		special(w, name, rest)
		return
	}
	spec, ok := commandSpecs[name]
	if !ok {
		for _, a := range rest {
			w.mention(a, "argument of "+name)
		}
		return
	}
	spec.apply(w, name, rest)
}

// noFileArgs are commands whose arguments are never files whose contents
// they read or change (metadata only at most: test -f, cd).
var noFileArgs = map[string]bool{
	"echo": true, "printf": true, "true": true, "false": true, ":": true, "test": true, "[": true,
	"pwd": true, "sleep": true, "seq": true, "yes": true, "date": true, "whoami": true, "id": true,
	"uname": true, "basename": true, "dirname": true, "export": true, "unset": true, "set": true,
	"shopt": true, "cd": true, "pushd": true, "popd": true, "exit": true, "return": true,
	"type": true, "which": true, "wait": true, "kill": true, "umask": true, "local": true,
	"declare": true, "readonly": true, "realpath": true, "readlink": true, "hostname": true,
	"nproc": true, "env": true, "printenv": true, "read": true, "tr": true,
}

// cmdSpec describes a command's options and operands, enough to tell which
// arguments are files it reads or writes.
type cmdSpec struct {
	valued         string          // short options taking a value (-n 5, -o file)
	longValued     []string        // long options taking a separate value
	optFiles       map[string]role // options whose value is a file ("o": write)
	lead           int             // leading operands that are not files (a pattern, a mode)
	leadUnless     string          // short options that remove the lead operand (grep -e, -f)
	leadLong       []string        // long ones (--regexp, --file)
	operands       role            // role of the other operands
	lastDest       bool            // with ≥2 operands the last is written (cp, mv, ln)
	secondOut      bool            // the second operand is written (uniq IN OUT, xxd IN OUT)
	sourcesRW      bool            // sources are moved away (mv): read and written
	inPlace        string          // short options making operands read-write (sed -i)
	inPlaceL       []string        // long ones (--in-place)
	stdoutOpt      string          // short options sending output to stdout (gzip -c): operands only read
	assigns        bool            // NAME=value operands are assignments (awk)
	includeInPlace bool            // gawk -i inplace / --include=inplace edits in place
	atFileRead     bool            // option values @FILE are files read (curl -d @file)
}

func (s *cmdSpec) apply(w *walker, name string, rest []argWord) {
	var ops []argWord
	hasLeadOpt, inPlace, toStdout, targetDir := false, false, false, false
	optFile := func(opt string, v argWord) {
		if s.includeInPlace && (opt == "i" || opt == "include") && v.static && v.s == "inplace" {
			inPlace = true
			return
		}
		if s.atFileRead && v.static && (strings.HasPrefix(v.s, "@") || strings.Contains(v.s, "=@")) {
			f := v.s[1:]
			if _, after, ok := strings.Cut(v.s, "=@"); ok && !strings.HasPrefix(v.s, "@") {
				f = after // -F name=@file
			}
			w.access(AccessRead, argWord{s: f, static: true}, name+" "+optName(opt))
			return
		}
		if r, ok := s.optFiles[opt]; ok {
			if opt == "t" || opt == "target-directory" {
				targetDir = true
				w.destination(v, name+" "+optName(opt))
				return
			}
			w.access(r.kind(), v, name+" "+optName(opt))
		}
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case !a.static && strings.HasPrefix(a.s, "-"):
			// An option built at run time (--output=$OUT, -o"$F"): its
			// value cannot be resolved; judge it by what the option does.
			key := a.s[1:2]
			if strings.HasPrefix(a.s, "--") {
				key, _, _ = strings.Cut(a.s[2:], "=")
			}
			if r, ok := s.optFiles[key]; ok {
				w.access(r.kind(), argWord{s: a.s}, name+" "+optName(key))
			} else {
				w.mention(argWord{s: a.s}, "option of "+name)
			}
		case !a.static || a.s == "-" || !strings.HasPrefix(a.s, "-"):
			ops = append(ops, a)
		case a.s == "--":
			ops = append(ops, rest[i+1:]...)
			i = len(rest)
		case strings.HasPrefix(a.s, "--"):
			k, v, hasV := strings.Cut(a.s[2:], "=")
			if contains(s.leadLong, k) {
				hasLeadOpt = true
			}
			if contains(s.inPlaceL, k) {
				inPlace = true
			}
			if hasV {
				optFile(k, argWord{s: v, static: true})
				if _, known := s.optFiles[k]; !known {
					w.mention(argWord{s: v, static: true}, "option of "+name)
				}
				continue
			}
			if contains(s.longValued, k) && i+1 < len(rest) {
				i++
				optFile(k, rest[i])
			}
		default:
			cluster := a.s[1:]
			for j := 0; j < len(cluster); j++ {
				c := cluster[j]
				if strings.IndexByte(s.leadUnless, c) >= 0 {
					hasLeadOpt = true
				}
				if strings.IndexByte(s.stdoutOpt, c) >= 0 {
					toStdout = true
				}
				if strings.IndexByte(s.inPlace, c) >= 0 {
					inPlace = true
					break // sed -i[SUFFIX]: the rest is a suffix
				}
				if strings.IndexByte(s.valued, c) >= 0 {
					v := argWord{s: cluster[j+1:], static: true}
					if v.s == "" {
						if i+1 >= len(rest) {
							break
						}
						i++
						v = rest[i]
					}
					optFile(string(c), v)
					break
				}
			}
		}
	}
	if s.lead > 0 && !hasLeadOpt {
		ops = ops[min(s.lead, len(ops)):]
	}
	srcRole := s.operands
	if inPlace && srcRole == roleRead {
		srcRole = roleReadWrite
	}
	if toStdout && srcRole == roleReadWrite {
		srcRole = roleRead
	}
	via := name + " operand"
	if inPlace {
		via = name + " in place"
	}
	for i, a := range ops {
		r := srcRole
		switch {
		case s.assigns && isAssignment(a):
			continue
		case s.lastDest && !targetDir && len(ops) >= 2 && i == len(ops)-1:
			w.destination(a, name+" destination")
			continue
		case s.lastDest && len(ops) == 1 && name == "ln":
			// ln -s TARGET: the link is made in the current directory.
			w.access(AccessRead, a, via)
			if a.static {
				w.access(AccessWrite, argWord{s: path.Base(a.s), static: true}, name+" destination")
			}
			continue
		case s.secondOut && i == 1:
			w.access(AccessWrite, a, name+" output")
			continue
		case s.sourcesRW && len(ops) >= 2:
			r = roleReadWrite
		}
		w.access(r.kind(), a, via)
	}
}

func optName(o string) string {
	if len(o) == 1 {
		return "-" + o
	}
	return "--" + o
}

// isAssignment reports NAME=value (awk's command-line variable assignments).
func isAssignment(a argWord) bool {
	k, _, ok := strings.Cut(a.s, "=")
	if !ok || k == "" || !a.static {
		return false
	}
	for i, c := range k {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// reader is the spec of commands that read every operand.
var reader = cmdSpec{operands: roleRead}

// commandSpecs is the known set: commands whose file operands custos reads
// as reads or writes. Every other command's arguments are mentions.
var commandSpecs = map[string]*cmdSpec{
	// Readers.
	"cat": &reader, "tac": &reader, "nl": {valued: "bdfhilnpsvw", operands: roleRead},
	"head": {valued: "nc", operands: roleRead}, "tail": {valued: "ncs", operands: roleRead},
	"less": {valued: "bhjkoOpPtTxyz", operands: roleRead, optFiles: map[string]role{"o": roleWrite, "O": roleWrite, "log-file": roleWrite, "LOG-FILE": roleWrite}},
	"more": &reader, "wc": &reader, "rev": &reader, "fold": {valued: "w", operands: roleRead},
	"fmt": {valued: "wgp", operands: roleRead}, "expand": {valued: "t", operands: roleRead},
	"unexpand": {valued: "t", operands: roleRead}, "strings": {valued: "nte", operands: roleRead},
	"od": {valued: "AjNtSw", operands: roleRead}, "hexdump": {valued: "efns", operands: roleRead, optFiles: map[string]role{"f": roleRead}},
	"base64": {valued: "w", operands: roleRead}, "base32": {valued: "w", operands: roleRead},
	"md5sum": &reader, "sha1sum": &reader, "sha224sum": &reader, "sha256sum": &reader,
	"sha384sum": &reader, "sha512sum": &reader, "b2sum": {valued: "l", operands: roleRead},
	"cksum": &reader, "sum": &reader, "file": {valued: "emfFP", operands: roleRead, optFiles: map[string]role{"f": roleRead, "m": roleRead}},
	"stat": {valued: "c", operands: roleRead}, "ls": {valued: "wIT", operands: roleRead},
	"diff": {valued: "CUFIWLxX", operands: roleRead, optFiles: map[string]role{"X": roleRead, "exclude-from": roleRead}},
	"cmp":  {valued: "in", operands: roleRead}, "comm": &reader,
	"join":   {valued: "jte12o", operands: roleRead},
	"paste":  {valued: "d", operands: roleRead},
	"cut":    {valued: "bcdf", operands: roleRead},
	"column": {valued: "stcoNRlWHOd", operands: roleRead},
	"source": {operands: roleRead}, ".": {operands: roleRead},
	"sort": {valued: "kStTo", longValued: []string{"output", "key", "field-separator", "temporary-directory", "buffer-size", "files0-from"},
		operands: roleRead, optFiles: map[string]role{"o": roleWrite, "output": roleWrite, "T": roleWrite, "temporary-directory": roleWrite, "files0-from": roleRead}},
	"uniq":  {valued: "fsw", operands: roleRead, secondOut: true},
	"xxd":   {valued: "cglnoOs", operands: roleRead, secondOut: true},
	"iconv": {valued: "fto", operands: roleRead, optFiles: map[string]role{"o": roleWrite, "output": roleWrite}},
	"grep":  grepSpec, "egrep": grepSpec, "fgrep": grepSpec, "zgrep": grepSpec,
	"rg": {valued: "efgmABCMtTjE", longValued: []string{"regexp", "file", "glob", "type", "max-count"}, lead: 1, leadUnless: "ef",
		leadLong: []string{"regexp", "file"}, operands: roleRead, optFiles: map[string]role{"f": roleRead, "file": roleRead, "ignore-file": roleRead}},
	"ag": {valued: "ABCGgmp", lead: 1, operands: roleRead, optFiles: map[string]role{"p": roleRead, "path-to-ignore": roleRead}},
	"sed": {valued: "efl", longValued: []string{"expression", "file", "line-length"}, lead: 1, leadUnless: "ef",
		leadLong: []string{"expression", "file"}, operands: roleRead, inPlace: "i", inPlaceL: []string{"in-place"},
		optFiles: map[string]role{"f": roleRead, "file": roleRead}},
	"awk": awkSpec, "gawk": awkSpec, "mawk": awkSpec, "nawk": awkSpec,
	// Writers.
	"tee":      {operands: roleWrite},
	"touch":    {valued: "rtdA", operands: roleWrite, optFiles: map[string]role{"r": roleRead, "reference": roleRead}},
	"truncate": {valued: "sr", operands: roleWrite, optFiles: map[string]role{"r": roleRead, "reference": roleRead}},
	"rm":       {operands: roleWrite}, "rmdir": {operands: roleWrite}, "unlink": {operands: roleWrite},
	"shred": {valued: "nsu", operands: roleWrite}, "mkdir": {valued: "m", operands: roleWrite},
	"mkfifo": {valued: "m", operands: roleWrite}, "mknod": {valued: "m", operands: roleWrite},
	"chown": {lead: 1, leadLong: []string{"reference"}, operands: roleWrite, optFiles: map[string]role{"reference": roleRead}},
	"chgrp": {lead: 1, leadLong: []string{"reference"}, operands: roleWrite, optFiles: map[string]role{"reference": roleRead}},
	"cp": {valued: "tS", longValued: []string{"target-directory", "suffix"}, operands: roleRead, lastDest: true,
		optFiles: map[string]role{"t": roleWrite, "target-directory": roleWrite}},
	"mv": {valued: "tS", longValued: []string{"target-directory", "suffix"}, operands: roleRead, lastDest: true, sourcesRW: true,
		optFiles: map[string]role{"t": roleWrite, "target-directory": roleWrite}},
	"ln": {valued: "tS", longValued: []string{"target-directory", "suffix"}, operands: roleRead, lastDest: true,
		optFiles: map[string]role{"t": roleWrite, "target-directory": roleWrite}},
	"install": {valued: "tSmogb", longValued: []string{"target-directory", "suffix", "mode", "owner", "group"}, operands: roleRead, lastDest: true,
		optFiles: map[string]role{"t": roleWrite, "target-directory": roleWrite}},
	"split":  {valued: "abCdlnt", operands: roleRead, secondOut: true},
	"csplit": {valued: "bfn", operands: roleRead, optFiles: map[string]role{"f": roleWrite, "prefix": roleWrite}},
	"gzip":   gzipSpec, "gunzip": gzipSpec, "bzip2": gzipSpec, "bunzip2": gzipSpec, "xz": gzipSpec, "unxz": gzipSpec,
	"zstd": {valued: "o", operands: roleReadWrite, stdoutOpt: "c", optFiles: map[string]role{"o": roleWrite}},
	"curl": curlSpec,
	"wget": {valued: "OoaiPeTtUlQ", operands: roleNone, optFiles: map[string]role{
		"O": roleWrite, "output-document": roleWrite, "o": roleWrite, "output-file": roleWrite, "a": roleWrite,
		"append-output": roleWrite, "i": roleRead, "input-file": roleRead, "post-file": roleRead, "body-file": roleRead,
		"P": roleWrite, "directory-prefix": roleWrite}},
}

var grepSpec = &cmdSpec{valued: "efmABCDd", longValued: []string{"regexp", "file", "max-count", "context", "after-context", "before-context"},
	lead: 1, leadUnless: "ef", leadLong: []string{"regexp", "file"}, operands: roleRead,
	optFiles: map[string]role{"f": roleRead, "file": roleRead, "exclude-from": roleRead}}

var awkSpec = &cmdSpec{valued: "fvFi", longValued: []string{"file", "assign", "field-separator", "include"}, lead: 1, leadUnless: "f",
	leadLong: []string{"file"}, operands: roleRead, assigns: true, includeInPlace: true,
	optFiles: map[string]role{"f": roleRead, "file": roleRead}}

var gzipSpec = &cmdSpec{valued: "S", operands: roleReadWrite, stdoutOpt: "ct"}

var curlSpec = &cmdSpec{valued: "oTKcDbdFeEHuUAxXrwmyYzC", operands: roleNone, atFileRead: true, optFiles: map[string]role{
	"o": roleWrite, "output": roleWrite, "T": roleRead, "upload-file": roleRead, "K": roleRead, "config": roleRead,
	"c": roleWrite, "cookie-jar": roleWrite, "D": roleWrite, "dump-header": roleWrite, "trace": roleWrite,
	"trace-ascii": roleWrite, "stderr": roleWrite, "E": roleRead, "cert": roleRead, "key": roleRead,
	"netrc-file": roleRead}, longValued: []string{"output", "upload-file", "config", "cookie-jar", "dump-header",
	"trace", "trace-ascii", "stderr", "cert", "key", "netrc-file", "data", "data-binary", "data-raw",
	"data-urlencode", "form", "header", "user", "url"}}

// specialOperands are commands whose arguments do not fit cmdSpec (filled
// in init: the functions refer back to the walker).
var specialOperands map[string]func(w *walker, name string, rest []argWord)

func init() {
	specialOperands = map[string]func(w *walker, name string, rest []argWord){
		"dd": ddOperands, "find": findOperands, "jq": jqOperands, "chmod": chmodOperands,
	}
	for _, sh := range []string{"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"} {
		specialOperands[sh] = shellOperands
	}
}

// chmodOperands: the mode may look like an option (chmod -w f), so the first
// word that is a mode, whatever its spelling, is skipped.
func chmodOperands(w *walker, _ string, rest []argWord) {
	modeSeen := false
	for _, a := range rest {
		switch {
		case !modeSeen && a.static && isChmodMode(a.s):
			modeSeen = true
		case a.static && strings.HasPrefix(a.s, "--reference="):
			modeSeen = true
			w.access(AccessRead, argWord{s: strings.TrimPrefix(a.s, "--reference="), static: true}, "chmod --reference")
		case a.static && strings.HasPrefix(a.s, "-") && a.s != "-":
		default:
			w.access(AccessWrite, a, "chmod operand")
		}
	}
}

func isChmodMode(s string) bool {
	if s == "" {
		return false
	}
	if strings.Trim(s, "01234567") == "" {
		return true
	}
	if strings.Trim(s, "ugoa+-=rwxXst,") != "" {
		return false
	}
	return strings.ContainsAny(s, "+-=")
}

func ddOperands(w *walker, _ string, rest []argWord) {
	for _, a := range rest {
		switch {
		case !a.static && strings.HasPrefix(a.s, "of="):
			w.access(AccessWrite, argWord{s: a.s}, "dd of=")
		case !a.static && strings.HasPrefix(a.s, "if="):
			w.access(AccessRead, argWord{s: a.s}, "dd if=")
		case !a.static:
			w.mention(a, "dd operand")
		case strings.HasPrefix(a.s, "if="):
			w.access(AccessRead, argWord{s: a.s[3:], static: true}, "dd if=")
		case strings.HasPrefix(a.s, "of="):
			if p := path.Clean(a.s[3:]); !harmlessRedirect(p) {
				w.access(AccessWrite, argWord{s: a.s[3:], static: true}, "dd of=")
			}
		}
	}
}

// findOperands: the starting points are read (listed); -fprint* and -fls
// write their file; -newer and friends read theirs. -exec commands are
// analysed on their own; patterns (-name …) are not files.
func findOperands(w *walker, _ string, rest []argWord) {
	i := 0
	for ; i < len(rest); i++ {
		a := rest[i]
		if a.static && (strings.HasPrefix(a.s, "-") || a.s == "!" || a.s == "(") {
			break
		}
		w.access(AccessRead, a, "find start")
	}
	for ; i < len(rest); i++ {
		s := rest[i].s
		switch s {
		case "-exec", "-execdir", "-ok", "-okdir":
			for i++; i < len(rest) && rest[i].s != ";" && rest[i].s != "+"; i++ {
			}
		case "-fprint", "-fprint0", "-fls", "-fprintf":
			if i+1 < len(rest) {
				i++
				w.access(AccessWrite, rest[i], "find "+s)
			}
		case "-newer", "-anewer", "-cnewer", "-samefile":
			if i+1 < len(rest) {
				i++
				w.access(AccessRead, rest[i], "find "+s)
			}
		}
	}
}

// jqOperands: the filter, then files; --arg/--argjson take two values,
// --slurpfile/--rawfile a name and a file.
func jqOperands(w *walker, _ string, rest []argWord) {
	filterSeen := false
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a.static && (a.s == "--args" || a.s == "--jsonargs"):
			return // the rest are values, not files
		case a.static && (a.s == "--arg" || a.s == "--argjson"):
			i += 2
		case a.static && (a.s == "--slurpfile" || a.s == "--rawfile"):
			if i+2 < len(rest) {
				w.access(AccessRead, rest[i+2], "jq "+a.s)
			}
			i += 2
		case a.static && (a.s == "-f" || a.s == "--from-file"):
			if i+1 < len(rest) {
				i++
				w.access(AccessRead, rest[i], "jq "+a.s)
				filterSeen = true
			}
		case a.static && (a.s == "--indent" || a.s == "-L"):
			i++
		case a.static && strings.HasPrefix(a.s, "-") && a.s != "-":
		case !filterSeen:
			filterSeen = true
		default:
			w.access(AccessRead, a, "jq operand")
		}
	}
}

// shellOperands: with -c the script is a string (analysed on its own);
// otherwise the first operand is a script file the shell reads, and the
// rest are its arguments.
func shellOperands(w *walker, name string, rest []argWord) {
	for i, a := range rest {
		if !a.static {
			w.mention(a, "argument of "+name)
			continue
		}
		if strings.HasPrefix(a.s, "-") || strings.HasPrefix(a.s, "+") {
			if a.s == "-o" || a.s == "+o" || a.s == "-O" || a.s == "+O" {
				continue
			}
			if !strings.HasPrefix(a.s, "--") && strings.ContainsAny(a.s[1:], "cs") {
				return // -c STRING or -s: no script file
			}
			if a.s == "--rcfile" || a.s == "--init-file" {
				if i+1 < len(rest) {
					w.access(AccessRead, rest[i+1], name+" "+a.s)
				}
			}
			continue
		}
		w.access(AccessRead, a, name+" script")
		for _, b := range rest[i+1:] {
			w.mention(b, "argument of "+name)
		}
		return
	}
}

// wrapperOperands records what a wrapper's own options read or write:
// time -o FILE, flock FILE, xargs -a FILE; the rest are mentions.
func (w *walker) wrapperOperands(name string, words []argWord) {
	for i := 0; i < len(words); i++ {
		a := words[i]
		switch {
		case name == "time" && a.static && (a.s == "-o" || a.s == "--output") && i+1 < len(words):
			i++
			w.access(AccessWrite, words[i], "time -o")
		case name == "time" && a.static && strings.HasPrefix(a.s, "--output="):
			w.access(AccessWrite, argWord{s: strings.TrimPrefix(a.s, "--output="), static: true}, "time -o")
		case name == "xargs" && a.static && (a.s == "-a" || a.s == "--arg-file") && i+1 < len(words):
			i++
			w.access(AccessRead, words[i], "xargs -a")
		case name == "flock" && a.static && !strings.HasPrefix(a.s, "-"):
			w.access(AccessWrite, a, "flock lock file")
			for _, b := range words[i+1:] {
				w.mention(b, "argument of flock")
			}
			return
		default:
			w.mention(a, "argument of "+name)
		}
	}
}
