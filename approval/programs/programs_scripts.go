package programs

import (
	"errors"
	"strings"
)

// The scripts of sed and awk, parsed far enough to find what they run,
// read and write. A script that cannot be parsed is a
// finding: an allow rule for the program does not cover it.

// scriptEffect is one thing a script does.
type scriptEffect struct {
	kind   effect // effRun, effRead, effWrite
	option string // the script command: "e", "s///e", "w", "system()", "|"
	file   Word
}

func scriptFindings(w Walker, p *Program, effs []scriptEffect, err error, sandboxed bool) {
	if err != nil {
		w.Find(Finding{Program: p.name, Option: "script", What: "cannot be parsed (" + err.Error() + "): " + whatScript})
		return
	}
	if sandboxed {
		return // --sandbox: the program refuses e, r, w, system() and redirections
	}
	for _, e := range effs {
		switch e.kind {
		case effRun:
			w.Find(Finding{Program: p.name, Option: e.option, What: whatRuns})
		case effRead:
			w.OptionAccess(AccessRead, e.file, p.name, e.option, false)
		case effWrite:
			if e.file.Static && HarmlessRedirect(e.file.Text) {
				continue
			}
			w.OptionAccess(AccessWrite, e.file, p.name, e.option, false)
		}
	}
}

// sedScript finds sed's e command and s///e flag (run), r and R (read), w,
// W and s///w (write).
func sedScript(w Walker, p *Program, s Word, sandboxed bool) {
	sp := &sedParser{src: s.Text}
	err := sp.parse()
	scriptFindings(w, p, sp.effs, err, sandboxed)
}

type sedParser struct {
	src  string
	i    int
	effs []scriptEffect
}

var errSedEOF = errors.New("unexpected end of sed script")

func (sp *sedParser) eof() bool { return sp.i >= len(sp.src) }
func (sp *sedParser) peek() byte {
	if sp.eof() {
		return 0
	}
	return sp.src[sp.i]
}
func (sp *sedParser) skipSpace() {
	for !sp.eof() && (sp.src[sp.i] == ' ' || sp.src[sp.i] == '\t') {
		sp.i++
	}
}

// toEOL returns the rest of the line (a file name, a label, a command).
func (sp *sedParser) toEOL(stopAtSemicolon bool) string {
	start := sp.i
	for !sp.eof() && sp.src[sp.i] != '\n' && !(stopAtSemicolon && (sp.src[sp.i] == ';' || sp.src[sp.i] == '}')) {
		sp.i++
	}
	return sp.src[start:sp.i]
}

// parse reads the whole script, GNU sed's grammar: addresses, blocks and
// the separators between commands here, each command's own arguments in
// command, so that the cases can be held against sed's manual in one place.
func (sp *sedParser) parse() error {
	depth := 0
	for {
		for !sp.eof() && strings.IndexByte(" \t\n;", sp.peek()) >= 0 {
			sp.i++
		}
		if sp.eof() {
			break
		}
		if sp.peek() == '#' {
			sp.toEOL(false)
			continue
		}
		hasAddr, err := sp.addresses()
		if err != nil {
			return err
		}
		sp.skipSpace()
		if sp.eof() {
			return errSedEOF
		}
		c := sp.src[sp.i]
		sp.i++
		switch c {
		case '{':
			depth++
			continue
		case '}':
			if depth--; depth < 0 || hasAddr {
				return errors.New("unexpected }")
			}
		default:
			toEOL, err := sp.command(c, hasAddr)
			if err != nil {
				return err
			}
			if toEOL {
				continue
			}
		}
		sp.skipSpace()
		if !sp.eof() && strings.IndexByte(";\n}#", sp.peek()) < 0 {
			return errors.New("extra characters after command")
		}
	}
	if depth != 0 {
		return errors.New("unmatched {")
	}
	return nil
}

// command reads what follows the one-letter command c (its label, file,
// text or expressions) and records what it reads, writes or runs. toEOL
// is set for the commands whose argument runs to the end of the line
// (a, i, c, r, w, e): nothing may follow them to check.
func (sp *sedParser) command(c byte, hasAddr bool) (toEOL bool, err error) {
	switch c {
	case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
	case 'l', 'L', 'q', 'Q':
		sp.skipSpace()
		for !sp.eof() && sp.peek() >= '0' && sp.peek() <= '9' {
			sp.i++
		}
	case 'a', 'i', 'c':
		sp.text()
		return true, nil
	case ':':
		if hasAddr {
			return false, errors.New(": does not take an address")
		}
		if strings.TrimSpace(sp.toEOL(true)) == "" {
			return false, errors.New("missing label")
		}
	case 'b', 't', 'T', 'v':
		sp.toEOL(true)
	case 'r', 'R', 'w', 'W':
		sp.skipSpace()
		f := sp.toEOL(false)
		kind := effRead
		if c == 'w' || c == 'W' {
			kind = effWrite
		}
		sp.effs = append(sp.effs, scriptEffect{kind: kind, option: string(c), file: Word{Text: f, Static: true}})
		return true, nil
	case 'e':
		sp.toEOL(false)
		sp.effs = append(sp.effs, scriptEffect{kind: effRun, option: "e"})
		return true, nil
	case 's':
		return false, sp.subst()
	case 'y':
		d, err := sp.delim()
		if err != nil {
			return false, err
		}
		for range 2 {
			if err := sp.until(d, false); err != nil {
				return false, err
			}
		}
	default:
		return false, errors.New("unknown command " + string(c))
	}
	return false, nil
}

// addresses reads an optional address or range, and a !.
func (sp *sedParser) addresses() (bool, error) {
	has, err := sp.address(false)
	if err != nil || !has {
		return has, err
	}
	if sp.peek() == ',' {
		sp.i++
		sp.skipSpace()
		if ok, err := sp.address(true); err != nil || !ok {
			return true, errors.New("bad address range")
		}
	}
	sp.skipSpace()
	for sp.peek() == '!' {
		sp.i++
		sp.skipSpace()
	}
	return true, nil
}

func (sp *sedParser) address(second bool) (bool, error) {
	c := sp.peek()
	switch {
	case c >= '0' && c <= '9' || second && (c == '+' || c == '~'):
		sp.i++
		for !sp.eof() && (sp.peek() >= '0' && sp.peek() <= '9' || sp.peek() == '~') {
			sp.i++
		}
		return true, nil
	case c == '$':
		sp.i++
		return true, nil
	case c == '/' || c == '\\':
		sp.i++
		d := byte('/')
		if c == '\\' {
			if sp.eof() {
				return false, errSedEOF
			}
			d = sp.src[sp.i]
			sp.i++
		}
		if err := sp.until(d, true); err != nil {
			return false, err
		}
		for sp.peek() == 'I' || sp.peek() == 'M' {
			sp.i++
		}
		return true, nil
	}
	return false, nil
}

func (sp *sedParser) delim() (byte, error) {
	if sp.eof() {
		return 0, errSedEOF
	}
	d := sp.src[sp.i]
	if d == '\n' || d == '\\' {
		return 0, errors.New("bad delimiter")
	}
	sp.i++
	return d, nil
}

// until reads up to the unescaped delimiter d and past it; in a regular
// expression a bracket expression may hold d ([/]).
func (sp *sedParser) until(d byte, regex bool) error {
	for !sp.eof() {
		c := sp.src[sp.i]
		switch {
		case c == '\\':
			sp.i += 2
			continue
		case c == d:
			sp.i++
			return nil
		case regex && c == '[':
			sp.bracket()
			continue
		case c == '\n' && !regex:
		}
		sp.i++
	}
	return errSedEOF
}

// bracket skips a bracket expression: []…] and [^]…] hold a literal ],
// [:class:] its own brackets.
func (sp *sedParser) bracket() {
	j := sp.i + 1
	if j < len(sp.src) && sp.src[j] == '^' {
		j++
	}
	if j < len(sp.src) && sp.src[j] == ']' {
		j++
	}
	for j < len(sp.src) {
		switch {
		case sp.src[j] == '[' && j+1 < len(sp.src) && strings.IndexByte(":.=", sp.src[j+1]) >= 0:
			end := strings.Index(sp.src[j+2:], string(sp.src[j+1])+"]")
			if end < 0 {
				sp.i = len(sp.src)
				return
			}
			j += end + 4
			continue
		case sp.src[j] == ']':
			sp.i = j + 1
			return
		case sp.src[j] == '\n':
			sp.i = j // an unterminated bracket: let until fail on the delimiter
			return
		}
		j++
	}
	sp.i = len(sp.src)
}

// subst reads s/RE/REPLACEMENT/FLAGS.
func (sp *sedParser) subst() error {
	d, err := sp.delim()
	if err != nil {
		return err
	}
	if err := sp.until(d, true); err != nil {
		return err
	}
	if err := sp.until(d, false); err != nil {
		return err
	}
	for !sp.eof() {
		switch c := sp.peek(); {
		case strings.IndexByte("gpiImM0123456789", c) >= 0:
			sp.i++
		case c == 'e':
			sp.i++
			sp.effs = append(sp.effs, scriptEffect{kind: effRun, option: "s///e"})
		case c == 'w':
			sp.i++
			sp.skipSpace()
			f := sp.toEOL(false)
			sp.effs = append(sp.effs, scriptEffect{kind: effWrite, option: "s///w", file: Word{Text: f, Static: true}})
			return nil
		default:
			return nil
		}
	}
	return nil
}

// text skips the text of a, i and c: to the end of the line, lines ending
// in a backslash continuing it (GNU's one-line form and POSIX's a\).
func (sp *sedParser) text() {
	sp.skipSpace()
	if sp.peek() == '\\' {
		sp.i++
		if sp.peek() == '\n' {
			sp.i++
		}
	}
	for !sp.eof() {
		c := sp.src[sp.i]
		if c == '\\' {
			sp.i += 2
			continue
		}
		if c == '\n' {
			return
		}
		sp.i++
	}
}

// awkScript finds awk's system() and pipes (run), getline < FILE (read),
// print and printf > or >> FILE (write), @load (run) and @include (code
// custos cannot read).
func awkScript(w Walker, p *Program, s Word, sandboxed bool) {
	toks, err := awkTokens(s.Text)
	var effs []scriptEffect
	if err == nil {
		effs, err = awkEffects(toks)
	}
	scriptFindings(w, p, effs, err, sandboxed)
}

type awkTok struct {
	kind byte // 'i' identifier, 's' string, 'r' regex, 'n' number, 'o' operator, '\n'
	s    string
}

var awkKeywords = map[string]bool{"print": true, "printf": true, "getline": true, "return": true, "in": true,
	"if": true, "while": true, "for": true, "do": true, "else": true, "delete": true, "exit": true, "next": true,
	"nextfile": true, "function": true, "func": true, "BEGIN": true, "END": true, "BEGINFILE": true, "ENDFILE": true}

// awkTokens splits an awk program into tokens. A / starts a regular
// expression unless it follows an operand (a name, a number, a string, a
// closing bracket, $ or ++/--).
func awkTokens(src string) ([]awkTok, error) {
	var toks []awkTok
	operand := func() bool {
		if len(toks) == 0 {
			return false
		}
		t := toks[len(toks)-1]
		switch t.kind {
		case 'i':
			return !awkKeywords[t.s]
		case 's', 'n', 'r':
			return true
		case 'o':
			return t.s == ")" || t.s == "]" || t.s == "$" || t.s == "++" || t.s == "--"
		}
		return false
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			i += 2
		case c == '\n':
			toks = append(toks, awkTok{kind: '\n'})
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '"' || c == '/' && !operand():
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				} else if src[j] == '\n' {
					return nil, errors.New("newline in a string or regular expression")
				}
				j++
			}
			if j >= len(src) {
				return nil, errors.New("unterminated string or regular expression")
			}
			kind := byte('s')
			if c == '/' {
				kind = 'r'
			}
			toks = append(toks, awkTok{kind: kind, s: src[i+1 : j]})
			i = j + 1
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '@':
			j := i + 1
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9' || src[j] == ':') {
				j++
			}
			toks = append(toks, awkTok{kind: 'i', s: src[i:j]})
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i + 1
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.' || src[j] == 'e' || src[j] == 'x' || src[j] >= 'a' && src[j] <= 'f' || src[j] >= 'A' && src[j] <= 'F') {
				j++
			}
			toks = append(toks, awkTok{kind: 'n', s: src[i:j]})
			i = j
		default:
			op := src[i : i+1]
			if i+1 < len(src) {
				for _, two := range []string{"||", "&&", "|&", ">>", "==", "!=", "<=", ">=", "++", "--", "+=", "-=", "*=", "/=", "%=", "^=", "**", "!~"} {
					if src[i:i+2] == two {
						op = two
						break
					}
				}
			}
			toks = append(toks, awkTok{kind: 'o', s: op})
			i += len(op)
		}
	}
	return toks, nil
}

// awkEffects reads what the tokens do.
func awkEffects(toks []awkTok) ([]scriptEffect, error) {
	var effs []scriptEffect
	depth := 0
	for i, t := range toks {
		switch {
		case t.kind == 'r' && (strings.Contains(t.s, "system") || strings.Contains(t.s, "getline") || strings.Contains(t.s, ";")):
			return nil, errors.New("a regular expression that may be code")
		case t.kind == 'o' && (t.s == "(" || t.s == "{" || t.s == "["):
			depth++
		case t.kind == 'o' && (t.s == ")" || t.s == "}" || t.s == "]"):
			if depth--; depth < 0 {
				return nil, errors.New("unbalanced " + t.s)
			}
		case t.kind == 'o' && (t.s == "|" || t.s == "|&"):
			effs = append(effs, scriptEffect{kind: effRun, option: t.s})
		case t.kind == 'i' && (t.s == "system" || t.s == "@load"):
			effs = append(effs, scriptEffect{kind: effRun, option: t.s + "()"})
		case t.kind == 'i' && t.s == "@include":
			return nil, errors.New("@include loads code custos cannot read")
		case t.kind == 'i' && t.s == "getline":
			if f, ok := awkTarget(toks, i+1, "<", true); ok {
				effs = append(effs, scriptEffect{kind: effRead, option: "getline <", file: f})
			}
		case t.kind == 'i' && (t.s == "print" || t.s == "printf"):
			if f, ok := awkTarget(toks, i+1, ">", false); ok {
				effs = append(effs, scriptEffect{kind: effWrite, option: t.s + " >", file: f})
			}
		}
	}
	if depth != 0 {
		return nil, errors.New("unbalanced brackets")
	}
	return effs, nil
}

// awkTarget finds the file of a getline < FILE or print > FILE starting at
// toks[i]: the redirection at bracket depth 0 before the statement ends.
func awkTarget(toks []awkTok, i int, op string, getline bool) (Word, bool) {
	depth := 0
	for ; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == '\n' || t.kind == 'o' && (t.s == ";" || t.s == "|" || t.s == "|&"):
			return Word{}, false
		case t.kind == 'o' && (t.s == "(" || t.s == "["):
			depth++
		case t.kind == 'o' && (t.s == ")" || t.s == "]" || t.s == "}"):
			if depth--; depth < 0 {
				return Word{}, false
			}
		case depth == 0 && t.kind == 'o' && (t.s == op || !getline && t.s == ">>"):
			if i+1 < len(toks) && toks[i+1].kind == 's' && (i+2 >= len(toks) || toks[i+2].kind != 'i' && toks[i+2].kind != 's' && toks[i+2].kind != 'n' && toks[i+2].s != "$") {
				return Word{Text: unescapeAwk(toks[i+1].s), Static: true}, true
			}
			return Word{Text: "an expression"}, true // a file named at run time
		case getline && t.kind == 'i' && i > 0 && toks[i-1].kind == 'i' && toks[i-1].s != "getline":
			return Word{}, false // getline var other: not a redirection
		}
	}
	return Word{}, false
}

func unescapeAwk(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
