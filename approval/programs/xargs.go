package programs

import "strings"

// xargsOptions are GNU xargs' options (findutils' manual), read as xargs
// reads them: getopt clusters (-0n1), values attached or in the next
// word, values that may only be attached (-e[EOF], -i[R], -l[N]) and long
// options abbreviated (--nul, --max-a=1). An option with no effect changes
// only how xargs splits and batches its input, or what it prints: a rule
// naming xargs and the program it runs (Bash(xargs echo:*)) covers the
// line with it (WrapperPlain). The others do more: -a reads a file, -I
// puts the words it reads anywhere in the command (marked run), -o gives
// the command the terminal, -p asks on it and --process-slot-var sets a
// variable in the command's environment (marked load). The examples are
// checked under Bash(xargs echo:*) when the first policy compiles.
var xargsOptions = Program{name: "xargs",
	opts: `-0|--null -d|--delimiter= -E= -e|--eof=? -L= -l|--max-lines=? -n|--max-args= -P|--max-procs=
 -r|--no-run-if-empty -s|--max-chars= -t|--verbose -x|--exit --show-limits --help --version
 -a|--arg-file=:read -I=:run -i|--replace=?:run -o|--open-tty:load -p|--interactive:load
 --process-slot-var=:load`,
	allow: []string{"xargs echo", "xargs -0 echo", "xargs --null echo", "xargs -d , echo", "xargs --delimiter=, echo x",
		"xargs -0rn1 -P4 echo", "xargs -L 1 -t -x -s 1000 echo hi", "xargs --nul --max-a=1 echo", "xargs -E END echo",
		"xargs -l echo", "xargs -e echo", "xargs --show-limits --no-run-if-empty --verbose echo", "xargs -n 2 -- echo"},
	ask: []string{"xargs -I{} echo {}", "xargs -i echo {}", "xargs -a list echo", "xargs -0a list echo", "xargs --arg=list echo",
		"xargs -o echo", "xargs -p echo", "xargs --process-slot-var=X echo", "xargs --process=X echo",
		"xargs -0 rm", "xargs -eE rm echo hi", "xargs -lL rm echo", "xargs -iI rm echo", "xargs -0 sh -c 'rm $0'",
		"xargs -n1 nice echo", "xargs -0 -n1", "xargs --frob echo", "xargs --n echo", "xargs -0 ./echo"}}

// wrapperOpt is one option of a wrapper's command line as its program
// reads it: opt is nil when the program does not know it (or an
// abbreviation is ambiguous, or a value is given to an option that takes
// none: the program refuses the line); the option spans words first to
// last (last > first: its value is the next word).
type wrapperOpt struct {
	opt         *option
	name        string
	val         Word
	hasVal      bool
	first, last int
}

// eachOpt calls f for each option in words, the options of a wrapper
// before the command it runs, as getopt reads them, and returns where the
// command starts: after the options and a --, or -1 when a word there is
// built at run time (it may be an option or the command).
func (p *Program) eachOpt(words []Word, f func(wrapperOpt)) int {
	for i := 0; i < len(words); i++ {
		a := words[i]
		switch {
		case !a.Static:
			return -1
		case a.Text == "--":
			return i + 1
		case !strings.HasPrefix(a.Text, "-") || a.Text == "-":
			return i
		case strings.HasPrefix(a.Text, "--"):
			k, v, hasV := strings.Cut(a.Text[2:], "=")
			o, name := p.longOpt(k)
			wo := wrapperOpt{opt: o, name: "--" + name, first: i, last: i}
			switch {
			case o == nil || o.value == valNone && hasV:
				wo.opt, wo.name = nil, a.Text
			case hasV:
				wo.val, wo.hasVal = Word{Text: v, Static: true}, true
			case o.value == valRequired && i+1 < len(words):
				i++
				wo.val, wo.hasVal, wo.last = words[i], true, i
			}
			f(wo)
		default:
			i = p.eachShort(words, i, f)
		}
	}
	return len(words)
}

// eachShort reads the cluster words[i] (-0n1, -eE) and returns the index
// of the last word it used.
func (p *Program) eachShort(words []Word, i int, f func(wrapperOpt)) int {
	s := words[i].Text
	for j := 1; j < len(s); j++ {
		o := p.short[s[j]]
		wo := wrapperOpt{opt: o, name: "-" + s[j:j+1], first: i, last: i}
		switch {
		case o == nil:
			f(wo)
			return i // getopt refuses the letter; xargs runs nothing
		case o.value == valNone:
			f(wo)
			continue
		case j+1 < len(s):
			wo.val, wo.hasVal = Word{Text: s[j+1:], Static: true}, true
		case o.value == valRequired && i+1 < len(words):
			wo.val, wo.hasVal, wo.last = words[i+1], true, i+1
		}
		f(wo)
		return wo.last
	}
	return i
}

// wrapperProgram is the option table of a wrapper read as its program
// reads it, nil for the others.
func wrapperProgram(name string) *Program {
	if name == "xargs" {
		return &xargsOptions
	}
	return nil
}

// WrapperPlain returns the option words of the wrapper name without the
// options that change only how it reads and batches its input (xargs -0,
// -n 1, --delimiter=,), and whether it left any out. A word is left out
// only when every option it holds is one of those.
func WrapperPlain(name string, words []string) ([]string, bool) {
	p := wrapperProgram(name)
	if p == nil {
		return words, false
	}
	ws := make([]Word, len(words))
	for i, t := range words {
		ws[i] = Word{Text: t, Static: true}
	}
	// A word goes when every option it holds is plain; a -- goes too
	// (the programs a plain line may run do not start with a dash).
	drop, keep := make([]bool, len(words)), make([]bool, len(words))
	for i, t := range words {
		drop[i] = t == "--"
	}
	p.eachOpt(ws, func(o wrapperOpt) {
		for k := o.first; k <= o.last; k++ {
			drop[k] = drop[k] || o.opt != nil && o.opt.effect == 0
			keep[k] = keep[k] || o.opt == nil || o.opt.effect != 0
		}
	})
	var out []string
	for i := range words {
		if keep[i] || !drop[i] {
			out = append(out, words[i])
		}
	}
	return out, len(out) < len(words)
}

// WrapperSetsVar returns the variables a wrapper's options set in the
// environment of the command it runs (xargs --process-slot-var=NAME, and
// its abbreviations), with the word that set each.
func WrapperSetsVar(name string, words []Word) (names []string, via []Word) {
	p := wrapperProgram(name)
	if p == nil {
		return nil, nil
	}
	p.eachOpt(words, func(o wrapperOpt) {
		if o.opt != nil && o.name == "--process-slot-var" && o.hasVal {
			names, via = append(names, o.val.Text), append(via, words[o.first])
		}
	})
	return names, via
}

// wrapperReads records the files a wrapper's options read (xargs -a,
// -0a FILE, --arg=FILE) and mentions its other words.
func wrapperReads(w Walker, p *Program, words []Word) {
	mentioned := -1
	p.eachOpt(words, func(o wrapperOpt) {
		if o.opt != nil && o.opt.effect&effRead != 0 && o.hasVal {
			w.Access(AccessRead, o.val, p.name+" "+o.name)
			return
		}
		for k := max(o.first, mentioned+1); k <= o.last; k++ {
			w.Mention(words[k], "argument of "+p.name)
			mentioned = k
		}
	})
}
