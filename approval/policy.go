package approval

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/custos-dev/custos/approval/programs"
	"github.com/custos-dev/custos/approval/shell"
	"github.com/custos-dev/custos/pathglob"
)

// Env is what the policy needs to know about where a job runs. Both paths
// should be absolute and clean; they come from the worker, not the model.
type Env struct {
	Workspace string `json:"workspace"`
	Home      string `json:"home,omitempty"`
	// Sandbox is the Bash worker's OS sandbox (see sandbox.go).
	Sandbox SandboxStatus `json:"sandbox,omitzero"`
	// Private are custos' own directories on the host that lie inside the
	// workspace (its state: server certificates, transcripts, audits,
	// quarantine; the user's custos settings), as when the workspace is a
	// home directory. No tool reads or changes them and the sandbox hides
	// them: the client certificate there would let a command answer its
	// own approvals.
	Private []string `json:"private,omitempty"`
}

// shell is where a command line runs, as the shell analysis needs it.
func (e Env) shell() shell.Env { return shell.Env{Workspace: e.Workspace, Home: e.Home} }

// List names of permission rules.
const (
	ListAllow = "allow"
	ListAsk   = "ask"
	ListDeny  = "deny"
)

// Policy is a compiled set of system presets and user rules. It is immutable
// and safe for concurrent use; WithRule returns a new Policy.
type Policy struct {
	env   Env
	deny  ruleSet
	ask   ruleSet
	allow ruleSet
	// net judges /dev/tcp and /dev/udp redirections (bashfiles.go).
	net netPolicy
	// quorum are the approvals entries (quorum.go).
	quorum []quorumRule
}

// ruleSet is one list of rules, indexed so that a Bash command only meets the
// rules that can match its name. idx preserves list order for reporting.
type ruleSet struct {
	rules []*rule
	// byTool holds every non-Bash rule by the tool it applies to.
	byTool map[string][]int
	// bashByName holds Bash rules whose first word is fixed, by that word;
	// bashAny the rest (Bash, Bash(*), regexps, globs in the first word).
	bashByName map[string][]int
	bashAny    []int
	// bashByPrefix holds regular expressions anchored on a literal
	// prefix (re:^net5\b), by that prefix, so a command meets only those
	// its line starts with, not every one; prefixLen is the longest.
	bashByPrefix map[string][]int
	prefixLen    int
	// bashText are the whole-command-text rules.
	bashText []int
}

func (s *ruleSet) add(r *rule) {
	i := len(s.rules)
	s.rules = append(s.rules, r)
	if s.byTool == nil {
		s.byTool = map[string][]int{}
		s.bashByName = map[string][]int{}
	}
	if r.tool != "Bash" {
		for _, t := range []string{r.tool, "Glob", "Grep", "LSP", "Write"} {
			if r.appliesTo(t) {
				s.byTool[t] = append(s.byTool[t], i)
			}
		}
		return
	}
	switch r.kind {
	case kindText:
		s.bashText = append(s.bashText, i)
		return
	case kindExact, kindPrefix, kindGlob:
		first, _, _ := strings.Cut(r.value, " ")
		if first != "" && !hasGlobMeta(first) && !strings.HasPrefix(first, "'") {
			s.bashByName[first] = append(s.bashByName[first], i)
			return
		}
	case kindRegexp:
		if r.rePrefix != "" && len(r.rePrefix) <= maxIndexedPrefix {
			if s.bashByPrefix == nil {
				s.bashByPrefix = map[string][]int{}
			}
			s.bashByPrefix[r.rePrefix] = append(s.bashByPrefix[r.rePrefix], i)
			s.prefixLen = max(s.prefixLen, len(r.rePrefix))
			return
		}
	}
	s.bashAny = append(s.bashAny, i)
}

// maxIndexedPrefix bounds the literal prefixes bashByPrefix holds (a line
// is looked up by each of its prefixes up to the longest).
const maxIndexedPrefix = 64

// Compile builds a policy from settings. Every rule is parsed and compiled
// once; a malformed rule is an error naming its list and position.
func Compile(s Settings, env Env) (*Policy, error) {
	if err := tablesChecked(); err != nil {
		return nil, err
	}
	return compile(s, env)
}

// compile is Compile without the tables' check, for the check itself.
func compile(s Settings, env Env) (*Policy, error) {
	if s.Permissions.DefaultMode != "" {
		m, err := ParseMode(string(s.Permissions.DefaultMode))
		if err != nil {
			return nil, fmt.Errorf("approval: permissions.defaultMode: %w", err)
		}
		if err := CheckMode(s, m); err != nil {
			return nil, fmt.Errorf("approval: permissions.defaultMode: %w", err)
		}
	}
	p := &Policy{env: env, net: newNetPolicy(s.Sandbox.Network)}
	lists := []struct {
		name  string
		rules []string
		set   *ruleSet
	}{
		{ListDeny, s.Permissions.Deny, &p.deny},
		{ListAsk, s.Permissions.Ask, &p.ask},
		{ListAllow, s.Permissions.Allow, &p.allow},
	}
	for _, dir := range env.Private {
		// Before the user's rules, so the audit names these; nothing
		// later can allow what a deny rule denies.
		for _, text := range []string{"Read(" + dir + ")", "Read(" + dir + "/**)", "Edit(" + dir + ")", "Edit(" + dir + "/**)"} {
			r, err := parseRule(text, env)
			if err != nil {
				return nil, fmt.Errorf("approval: custos' own directory %s: %w", dir, err)
			}
			p.deny.add(r)
		}
	}
	for _, l := range lists {
		for i, text := range l.rules {
			r, err := parseRule(text, env)
			if err != nil {
				return nil, fmt.Errorf("approval: permissions.%s[%d]: %w", l.name, i, err)
			}
			l.set.add(r)
		}
	}
	for i, q := range s.Approvals {
		e, err := compileQuorum(q, env)
		if err != nil {
			return nil, fmt.Errorf("approval: approvals[%d].rule: %w", i, err)
		}
		p.quorum = append(p.quorum, e)
	}
	return p, nil
}

// WithRule returns a copy of the policy with one more rule in list ("allow",
// "ask" or "deny"), as learned from an Always or Never answer.
func (p *Policy) WithRule(list, ruleText string) (*Policy, error) {
	if list != ListAllow && list != ListAsk && list != ListDeny {
		return nil, fmt.Errorf("approval: unknown rule list %q (want allow, ask or deny)", list)
	}
	r, err := parseRule(ruleText, p.env)
	if err != nil {
		return nil, fmt.Errorf("approval: learned %s rule: %w", list, err)
	}
	np := &Policy{env: p.env, net: p.net, quorum: p.quorum}
	for _, l := range []struct {
		name     string
		from, to *ruleSet
	}{{ListDeny, &p.deny, &np.deny}, {ListAsk, &p.ask, &np.ask}, {ListAllow, &p.allow, &np.allow}} {
		for _, old := range l.from.rules {
			l.to.add(old)
		}
		if l.name == list {
			l.to.add(r)
		}
	}
	return np, nil
}

// readOnlyTools never change anything. LSP only asks a language server
// about the code; what it answers passes the Read deny rules.
var readOnlyTools = map[string]bool{"Read": true, "Glob": true, "Grep": true, "LSP": true}

// IsReadOnly reports whether tool is one of the read-only tools.
func IsReadOnly(tool string) bool { return readOnlyTools[tool] }

// Rules is layer 1: system presets, then user deny, ask and allow rules.
func (p *Policy) Rules(c Call) Verdict { return p.rules(c, ModeDefault) }

// rules is layer 1 in mode m: acceptEdits lets a Bash command the rules
// allow write inside the workspace (bashfiles.go).
func (p *Policy) rules(c Call, m Mode) Verdict {
	in, err := parseInput(c, p.env)
	if err != nil {
		return Verdict{Decision: Deny, Layer: LayerRules, Reason: "malformed tool input (fail closed): " + err.Error()}
	}
	if c.Tool == "Bash" {
		return p.bash(in.command, m)
	}
	return p.other(c.Tool, in)
}

func (p *Policy) bash(command string, m Mode) Verdict {
	a := shell.Analyze(command, p.env.shell())
	for i := range presets {
		if presets[i].Match(a, p.env) {
			return Verdict{Decision: Deny, Layer: LayerRules, Rule: presets[i].Name, System: true,
				Reason: "system rule: " + presets[i].Description}
		}
	}
	text := "" // the command text whole-line rules match, made only when there are some
	if len(p.deny.bashText)+len(p.ask.bashText)+len(p.allow.bashText) > 0 {
		text = strings.Join(strings.Fields(command), " ")
	}
	if r := p.deny.matchBashAny(a, text); r != nil {
		return Verdict{Decision: Deny, Layer: LayerRules, Rule: r.text, Reason: "denied by rule " + r.text}
	}
	files := p.judgeFiles(a)
	if files.deny != nil {
		return *files.deny
	}
	if r := p.ask.matchBashAny(a, text); r != nil {
		return Verdict{Decision: Ask, Layer: LayerRules, Rule: r.text, Reason: "ask rule " + r.text + " requires confirmation"}
	}
	if files.ask != nil {
		return *files.ask
	}
	if len(a.Undecidable) > 0 {
		return Verdict{Decision: Ask, Layer: LayerRules,
			Reason: "command cannot be fully analysed (" + strings.Join(a.Undecidable, "; ") + "): needs confirmation"}
	}
	if len(a.Commands) == 0 {
		return Verdict{Decision: Continue}
	}
	for _, i := range p.allow.bashText {
		if p.allow.rules[i].value == text {
			return allowedWrites(p.allow.rules[i].text, "", files, m, func(int) bool { return true })
		}
	}
	var matched, unjudged []string
	exact := make([]bool, len(a.Commands))
	for ci := range a.Commands {
		r := p.allow.matchBashCommand(&a.Commands[ci], true)
		if r == nil && a.Commands[ci].Foreign {
			return p.foreignVerdict(&a.Commands[ci])
		}
		if r == nil {
			// Where rules cover the rest of the line (find -exec id ;),
			// say which part is left over: the prompt shows the whole line.
			// The commands before this one matched already.
			covered := ci > 0
			for cj := ci + 1; cj < len(a.Commands) && !covered; cj++ {
				covered = p.allow.matchBashCommand(&a.Commands[cj], true) != nil
			}
			if !covered {
				return Verdict{Decision: Continue}
			}
			return Verdict{Decision: Continue, Reason: fmt.Sprintf("no allow rule covers %s, one of the %d commands this runs",
				shell.Excerpt(a.Commands[ci].Text), len(a.Commands))}
		}
		if f := r.uncovered(&a.Commands[ci]); f != nil {
			return uncoveredVerdict(r, &a.Commands[ci], f)
		}
		exact[ci] = r.kind == kindExact
		if !contains(matched, r.text) {
			matched = append(matched, r.text)
		}
		if u := a.Commands[ci].Unjudged; u != "" && r.kind != kindExact && r.kind != kindAny && !contains(unjudged, u) {
			unjudged = append(unjudged, u)
		}
	}
	return allowedWrites(strings.Join(matched, ", "), unjudgedNote(unjudged), files, m, func(ci int) bool { return ci >= 0 && exact[ci] })
}

// unjudgedNote says, on an allow, that a rule matching a command the
// program table has no entry for covers everything that command can do
// (custos judged none of its options), so the person who wrote it knows.
func unjudgedNote(what []string) string {
	if len(what) == 0 {
		return ""
	}
	return fmt.Sprintf(" (custos' program table has no entry for %s: the rule covers everything it can do)", strings.Join(what, ", "))
}

// foreignVerdict says why no allow rule covers a command that runs a file
// by its path (./ls): a rule for the program of that name does not.
func (p *Policy) foreignVerdict(c *shell.SimpleCommand) Verdict {
	byName := *c
	byName.Foreign = false
	r := p.allow.matchBashCommand(&byName, true)
	if r == nil {
		return Verdict{Decision: Continue}
	}
	argv0 := c.Argv[len(c.Argv)-len(c.Args)-1] // the command's own first word, after its wrappers
	file := "its directory cannot be told"
	if len(c.ProgramPaths) == 1 {
		file = "which runs the file " + c.ProgramPaths[0]
	}
	return Verdict{Decision: Continue, Rule: r.text,
		Reason: fmt.Sprintf("%s allows the program %s, not %s, %s: that needs a rule naming that file, or confirmation",
			r.text, c.Name, shell.Excerpt(argv0), file)}
}

// uncoveredVerdict says what the allow rule r, which matched c, leaves
// uncovered: an entry's option, script command or variable, which a rule
// naming it covers, or a variable the line set, which only a rule naming
// the whole line does.
func uncoveredVerdict(r *rule, c *shell.SimpleCommand, f *programs.Finding) Verdict {
	v := Verdict{Decision: Continue, Rule: r.text, Program: f.Program, Option: f.Option}
	switch {
	case f.Env != programs.EnvNone && f.What != programs.WhatEnvRuns:
		v.Reason = fmt.Sprintf("%s does not cover %s: %s %s; that needs a rule naming the whole line, or confirmation",
			r.text, shell.Excerpt(c.Text), f.Option, f.What)
	case f.Env != programs.EnvNone:
		v.Reason = fmt.Sprintf("%s does not cover %s: %s %s (program table: %s); that needs a rule naming the whole line, or confirmation",
			r.text, f.Program, f.Option, f.What, f.Program)
	default:
		v.Reason = fmt.Sprintf("%s does not cover %s: %s %s (program table: %s); that needs a rule naming it, or confirmation",
			r.text, f.Program, f.Option, f.What, f.Program)
	}
	return v
}

// matchBashAny returns the first rule (in list order) matching the command
// text or any of its simple commands.
func (s *ruleSet) matchBashAny(a *shell.Analysis, text string) *rule {
	best := -1
	for _, i := range s.bashText {
		if s.rules[i].value == text {
			best = i
			break
		}
	}
	for ci := range a.Commands {
		if i := s.matchBashIndex(&a.Commands[ci], false); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	return s.rules[best]
}

func (s *ruleSet) matchBashCommand(c *shell.SimpleCommand, allow bool) *rule {
	if i := s.matchBashIndex(c, allow); i >= 0 {
		return s.rules[i]
	}
	return nil
}

// matchBashIndex returns the index of the first rule matching c, or -1.
// Deny and ask rules match the unwrapped command or the full command line
// with its wrappers; allow rules match the unwrapped command, and the full
// line only when they name it exactly.
func (s *ruleSet) matchBashIndex(c *shell.SimpleCommand, allow bool) int {
	best := -1
	try := func(idx []int) {
		for _, i := range idx {
			if best >= 0 && i >= best {
				return
			}
			r := s.rules[i]
			if allow && !r.namesProgram(c) {
				continue // ./ls is not the ls a rule by name allows
			}
			ok := r.matchCommandLine(c.Text)
			if !ok && c.Raw != c.Text {
				// A rule for xargs covers it running echo (xargsInert).
				ok = (!allow || r.kind == kindExact || c.XargsInert) && r.matchCommandLine(c.Raw)
			}
			if !ok && c.RawPlain != "" {
				// Without the options that change only how xargs splits
				// its input: Bash(xargs echo:*) covers xargs -0 echo.
				ok = (!allow || c.XargsInert) && r.matchCommandLine(c.RawPlain)
			}
			if !ok && c.Canonical != "" {
				// Global options seen through (git -C . push is git push);
				// an allow rule matched this way still has to name them
				// (uncovered).
				ok = r.matchCommandLine(c.Canonical)
			}
			if ok {
				best = i
				return
			}
		}
	}
	try(s.bashByName[c.Name])
	if len(c.Wrappers) > 0 && c.Wrappers[0] != c.Name {
		try(s.bashByName[c.Wrappers[0]])
	}
	if len(s.bashByPrefix) > 0 {
		// A regular expression with a literal prefix can only match a
		// line that starts with it: look each line's prefixes up.
		for _, line := range []string{c.Text, c.Raw, c.Canonical, c.RawPlain} {
			for k := 1; k <= len(line) && k <= s.prefixLen; k++ {
				try(s.bashByPrefix[line[:k]])
			}
		}
	}
	try(s.bashAny)
	return best
}

func (p *Policy) other(tool string, in input) Verdict {
	match := func(s *ruleSet, allow bool) *rule {
		for _, i := range s.rulesFor(tool) {
			r := s.rules[i]
			if ok := r.matchTool(in, allow); ok {
				return r
			}
		}
		return nil
	}
	if r := match(&p.deny, false); r != nil {
		return Verdict{Decision: Deny, Layer: LayerRules, Rule: r.text, Reason: "denied by rule " + r.text}
	}
	if r := match(&p.ask, false); r != nil {
		return Verdict{Decision: Ask, Layer: LayerRules, Rule: r.text, Reason: "ask rule " + r.text + " requires confirmation"}
	}
	if r := match(&p.allow, true); r != nil {
		return Verdict{Decision: Allow, Layer: LayerRules, Rule: r.text, Reason: "allowed by rule " + r.text}
	}
	return Verdict{Decision: Continue}
}

// matchTool matches a non-Bash call. Specifiers this engine cannot interpret
// for a tool (unknown tools) match every call in deny and ask lists and none
// in the allow list: fail closed.
func (r *rule) matchTool(in input, allow bool) bool {
	if r.kind == kindAny {
		// Even a blanket allow never reaches outside the workspace for
		// path tools.
		return !allow || !in.hasPath || in.rel != ""
	}
	if !in.hasPath {
		return !allow && (r.kind == kindLiteral || r.kind == kindRegexp)
	}
	if allow && in.rel == "" {
		return false // a path escaping the workspace never matches an allow rule
	}
	return r.matchPath(in.abs, in.rel)
}

// input is a decoded tool input.
type input struct {
	command string
	hasPath bool
	abs     string // absolute, clean
	rel     string // workspace-relative, or "" when outside the workspace
}

// parseInput decodes and checks a call's input. Anything not of the expected
// shape is an error (and so a denial).
func parseInput(c Call, env Env) (input, error) {
	raw := bytes.TrimSpace(c.Input)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if c.Tool == "" {
		return input{}, errors.New("missing tool name")
	}
	var m map[string]json.RawMessage
	if raw[0] != '{' {
		return input{}, errors.New("input is not a JSON object")
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return input{}, fmt.Errorf("input is not a JSON object: %w", err)
	}
	str := func(key string) (string, bool, error) {
		v, ok := m[key]
		if !ok || string(v) == "null" {
			return "", false, nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", true, fmt.Errorf("field %q must be a string", key)
		}
		return s, true, nil
	}
	var in input
	switch c.Tool {
	case "Bash":
		s, ok, err := str("command")
		if err != nil {
			return in, err
		}
		if !ok || strings.TrimSpace(s) == "" {
			return in, errors.New(`Bash needs a non-empty "command" string`)
		}
		in.command = s
	case "Read", "Write", "Edit", "LSP":
		fp, okF, err := str("file_path")
		if err != nil {
			return in, err
		}
		pp, okP, err := str("path")
		if err != nil {
			return in, err
		}
		if okF && okP && fp != pp {
			return in, errors.New(`"file_path" and "path" disagree`)
		}
		if !okF {
			fp = pp
		}
		if strings.TrimSpace(fp) == "" {
			return in, fmt.Errorf("%s needs a non-empty \"file_path\" string", c.Tool)
		}
		in.hasPath = true
		in.abs, in.rel = resolvePath(fp, env)
	case "Glob", "Grep":
		pp, _, err := str("path")
		if err != nil {
			return in, err
		}
		if _, _, err := str("pattern"); err != nil {
			return in, err
		}
		if pp == "" {
			pp = "."
		}
		in.hasPath = true
		in.abs, in.rel = resolvePath(pp, env)
	}
	if strings.ContainsRune(in.abs, 0) {
		return in, errors.New("path contains a NUL byte")
	}
	return in, nil
}

// resolvePath makes p absolute (relative to the workspace, ~ to home) and
// lexically clean, and returns it with its workspace-relative form ("" when
// it is outside the workspace, or "." for the workspace itself).
func resolvePath(p string, env Env) (abs, rel string) {
	if (p == "~" || strings.HasPrefix(p, "~/")) && env.Home != "" {
		p = env.Home + p[1:]
	}
	if !strings.HasPrefix(p, "/") {
		if env.Workspace == "" {
			return path.Clean("/" + p), "" // no workspace: nothing is inside it
		}
		p = env.Workspace + "/" + p
	}
	abs = path.Clean(p)
	if env.Workspace == "" {
		return abs, ""
	}
	ws := path.Clean(env.Workspace)
	switch {
	case abs == ws:
		return abs, "."
	case ws == "/":
		return abs, strings.TrimPrefix(abs, "/")
	case strings.HasPrefix(abs, ws+"/"):
		return abs, abs[len(ws)+1:]
	}
	return abs, ""
}

// WorkspaceRel returns p relative to the workspace, lexically (no disk
// access, so workflow code may call it); ok is false when p is outside it.
func WorkspaceRel(p string, env Env) (rel string, ok bool) {
	_, rel = resolvePath(p, env)
	return rel, rel != ""
}

// ReadOnly is layer 2: the read-only tools are allowed.
func ReadOnly(c Call) Verdict {
	if c.readOnly() {
		reason := c.Tool + " is read-only"
		if !readOnlyTools[c.Tool] {
			reason += " (its server, trusted in your settings, says so)"
		}
		return Verdict{Decision: Allow, Layer: LayerReadOnly, Reason: reason}
	}
	return Verdict{Decision: Continue}
}

// ParseMode parses a permission mode; "" is the default mode and
// "bypassPermissions" (Claude Code's name) is an alias of bypass.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "default":
		return ModeDefault, nil
	case "acceptedits":
		return ModeAcceptEdits, nil
	case "dontask":
		return ModeDontAsk, nil
	case "plan":
		return ModePlan, nil
	case "bypass", "bypasspermissions":
		return ModeBypass, nil
	}
	return "", fmt.Errorf("unknown permission mode %q (want default, acceptEdits, dontAsk, plan or bypass)", s)
}

// ResolveMode is the mode a job starts in: the one asked for, else the
// settings' defaultMode, else default; aliases are resolved to their mode.
func ResolveMode(requested, settingsDefault Mode) (Mode, error) {
	return ParseMode(string(cmp.Or(requested, settingsDefault)))
}

// Valid reports whether m is one of the known modes ("" counts as default).
func (m Mode) Valid() bool {
	switch m {
	case "", ModeDefault, ModeAcceptEdits, ModeDontAsk, ModePlan, ModeBypass:
		return true
	}
	return false
}

// ModeLayer is layer 3: the permission mode's short-circuits.
func ModeLayer(m Mode, c Call, env Env) Verdict {
	if v, ok := taskModeLayer(m, c); ok {
		return v
	}
	switch m {
	case ModePlan:
		if c.readOnly() {
			return Verdict{Decision: Continue}
		}
		return Verdict{Decision: Deny, Layer: LayerMode, Reason: "plan mode: only read-only tools may run"}
	case ModeBypass:
		return Verdict{Decision: Allow, Layer: LayerMode, Reason: "bypass mode"}
	case ModeAcceptEdits:
		if c.Tool == "Write" || c.Tool == "Edit" {
			in, err := parseInput(c, env)
			if err == nil && in.rel != "" {
				return Verdict{Decision: Allow, Layer: LayerMode, Reason: "acceptEdits mode: edit inside the workspace"}
			}
		}
		return Verdict{Decision: Continue}
	case "", ModeDefault, ModeDontAsk:
		return Verdict{Decision: Continue}
	}
	return Verdict{Decision: Deny, Layer: LayerMode, Reason: fmt.Sprintf("unknown permission mode %q (fail closed)", m)}
}

// Evaluate runs layers 1-3 and returns the first deciding verdict, or
// Continue. A Deny or Ask from the rules is final here (an ask rule or an
// undecidable command is never turned into an allow by later layers), except
// that plan mode denies every non-read-only call, even one the rules allow
// or ask about. Without an OS sandbox, Bash is refused or always asked
// (confine, sandbox.go).
func (p *Policy) Evaluate(c Call, m Mode) Verdict { return p.confine(c, p.evaluate(c, m)) }

func (p *Policy) evaluate(c Call, m Mode) Verdict {
	v := p.rules(c, m)
	if v.Decision == Deny {
		return v
	}
	if !m.Valid() {
		return Verdict{Decision: Deny, Layer: LayerMode, Reason: fmt.Sprintf("unknown permission mode %q (fail closed)", m)}
	}
	if v.Decision == Ask || v.Decision == Allow {
		if m == ModePlan && !c.planAllows() {
			return Verdict{Decision: Deny, Layer: LayerMode, Rule: v.Rule,
				Reason: "plan mode: only read-only tools may run"}
		}
		return v
	}
	if v := ReadOnly(c); v.Decision != Continue {
		return v
	}
	if mv := ModeLayer(m, c, p.env); mv.Decision != Continue || v.Reason == "" {
		return mv
	}
	return v // Continue, with the rules' reason for the person (a Bash edit)
}

// SuggestRule proposes the rule an Always or Never answer about c should add:
// Bash(<normalised command>) for one simple command, Bash(<command text>) for
// compound commands, Tool(<workspace-relative path>) for file tools, and the
// bare tool name otherwise.
func SuggestRule(c Call, env Env) string {
	in, err := parseInput(c, env)
	if err != nil {
		return c.Tool
	}
	switch c.Tool {
	case "Bash":
		a := shell.Analyze(in.command, env.shell())
		// A command under a variable the line sets (PAGER=cat git log)
		// is learned whole: a rule for its words alone would cover any
		// value of the variable.
		if len(a.Commands) == 1 && len(a.Undecidable) == 0 && len(a.WriteTargets) == 0 && !strings.ContainsAny(in.command, ";&|\n`$(<>") &&
			!slices.ContainsFunc(a.Commands[0].Findings, func(f programs.Finding) bool { return f.Env == programs.EnvLine }) {
			words := make([]string, len(a.Commands[0].Argv))
			for i, w := range a.Commands[0].Argv {
				words[i] = quoteSuggested(w)
			}
			return "Bash(" + strings.Join(words, " ") + ")"
		}
		return "Bash(" + strings.Join(strings.Fields(in.command), " ") + ")"
	case "Read", "Write", "Edit", "LSP":
		if in.rel != "" && in.rel != "." {
			return c.Tool + "(" + pathglob.Escape(in.rel) + ")"
		}
		return c.Tool + "(" + pathglob.Escape(in.abs) + ")"
	}
	return c.Tool
}

// quoteSuggested quotes a word of a suggested Bash rule so that the rule is
// exact: glob characters and anything special to the shell end up quoted.
func quoteSuggested(w string) string {
	if w != "" && !strings.ContainsAny(w, " \t\n'\"\\*?[]{}()$`;&|<>#~!=") {
		return w
	}
	if strings.Contains(w, "=") && !strings.ContainsAny(w, " \t\n'\"\\*?[]{}()$`;&|<>#~!") {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}
