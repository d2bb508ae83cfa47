package approval

import (
	"fmt"
	"path"
	"strings"

	"github.com/custos-dev/custos/approval/programs"
	"github.com/custos-dev/custos/approval/shell"
	"github.com/custos-dev/custos/netpolicy"
	"github.com/custos-dev/custos/pathglob"
)

// This file judges the files a Bash command line reads and writes (its
// redirections and the file operands of the commands custos knows, see
// fileuse.go) with the Read and Edit/Write rules, so that a user's rule
// holds whichever tool the model picks: Read(.env) denies cat .env, and
// Edit(.env) denies echo x > .env.
//
//   - A read is judged by Read deny and ask rules.
//   - A write is judged by Edit and Write deny and ask rules; a write outside
//     the workspace always needs a person; a write inside it needs an Edit or
//     Write allow rule or acceptEdits mode (as a Write call would), so a
//     Bash allow rule alone does not let a command write files, unless it
//     names the write itself: an exact rule its command's operands, a
//     whole-text rule everything (what an Always answer learns).
//   - A mention (an argument of a command whose use of it custos does not
//     know) that a Read or Edit deny or ask rule matches needs a person:
//     custos cannot tell whether git add .env reads .env, and a deny would
//     also refuse harmless commands (git rm --cached .env); the sandbox's
//     masks (the deny rules enforced inside the sandbox) are the wall
//     behind the question.
//   - A path custos cannot resolve (a variable, a cd to an unknown place)
//     needs a person when it is written, and when a known command reads it
//     while Read deny or ask rules exist (cat "$F"). An unknown command's
//     run-time words are not judged (make $TARGET), like paths inside a
//     script's strings: the sandbox's masks are the wall for both.
//   - A /dev/tcp or /dev/udp redirection is a connection: denied unless its
//     host is on sandbox.network.allowedDomains.

// fileJudgement is what the file accesses of a command line say.
type fileJudgement struct {
	deny *Verdict
	ask  *Verdict
	// edits are the writes inside the workspace no Edit/Write allow rule
	// covers: acceptEdits mode allows them, otherwise a person decides.
	edits []pendingEdit
}

// pendingEdit is one write that needs edit permission.
type pendingEdit struct {
	cmd  int // index of the command whose operand it is; -1 for a redirection
	what string
	// program and option: the table entry and option that write it.
	program, option string
}

func (j *fileJudgement) denied(v Verdict) {
	if j.deny == nil {
		v.Decision, v.Layer = Deny, LayerRules
		j.deny = &v
	}
}

func (j *fileJudgement) asked(v Verdict) {
	if j.ask == nil {
		v.Decision, v.Layer = Ask, LayerRules
		j.ask = &v
	}
}

// judgeFiles judges every file access of a.
func (p *Policy) judgeFiles(a *shell.Analysis) fileJudgement {
	var j fileJudgement
	for i := range a.Files {
		f := &a.Files[i]
		if f.Kind == programs.AccessConnect {
			if reason, ok := p.net.allows(f.Word); !ok {
				j.denied(Verdict{Rule: "sandbox.network.allowedDomains", Reason: reason})
			}
			continue
		}
		side := shellGlob
		if a.DotGlob {
			side = shellDotGlob
		}
		if f.Kind.Reads() {
			p.judgeAgainst(&j, f, "Read", "reads", false, side)
		}
		if f.Kind.Writes() {
			p.judgeAgainst(&j, f, "Write", "writes", false, side)
			p.judgeWrite(&j, f)
		}
		if f.Kind == programs.AccessMention {
			p.judgeAgainst(&j, f, "Read", "names", true, side)
			p.judgeAgainst(&j, f, "Write", "names", true, side)
		}
		if j.deny != nil {
			return j // nothing can weigh more
		}
	}
	return j
}

// judgeAgainst applies the deny and ask rules of tool ("Read", or "Write"
// for Edit and Write rules) to f. A mention turns a deny into a question.
func (p *Policy) judgeAgainst(j *fileJudgement, f *shell.FileAccess, tool, verb string, mention bool, side globSide) {
	for _, list := range []struct {
		set  *ruleSet
		deny bool
	}{{&p.deny, true}, {&p.ask, false}} {
		idx := list.set.byTool[tool]
		if len(idx) == 0 {
			continue
		}
		if f.Paths == nil {
			if mention {
				// A word an unknown command builds at run time is as
				// opaque as a path inside a script's string: the
				// sandbox's masks are the wall there, not a question on
				// every "make $TARGET".
				return
			}
			r := list.set.rules[idx[0]]
			j.asked(Verdict{Rule: r.text, Reason: fmt.Sprintf("%s %s (%s), which cannot be resolved statically, and %s %s some paths: needs confirmation",
				verb, f.Word, f.Via, r.text, ruleVerb(list.deny))})
			continue
		}
		for _, abs := range f.Paths {
			_, rel := resolvePath(abs, p.env)
			disp := displayPath(abs, rel)
			// A directory whose whole content a rule covers counts as the
			// content (grep -r KEY secrets, cp -r secrets pub, rm -r
			// secrets). A directory that merely may hold a covered file
			// (grep -r KEY . under Read(.env)) is left to the sandbox's
			// masks, or every recursive command would need a person.
			descAbs, descRel := abs+"/**", ""
			if abs == "/" {
				descAbs = "/**"
			}
			if rel != "" && rel != "." {
				descRel = rel + "/**"
			}
			for _, i := range idx {
				r := list.set.rules[i]
				certain := r.matchPath(abs, rel) || (r.kind == kindPath && r.matchPath(descAbs, descRel))
				if !certain && !(f.Glob && r.mayMatchGlob(abs, rel, side)) {
					continue
				}
				switch {
				case list.deny && certain && !mention:
					j.denied(Verdict{Rule: r.text, Reason: fmt.Sprintf("%s %s (%s), denied by %s", verb, disp, f.Via, r.text)})
				case list.deny && mention:
					j.asked(Verdict{Rule: r.text, Reason: fmt.Sprintf("%s %s (%s), which %s denies; custos cannot tell whether the command reads or changes it: needs confirmation",
						verb, disp, f.Via, r.text)})
				case list.deny:
					j.asked(Verdict{Rule: r.text, Reason: fmt.Sprintf("%s %s (%s), a pattern that may expand to a path %s denies: needs confirmation",
						verb, disp, f.Via, r.text)})
				default:
					j.asked(Verdict{Rule: r.text, Reason: fmt.Sprintf("%s %s (%s); ask rule %s requires confirmation", verb, disp, f.Via, r.text)})
				}
				return
			}
		}
	}
}

func ruleVerb(deny bool) string {
	if deny {
		return "denies"
	}
	return "asks about"
}

// judgeWrite applies the workspace boundary and the Edit/Write allow rules
// to a write.
func (p *Policy) judgeWrite(j *fileJudgement, f *shell.FileAccess) {
	if f.Paths == nil {
		j.asked(Verdict{Reason: fmt.Sprintf("writes %s (%s), which cannot be resolved statically: needs confirmation", f.Word, f.Via)})
		return
	}
	for _, abs := range f.Paths {
		if _, rel := resolvePath(abs, p.env); rel == "" {
			j.asked(Verdict{Reason: fmt.Sprintf("writes %s (%s) outside the workspace: needs confirmation", abs, f.Via)})
			return
		}
	}
	for _, abs := range f.Paths {
		_, rel := resolvePath(abs, p.env)
		allowed := false
		for _, i := range p.allow.byTool["Write"] {
			r := p.allow.rules[i]
			if r.kind == kindAny || r.matchPath(abs, rel) || (f.Dir && r.kind == kindPath && rel != "." && r.matchPath(abs+"/**", rel+"/**")) {
				allowed = true
				break
			}
		}
		if !allowed {
			j.edits = append(j.edits, pendingEdit{cmd: f.Command, what: fmt.Sprintf("writes %s (%s)", displayPath(abs, rel), f.Via),
				program: f.Program, option: f.Option})
			return
		}
	}
}

func displayPath(abs, rel string) string {
	if rel != "" {
		return rel
	}
	return abs
}

// netPolicy is the allowed and denied domain lists of the sandbox settings,
// normalised once, for /dev/tcp and /dev/udp redirections (matched as the
// proxy matches, netpolicy.Match: denied beats allowed).
type netPolicy struct {
	allowed, denied []string
}

func newNetPolicy(n netpolicy.Policy) netPolicy {
	norm := func(list []string) []string {
		var out []string
		for _, d := range list {
			if d = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(d), ".")); d != "" {
				out = append(out, strings.Trim(d, "[]"))
			}
		}
		return out
	}
	return netPolicy{allowed: norm(n.AllowedDomains), denied: norm(n.DeniedDomains)}
}

// allows judges a /dev/tcp/HOST/PORT or /dev/udp/HOST/PORT redirection.
func (n netPolicy) allows(target string) (string, bool) {
	rest := strings.TrimPrefix(strings.TrimPrefix(target, "/dev/tcp/"), "/dev/udp/")
	proto := "tcp"
	if strings.HasPrefix(target, "/dev/udp/") {
		proto = "udp"
	}
	host, port, _ := strings.Cut(rest, "/")
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	fail := func(why string) (string, bool) {
		return fmt.Sprintf("connects to %s port %s through /dev/%s (redirection): %s; the sandbox has no route there either", host, port, proto, why), false
	}
	if host == "" || strings.ContainsAny(host, "$`*?[{") {
		return fail("the host cannot be told statically, so it is not on sandbox.network.allowedDomains")
	}
	for _, d := range n.denied {
		if netpolicy.Match(d, host) {
			return fail(fmt.Sprintf("%s is on sandbox.network.deniedDomains (%s)", host, d))
		}
	}
	for _, d := range n.allowed {
		if netpolicy.Match(d, host) {
			return "", true
		}
	}
	return fail(host + " is not on sandbox.network.allowedDomains")
}

// mayMatchGlob reports whether a shell glob (abs, or rel inside the
// workspace) may expand to a path the rule matches: the two patterns
// intersect. Only path rules are checked; others need an exact match.
func (r *rule) mayMatchGlob(abs, rel string, side globSide) bool {
	if r.kind != kindPath {
		return false
	}
	target := abs
	if !r.absolute {
		if rel == "" {
			return false
		}
		target = rel
	}
	// The rule means its globstar variants too (pathglob), as in matchPath.
	for _, v := range pathglob.Variants(r.value) {
		for _, alt := range expandRuleBraces(v) {
			if globsIntersect(tokenizeGlob(alt, ruleGlob), tokenizeGlob(target, side)) {
				return true
			}
			if r.baseName && !r.absolute && globsIntersect(tokenizeGlob(alt, ruleGlob), tokenizeGlob(path.Base(target), side)) {
				return true
			}
		}
	}
	return false
}

// allowedWrites is the verdict on a command line the Bash rules allow:
// allowed, unless it writes inside the workspace where no Edit/Write allow
// rule reaches; then acceptEdits mode allows it and otherwise a person
// decides. consented reports the writes the allow rule itself names: the
// operands of a command an exact rule allows (Bash(touch a.txt)), or all of
// them for a rule naming the whole command text (Bash(make > build.log)),
// which is what an Always answer to a person's question learns. note is
// added to the reason of an allow (unjudgedNote).
func allowedWrites(rules, note string, files fileJudgement, m Mode, consented func(cmd int) bool) Verdict {
	edit, prog, opt := "", "", ""
	for _, e := range files.edits {
		if !consented(e.cmd) {
			edit, prog, opt = e.what, e.program, e.option
			break
		}
	}
	if edit == "" {
		return Verdict{Decision: Allow, Layer: LayerRules, Rule: rules, Reason: "allowed by rule " + rules + note}
	}
	if m == ModeAcceptEdits {
		return Verdict{Decision: Allow, Layer: LayerMode, Rule: rules,
			Reason: "acceptEdits mode: " + rules + " allows the command and it " + edit + " inside the workspace" + note}
	}
	return Verdict{Decision: Continue, Program: prog, Option: opt,
		Reason: rules + " allows the command, but it " + edit + ": an edit needs acceptEdits mode, an Edit allow rule or confirmation"}
}
