package programs

import (
	"path"
	"strings"
)

// How a program's words read, by its entry, outside the walk: the
// command text rules match, with short-option clusters split the way the
// program reads them (tar -tf x.tar is tar -t -f x.tar, so that
// Bash(tar -t:*) covers it and a deny rule for tar -x sees tar -xzf),
// and the options a special entry needs the values of (tar's -f and -C).

// Splits reports an entry whose command text Splits clusters: a program
// that reads GNU-style clusters, is not a subcommand (git log's text is
// git's), and whose options the table reads whole.
func (p *Program) Splits() bool {
	return !p.partial && !p.singleDash && !p.subcommands && !p.modules && p.parent == nil &&
		(p.special == nil || p.clusters) && len(p.short) > 0
}

// TextArgs renders a command's arguments for its text: clusters split into
// their options (-nrf → -n -r -f), an attached value of an option that
// takes one as a word of its own (-fx.tar → -f x.tar), a long option in
// its short spelling (--file=x.tar → -f x.tar), an old-style first word
// in dash form (tar tf x.tar → tar -t -f x.tar); words after -- and the
// values of options stay as they are.
func (p *Program) TextArgs(args []string) []string {
	if p.oldStyle {
		args = p.oldStyleText(args)
	}
	out := make([]string, 0, len(args)+2)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case strings.HasPrefix(a, "--"):
			k, v, hasV := strings.Cut(a[2:], "=")
			o, _ := p.longOpt(k)
			if o == nil {
				out = append(out, a)
				continue
			}
			out = append(out, o.longText(a, v, hasV)...)
			if !hasV {
				n := map[valueKind]int{valRequired: 1, valTwo: 2}[o.value]
				for ; n > 0 && i+1 < len(args); n-- {
					i++
					out = append(out, args[i])
				}
			}
		case len(a) > 1 && a[0] == '-' && !(p.dashNum && strings.Trim(a[1:], "0123456789") == ""):
			i = p.splitCluster(args, i, &out)
		default:
			out = append(out, a)
		}
	}
	return out
}

// longText renders a long option a (its value v, if hasV) in the short
// spelling its entry lists first, as rules and command texts both spell it
// (tar --extract is tar -x, make --dry-run is make -n, --lines=5 is -n 5);
// an option with no short spelling stays as written.
func (o *option) longText(a, v string, hasV bool) []string {
	short := o.names[0]
	switch {
	case len(short) != 2 || short[0] != '-':
		return []string{a}
	case o.value == valOptional:
		return []string{short + v} // -j4: an optional value is attached
	case hasV:
		return []string{short, CleanArg(v)} // a word of its own, cleaned like one
	}
	return []string{short}
}

// splitCluster appends the options of the cluster args[i] to out and
// returns the index of the last word it used.
func (p *Program) splitCluster(args []string, i int, out *[]string) int {
	cluster := args[i][1:]
	for j := 0; j < len(cluster); j++ {
		o := p.short[cluster[j]]
		switch {
		case o == nil || o.value == valOptional:
			*out = append(*out, "-"+cluster[j:]) // unknown, or an attached value: as written
			return i
		case o.value == valNone:
			*out = append(*out, "-"+cluster[j:j+1])
			continue
		}
		*out = append(*out, "-"+cluster[j:j+1])
		if rest := cluster[j+1:]; rest != "" {
			*out = append(*out, CleanArg(rest)) // -f./x.tar is -f x.tar
		} else if i+1 < len(args) {
			i++
			*out = append(*out, args[i])
		}
		return i
	}
	return i
}

// oldStyleText rewrites an old-style first word (tar cfb out.tar 20 d) in
// dash form (-c -f out.tar -b 20 d).
func (p *Program) oldStyleText(args []string) []string {
	words := make([]Word, len(args))
	for i, a := range args {
		words[i] = Word{Text: a, Static: true}
	}
	words = p.expandOldStyle(words)
	out := make([]string, len(words))
	for i, a := range words {
		out[i] = a.Text
	}
	return out
}

// expandOldStyle rewrites an old-style first word in dash form; the values
// of its letters are the words after it, in order. A first word with a
// dash, or with a letter the entry does not know, is left alone.
func (p *Program) expandOldStyle(words []Word) []Word {
	if len(words) == 0 || !words[0].Static || words[0].Text == "" || strings.HasPrefix(words[0].Text, "-") {
		return words
	}
	out := make([]Word, 0, len(words)+len(words[0].Text))
	next := 1
	for j := 0; j < len(words[0].Text); j++ {
		o := p.short[words[0].Text[j]]
		if o == nil {
			return words
		}
		out = append(out, Word{Text: "-" + words[0].Text[j:j+1], Static: true})
		if o.value == valRequired && next < len(words) {
			out = append(out, words[next])
			next++
		}
	}
	return append(out, words[next:]...)
}

// parsedOpt is one option of a command: the first spelling of its entry
// (-f for --file), and its value.
type parsedOpt struct {
	name string
	val  Word
	hasV bool
}

// parseOpts reads a command's options as scanOptions does, without
// recording anything: the options with their values, and the operands.
func (p *Program) parseOpts(rest []Word) (opts []parsedOpt, ops []Word) {
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case !a.Static || a.Text == "-" || !strings.HasPrefix(a.Text, "-"):
			ops = append(ops, a)
		case a.Text == "--":
			return opts, append(ops, rest[i+1:]...)
		case strings.HasPrefix(a.Text, "--"):
			k, v, hasV := strings.Cut(a.Text[2:], "=")
			o, _ := p.longOpt(k)
			if o == nil {
				continue
			}
			po := parsedOpt{name: o.names[0], val: Word{Text: v, Static: true}, hasV: hasV}
			if !hasV && o.value == valRequired && i+1 < len(rest) {
				i++
				po.val, po.hasV = rest[i], true
			}
			opts = append(opts, po)
		default:
			i = p.parseCluster(rest, i, &opts)
		}
	}
	return opts, ops
}

// parseCluster is parseOpts for one cluster.
func (p *Program) parseCluster(rest []Word, i int, opts *[]parsedOpt) int {
	cluster := rest[i].Text[1:]
	for j := 0; j < len(cluster); j++ {
		o := p.short[cluster[j]]
		if o == nil {
			return i
		}
		po := parsedOpt{name: o.names[0]}
		if o.value != valNone {
			po.val, po.hasV = Word{Text: cluster[j+1:], Static: true}, cluster[j+1:] != ""
			if !po.hasV && o.value == valRequired && i+1 < len(rest) {
				i++
				po.val, po.hasV = rest[i], true
			}
			*opts = append(*opts, po)
			return i
		}
		*opts = append(*opts, po)
	}
	return i
}

// CleanArg lexically cleans arguments that look like paths, so /home/./u/../
// and /home compare equal. URLs and other words are left alone.
func CleanArg(a string) string {
	if a == "" || strings.Contains(a, "://") {
		return a
	}
	if k, v, ok := strings.Cut(a, "="); ok && !strings.Contains(k, "/") && strings.HasPrefix(a, "-") == false && looksLikePath(v) {
		return k + "=" + path.Clean(v) // dd of=/dev/sda/ and similar
	}
	if looksLikePath(a) {
		return path.Clean(a)
	}
	return a
}

func looksLikePath(a string) bool {
	return strings.HasPrefix(a, "/") || strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../") ||
		a == "." || a == ".." || (strings.Contains(a, "/") && !strings.HasPrefix(a, "-"))
}
