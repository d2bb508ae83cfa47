package programs

import "strings"

// Entries whose words do not fit options and operands: find's expression,
// jq's filter and --args, and the builtins that name no files.

// findPrimary is one primary of find's expression: how many words follow
// it and what it does with them.
type findPrimary struct {
	args   int
	effect effect // effRun, effRead (the word after), effWrite (the word after)
}

// findPrimaries are the primaries, options and operators of GNU find.
var findPrimaries = func() map[string]findPrimary {
	m := map[string]findPrimary{
		"-exec": {-1, effRun}, "-execdir": {-1, effRun}, "-ok": {-1, effRun}, "-okdir": {-1, effRun},
		"-fprint": {1, effWrite}, "-fprint0": {1, effWrite}, "-fls": {1, effWrite}, "-fprintf": {2, effWrite},
		"-newer": {1, effRead}, "-anewer": {1, effRead}, "-cnewer": {1, effRead}, "-samefile": {1, effRead},
		"-files0-from": {1, effRead},
	}
	for _, p := range strings.Fields(`-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname
		-type -xtype -size -perm -user -group -uid -gid -mtime -atime -ctime -mmin -amin -cmin -links -inum -maxdepth
		-mindepth -printf -fstype -context -used -regextype -D`) {
		m[p] = findPrimary{args: 1}
	}
	for _, p := range strings.Fields(`-print -print0 -ls -prune -quit -true -false -empty -executable -readable -writable
		-nouser -nogroup -depth -d -follow -mount -xdev -noleaf -ignore_readdir_race -noignore_readdir_race -daystart
		-warn -nowarn -delete -not -a -o -and -or ! ( ) , -help --help -version --version -H -L -P`) {
		m[p] = findPrimary{}
	}
	return m
}()

// findOperands: the starting points are read (listed); -fprint* and -fls
// write their file; -newer and friends read theirs; -exec and -ok run a
// command (analysed on its own as well); patterns (-name …) are not files;
// a primary the table does not know is a finding.
func findOperands(w Walker, p *Program, rest []Word) {
	i := 0
	for ; i < len(rest); i++ {
		a := rest[i]
		if a.Static && (a.Text == "-H" || a.Text == "-L" || a.Text == "-P" || strings.HasPrefix(a.Text, "-O")) {
			continue
		}
		if a.Static && (strings.HasPrefix(a.Text, "-") || a.Text == "!" || a.Text == "(") {
			break
		}
		if !a.Static {
			w.Find(Finding{Program: p.name, Option: a.Text, Words: []string{a.Text}, What: whatDynamic})
		}
		w.Access(AccessRead, a, "find start")
	}
	for ; i < len(rest); i++ {
		a := rest[i]
		if !a.Static {
			w.Find(Finding{Program: p.name, Option: a.Text, Words: []string{a.Text}, What: whatDynamic})
			continue
		}
		prim, ok := findPrimaries[a.Text]
		if !ok && strings.HasPrefix(a.Text, "-newer") && len(a.Text) == 8 {
			prim, ok = findPrimary{args: 1}, true // -newerXY REF
		}
		if !ok {
			w.Find(Finding{Program: p.name, Option: a.Text, Words: []string{a.Text}, What: "is a primary custos does not know"})
			continue
		}
		switch {
		case prim.args < 0:
			j := i + 1
			for j < len(rest) && rest[j].Text != ";" && rest[j].Text != "+" {
				j++
			}
			words := []string{a.Text}
			for _, x := range rest[i+1 : min(j, len(rest))] {
				words = append(words, x.Text)
			}
			w.Find(Finding{Program: p.name, Option: a.Text, Words: words, What: whatRuns})
			i = j
		case prim.effect&effWrite != 0 && i+1 < len(rest):
			w.OptionAccess(AccessWrite, rest[i+1], p.name, a.Text, false)
			i += prim.args
		case prim.effect&effRead != 0 && i+1 < len(rest):
			w.OptionAccess(AccessRead, rest[i+1], p.name, a.Text, false)
			i += prim.args
		default:
			i += prim.args
		}
	}
}

// jqOperands: jq reads its options wherever they are, a cluster's letters
// each a flag (-nrf is -n -r -f); -f takes no value but makes the first
// operand the filter's file, which custos cannot read (as sed -f); -L adds
// a directory modules load from. The filter is the first operand unless
// -f; the other operands are files read, up to --args or --jsonargs, after
// which they are values. A filter that imports or includes a module loads
// a file custos does not read.
func jqOperands(w Walker, p *Program, rest []Word) {
	files := rest
	var values []Word
	for i, a := range rest {
		if a.Static && (a.Text == "--args" || a.Text == "--jsonargs") {
			files, values = rest[:i], rest[i+1:]
			break
		}
	}
	o := p.scanOptions(w, files)
	ops := o.ops
	if !o.hasLeadOpt && len(ops) > 0 {
		if f := ops[0]; f.Static && jqLoads(f.Text) {
			w.Find(Finding{Program: p.name, Option: "import", Words: []string{f.Text}, What: "loads a module or data file, which custos does not read"})
		}
		ops = ops[1:]
	}
	for _, a := range ops {
		w.Access(AccessRead, a, "jq operand")
	}
	if len(values) > 0 {
		vo := p.scanOptions(w, values) // options still count after --args
		if o.hasLeadOpt || len(o.ops) > 0 || len(vo.ops) == 0 {
			return
		}
		switch f := vo.ops[0]; {
		case vo.hasLeadOpt:
			w.Access(AccessRead, f, "jq -f script") // the filter's file is still the first operand
		case f.Static && jqLoads(f.Text):
			w.Find(Finding{Program: p.name, Option: "import", Words: []string{f.Text}, What: "loads a module or data file, which custos does not read"})
		}
	}
}

// jqLoads reports a jq filter that imports or includes a module.
func jqLoads(filter string) bool {
	for _, kw := range []string{"import", "include"} {
		for off := 0; ; {
			i := strings.Index(filter[off:], kw)
			if i < 0 {
				break
			}
			i += off
			end := i + len(kw)
			if (i == 0 || !jqNameByte(filter[i-1])) && (end == len(filter) || !jqNameByte(filter[end])) {
				return true
			}
			off = i + 1
		}
	}
	return false
}

// gitBranchWords: git branch's options as the entry says (those that
// delete, move, copy or set up a branch change the repository); its
// operands are patterns in list mode (--list, or a filter such as
// --contains) and otherwise the branch to create (git branch NAME [START]),
// which changes the repository too.
func gitBranchWords(w Walker, p *Program, rest []Word) {
	o := p.scanOptions(w, rest)
	if len(o.ops) == 0 || o.listing {
		return
	}
	words := make([]string, len(o.ops))
	for i, a := range o.ops {
		words[i] = a.Text
	}
	w.Find(Finding{Program: p.name, Option: o.ops[0].Text, Words: words, What: whatChanges + " (creates a branch)"})
}

// noOperands: echo, printf and test name no files, and none of their
// options runs or writes anything (printf -v assigns a variable).
func noOperands(Walker, *Program, []Word) {}

// jqNameByte reports a byte that may be part of a jq name, so that the
// keyword import is not found inside reimport or import_x.
func jqNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
