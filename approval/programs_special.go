package approval

import "strings"

// Entries whose words do not fit options and operands: find's expression,
// jq's two-value options, and the builtins that name no files.

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
func findOperands(w *walker, p *program, rest []argWord) {
	i := 0
	for ; i < len(rest); i++ {
		a := rest[i]
		if a.static && (a.s == "-H" || a.s == "-L" || a.s == "-P" || strings.HasPrefix(a.s, "-O")) {
			continue
		}
		if a.static && (strings.HasPrefix(a.s, "-") || a.s == "!" || a.s == "(") {
			break
		}
		if !a.static {
			w.finding(ProgramFinding{Program: p.name, Option: a.s, Words: []string{a.s}, What: whatDynamic})
		}
		w.access(AccessRead, a, "find start")
	}
	for ; i < len(rest); i++ {
		a := rest[i]
		if !a.static {
			w.finding(ProgramFinding{Program: p.name, Option: a.s, Words: []string{a.s}, What: whatDynamic})
			continue
		}
		prim, ok := findPrimaries[a.s]
		if !ok && strings.HasPrefix(a.s, "-newer") && len(a.s) == 8 {
			prim, ok = findPrimary{args: 1}, true // -newerXY REF
		}
		if !ok {
			w.finding(ProgramFinding{Program: p.name, Option: a.s, Words: []string{a.s}, What: "is a primary custos does not know"})
			continue
		}
		switch {
		case prim.args < 0:
			j := i + 1
			for j < len(rest) && rest[j].s != ";" && rest[j].s != "+" {
				j++
			}
			words := []string{a.s}
			for _, x := range rest[i+1 : min(j, len(rest))] {
				words = append(words, x.s)
			}
			w.finding(ProgramFinding{Program: p.name, Option: a.s, Words: words, What: whatRuns})
			i = j
		case prim.effect&effWrite != 0 && i+1 < len(rest):
			w.optAccess(AccessWrite, rest[i+1], p, a.s, false)
			i += prim.args
		case prim.effect&effRead != 0 && i+1 < len(rest):
			w.optAccess(AccessRead, rest[i+1], p, a.s, false)
			i += prim.args
		default:
			i += prim.args
		}
	}
}

// jqOperands: the filter, then files; --arg/--argjson take two values,
// --slurpfile/--rawfile a name and a file.
func jqOperands(w *walker, p *program, rest []argWord) {
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
				w.optAccess(AccessRead, rest[i+2], p, a.s, false)
			}
			i += 2
		case a.static && (a.s == "-f" || a.s == "--from-file"):
			if i+1 < len(rest) {
				i++
				w.optAccess(AccessRead, rest[i], p, a.s, false)
				filterSeen = true
			}
		case a.static && (a.s == "--indent" || a.s == "-L"):
			i++
		case a.static && strings.HasPrefix(a.s, "--") && len(a.s) > 2:
			if o, _ := p.longOpt(a.s[2:]); o == nil {
				w.finding(ProgramFinding{Program: p.name, Option: a.s, Words: []string{a.s}, What: whatUnknown})
			}
		case a.static && strings.HasPrefix(a.s, "-") && a.s != "-":
			for j := 1; j < len(a.s); j++ {
				if p.short[a.s[j]] == nil {
					w.finding(ProgramFinding{Program: p.name, Option: "-" + a.s[j:j+1], Words: []string{a.s}, What: whatUnknown})
					break
				}
			}
		case !filterSeen:
			filterSeen = true
		default:
			w.access(AccessRead, a, "jq operand")
		}
	}
}

// gitBranchWords: git branch's options as the entry says (those that
// delete, move, copy or set up a branch change the repository); its
// operands are patterns in list mode (--list, or a filter such as
// --contains) and otherwise the branch to create (git branch NAME [START]),
// which changes the repository too.
func gitBranchWords(w *walker, p *program, rest []argWord) {
	o := p.scanOptions(w, rest)
	if len(o.ops) == 0 || o.listing {
		return
	}
	words := make([]string, len(o.ops))
	for i, a := range o.ops {
		words[i] = a.s
	}
	w.finding(ProgramFinding{Program: p.name, Option: o.ops[0].s, Words: words, What: whatChanges + " (creates a branch)"})
}

// noOperands: echo, printf and test name no files, and none of their
// options runs or writes anything (printf -v assigns a variable).
func noOperands(*walker, *program, []argWord) {}
