package programs

import "strings"

// Wrappers: the commands that run another (env, sudo, timeout, xargs …),
// by the option grammar that says where the wrapped command starts, and
// the files their own options name.

func isDuration(s string) bool {
	if s == "" {
		return false
	}
	s = strings.TrimRight(s, "smhd")
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && r != '.' {
			return false
		}
	}
	return true
}

// wrapperSpec is the option grammar of a command that runs another.
type wrapperSpec struct {
	valued   string   // short options taking a value
	longVal  []string // long options taking a separate value
	posArgs  int      // positional arguments before the command (timeout DURATION)
	dashNum  bool     // accepts -N (nice -10)
	assigns  bool     // accepts NAME=value before the command (env)
	optStops bool     // options end at the first non-option
}

// wrapperSpecs are the wrappers Unwrap sees through.
var wrapperSpecs = map[string]wrapperSpec{
	"env":         {valued: "uCS", longVal: []string{"--unset", "--chdir", "--split-string"}, assigns: true},
	"sudo":        {valued: "ugpChDrtTUR", longVal: []string{"--user", "--group", "--prompt", "--close-from", "--chdir", "--host", "--role", "--type", "--other-user", "--chroot", "--command-timeout"}},
	"doas":        {valued: "uC"},
	"pkexec":      {longVal: []string{"--user"}},
	"run0":        {valued: "uD", longVal: []string{"--user", "--chdir", "--setenv", "--property", "--unit", "--description", "--slice", "--nice"}},
	"timeout":     {valued: "sk", longVal: []string{"--signal", "--kill-after"}, posArgs: 1},
	"nice":        {valued: "n", longVal: []string{"--adjustment"}, dashNum: true},
	"nohup":       {},
	"time":        {valued: "fo", longVal: []string{"--format", "--output"}},
	"xargs":       {}, // read by its option table, xargsOptions (xargs.go)
	"command":     {},
	"builtin":     {},
	"exec":        {valued: "a"},
	"stdbuf":      {valued: "ioe", longVal: []string{"--input", "--output", "--error"}},
	"ionice":      {valued: "cnp", longVal: []string{"--class", "--classdata", "--pid"}},
	"chrt":        {posArgs: 1},
	"setsid":      {},
	"unbuffer":    {},
	"caffeinate":  {},
	"flock":       {valued: "wEc", posArgs: 1},
	"busybox":     {}, // busybox APPLET ARGS runs the applet
	"taskset":     {posArgs: 1},
	"numactl":     {},
	"systemd-run": {valued: "pEuM", longVal: []string{"--unit", "--property", "--setenv", "--uid", "--gid", "--description", "--slice", "--working-directory"}},
}

// Unwrap reports whether name is a wrapper command and, if so, the index in
// rest where the wrapped command starts (len(rest) if none; -1 if it cannot
// be told statically).
func Unwrap(name string, rest []Word) (int, bool) {
	wr, ok := wrapperSpecs[name]
	if !ok {
		return 0, false
	}
	if p := wrapperProgram(name); p != nil {
		return p.eachOpt(rest, func(wrapperOpt) {}), true
	}
	i := 0
	for i < len(rest) {
		a := rest[i]
		if !a.Static && wr.assigns && IsAssignment(Word{Text: a.Text, Static: true}) {
			i++ // env PATH=/usr/local/go/bin:$PATH cmd: a value built at run time
			continue
		}
		if !a.Static {
			return -1, true
		}
		s := a.Text
		switch {
		case s == "--":
			i++
			for wr.assigns && i < len(rest) && IsAssignment(Word{Text: rest[i].Text, Static: true}) {
				i++ // env -- NAME=value COMMAND: the assignments still come first
			}
			goto positional
		case wr.assigns && strings.Contains(s, "=") && !strings.HasPrefix(s, "-"):
			i++
		case strings.HasPrefix(s, "--"):
			k, _, hasV := strings.Cut(s, "=")
			i++
			if !hasV {
				for _, lv := range wr.longVal {
					if lv == k {
						i++
					}
				}
			}
			if name == "env" && (k == "--split-string") {
				return -1, true
			}
		case strings.HasPrefix(s, "-") && len(s) > 1:
			if name == "env" && strings.Contains(s, "S") {
				return -1, true // env -S 'cmd args': a string split at run time
			}
			if name == "command" && strings.ContainsAny(s, "vV") {
				return len(rest), true // command -v NAME only looks a name up
			}
			if wr.dashNum && isDuration(strings.TrimPrefix(s[1:], "-")) {
				i++
				continue
			}
			i++
			for j := 1; j < len(s); j++ {
				if strings.IndexByte(wr.valued, s[j]) >= 0 {
					if j == len(s)-1 {
						i++ // value is the next word
					}
					break
				}
			}
		default:
			goto positional
		}
	}
positional:
	// timeout DURATION COMMAND, chrt PRIORITY COMMAND, taskset MASK COMMAND …
	i += wr.posArgs
	if i > len(rest) {
		return len(rest), true
	}
	return i, true
}

// WrapperOperands records what a wrapper's own options read or write:
// time -o FILE, flock FILE, xargs -a FILE; the rest are mentions.
func WrapperOperands(w Walker, name string, words []Word) {
	if p := wrapperProgram(name); p != nil {
		wrapperReads(w, p, words)
		return
	}
	for i := 0; i < len(words); i++ {
		a := words[i]
		switch {
		case name == "time" && a.Static && a.Text == "--output" && i+1 < len(words):
			i++
			w.Access(AccessWrite, words[i], "time -o")
		case name == "time" && a.Static && strings.HasPrefix(a.Text, "--output="):
			w.Access(AccessWrite, Word{Text: strings.TrimPrefix(a.Text, "--output="), Static: true}, "time -o")
		case name == "time" && a.Static && strings.HasPrefix(a.Text, "-") && !strings.HasPrefix(a.Text, "--"):
			// A cluster: -vo out.
			want, kind := byte('o'), AccessWrite
			val, next, ok := ClusterValue(a.Text, wrapperSpecs[name].valued, want)
			switch {
			case ok && next && i+1 < len(words):
				i++
				w.Access(kind, words[i], name+" -"+string(want))
			case ok && !next:
				w.Access(kind, Word{Text: val, Static: true}, name+" -"+string(want))
			case next && i+1 < len(words):
				i++ // another option's value
			}
		case name == "flock" && a.Static && !strings.HasPrefix(a.Text, "-"):
			w.Access(AccessWrite, a, "flock lock file")
			for _, b := range words[i+1:] {
				w.Mention(b, "argument of flock")
			}
			return
		default:
			w.Mention(a, "argument of "+name)
		}
	}
}

// ClusterValue reads a cluster of short options (-0a) whose letters in
// valued take a value: the value of the letter want (attached, or the
// next word: next), whether want is in the cluster, and next also when
// another letter takes the next word.
func ClusterValue(s, valued string, want byte) (val string, next, ok bool) {
	for j := 1; j < len(s); j++ {
		if strings.IndexByte(valued, s[j]) < 0 {
			continue
		}
		rest := s[j+1:]
		return rest, rest == "", s[j] == want
	}
	return "", false, false
}
