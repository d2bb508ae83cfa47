package approval

import (
	"path"
	"strings"
)

// The known commands: which of their arguments are files they read or
// write. Every other command's arguments are mentions (fileuse.go).

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
	if !w.tracking() {
		return nil
	}
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
// arguments are files it reads or writes. Only options that always take a
// value belong in valued: a flag listed there would swallow the operand
// after it (fail open), while a valued option left out only turns its value
// into one more operand judged (fail closed).
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

// apply records what a command of this spec does to the files its words
// name: first its options (scanOptions), then its operands by their role.
func (s *cmdSpec) apply(w *walker, name string, rest []argWord) {
	o := s.scanOptions(w, name, rest)
	s.applyOperands(w, name, o)
}

// scanned is what a command's options said, and the operands left.
type scanned struct {
	ops                                      []argWord
	hasLeadOpt, inPlace, toStdout, targetDir bool
}

// scanOptions walks the words of one command: options that name files are
// recorded as they come (-o FILE, --output=FILE, -t DIR, @FILE); the rest
// say how to read the operands, which are returned.
func (s *cmdSpec) scanOptions(w *walker, name string, rest []argWord) scanned {
	var o scanned
	optFile := func(opt string, v argWord) {
		if s.includeInPlace && (opt == "i" || opt == "include") && v.static && v.s == "inplace" {
			o.inPlace = true
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
				o.targetDir = true
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
			o.ops = append(o.ops, a)
		case a.s == "--":
			o.ops = append(o.ops, rest[i+1:]...)
			i = len(rest)
		case strings.HasPrefix(a.s, "--"):
			k, v, hasV := strings.Cut(a.s[2:], "=")
			if contains(s.leadLong, k) {
				o.hasLeadOpt = true
			}
			if contains(s.inPlaceL, k) {
				o.inPlace = true
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
			i = s.scanCluster(&o, a.s[1:], rest, i, optFile)
		}
	}
	return o
}

// scanCluster reads one cluster of short options (-la, -oFILE, -o FILE) at
// rest[i] and returns the index of the last word it used.
func (s *cmdSpec) scanCluster(o *scanned, cluster string, rest []argWord, i int, optFile func(string, argWord)) int {
	for j := 0; j < len(cluster); j++ {
		c := cluster[j]
		if strings.IndexByte(s.leadUnless, c) >= 0 {
			o.hasLeadOpt = true
		}
		if strings.IndexByte(s.stdoutOpt, c) >= 0 {
			o.toStdout = true
		}
		if strings.IndexByte(s.inPlace, c) >= 0 {
			o.inPlace = true
			return i // sed -i[SUFFIX]: the rest is a suffix
		}
		if strings.IndexByte(s.valued, c) >= 0 {
			v := argWord{s: cluster[j+1:], static: true}
			if v.s == "" {
				if i+1 >= len(rest) {
					return i
				}
				i++
				v = rest[i]
			}
			optFile(string(c), v)
			return i
		}
	}
	return i
}

// applyOperands records what the command does to each operand: read, write
// or both by the spec's role and the options seen, the last one a
// destination for cp/mv-like commands.
func (s *cmdSpec) applyOperands(w *walker, name string, o scanned) {
	ops := o.ops
	if s.lead > 0 && !o.hasLeadOpt {
		ops = ops[min(s.lead, len(ops)):]
	}
	srcRole := s.operands
	if o.inPlace && srcRole == roleRead {
		srcRole = roleReadWrite
	}
	if o.toStdout && srcRole == roleReadWrite {
		srcRole = roleRead
	}
	via := name + " operand"
	if o.inPlace {
		via = name + " in place"
	}
	for i, a := range ops {
		r := srcRole
		switch {
		case s.assigns && isAssignment(a):
			continue
		case s.lastDest && !o.targetDir && len(ops) >= 2 && i == len(ops)-1:
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
	"cat": &reader, "tac": &reader, "nl": {valued: "bdfhilnsvw", operands: roleRead},
	"head": {valued: "nc", operands: roleRead}, "tail": {valued: "ncs", operands: roleRead},
	"less": {valued: "bhjkoOpPtTxyz", operands: roleRead, optFiles: map[string]role{"o": roleWrite, "O": roleWrite, "log-file": roleWrite, "LOG-FILE": roleWrite}},
	"more": &reader, "wc": &reader, "rev": &reader, "fold": {valued: "w", operands: roleRead},
	"fmt": {valued: "wgp", operands: roleRead}, "expand": {valued: "t", operands: roleRead},
	"unexpand": {valued: "t", operands: roleRead}, "strings": {valued: "nte", operands: roleRead},
	"od": {valued: "AjNtS", operands: roleRead}, "hexdump": {valued: "efns", operands: roleRead, optFiles: map[string]role{"f": roleRead}},
	"base64": {valued: "w", operands: roleRead}, "base32": {valued: "w", operands: roleRead},
	"md5sum": &reader, "sha1sum": &reader, "sha224sum": &reader, "sha256sum": &reader,
	"sha384sum": &reader, "sha512sum": &reader, "b2sum": {valued: "l", operands: roleRead},
	"cksum": &reader, "sum": &reader, "file": {valued: "emfFP", operands: roleRead, optFiles: map[string]role{"f": roleRead, "m": roleRead}},
	"stat": {valued: "c", operands: roleRead}, "ls": {valued: "wIT", operands: roleRead},
	"diff": {valued: "CUFIWLxX", operands: roleRead, optFiles: map[string]role{"X": roleRead, "exclude-from": roleRead}},
	"cmp":  {valued: "in", operands: roleRead}, "comm": &reader,
	"join":   {valued: "aejot12v", operands: roleRead},
	"paste":  {valued: "d", operands: roleRead},
	"cut":    {valued: "bcdf", operands: roleRead},
	"column": {valued: "scoNRWHOlE", operands: roleRead},
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
	"touch":    {valued: "rtd", operands: roleWrite, optFiles: map[string]role{"r": roleRead, "reference": roleRead}},
	"truncate": {valued: "sr", operands: roleWrite, optFiles: map[string]role{"r": roleRead, "reference": roleRead}},
	"rm":       {operands: roleWrite}, "rmdir": {operands: roleWrite}, "unlink": {operands: roleWrite},
	"shred": {valued: "ns", operands: roleWrite}, "mkdir": {valued: "m", operands: roleWrite},
	"mkfifo": {valued: "m", operands: roleWrite}, "mknod": {valued: "m", operands: roleWrite},
	"chown": {lead: 1, leadLong: []string{"reference"}, operands: roleWrite, optFiles: map[string]role{"reference": roleRead}},
	"chgrp": {lead: 1, leadLong: []string{"reference"}, operands: roleWrite, optFiles: map[string]role{"reference": roleRead}},
	"cp": {valued: "tS", longValued: []string{"target-directory", "suffix"}, operands: roleRead, lastDest: true,
		optFiles: map[string]role{"t": roleWrite, "target-directory": roleWrite}},
	"mv": {valued: "tS", longValued: []string{"target-directory", "suffix"}, operands: roleRead, lastDest: true, sourcesRW: true,
		optFiles: map[string]role{"t": roleWrite, "target-directory": roleWrite}},
	"ln": {valued: "tS", longValued: []string{"target-directory", "suffix"}, operands: roleRead, lastDest: true,
		optFiles: map[string]role{"t": roleWrite, "target-directory": roleWrite}},
	"install": {valued: "tSmog", longValued: []string{"target-directory", "suffix", "mode", "owner", "group"}, operands: roleRead, lastDest: true,
		optFiles: map[string]role{"t": roleWrite, "target-directory": roleWrite}},
	"split":  {valued: "abClnt", operands: roleRead, secondOut: true},
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
