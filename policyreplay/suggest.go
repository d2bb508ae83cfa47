package policyreplay

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/approval/shell"
	"github.com/custos-dev/custos/pathglob"
)

// Suggestion is an allow rule the recorded answers support, with its
// evidence: Approvals, the past calls people allowed that it would have
// allowed without asking; Also, the other recorded calls it covers (ones
// rules, modes or hooks already allowed). It covers no recorded denial.
type Suggestion struct {
	Rule      string     `json:"rule"`
	Approvals []Evidence `json:"approvals"`
	Also      []Evidence `json:"also"`
	// Workspaces are those of the approvals, for --write workspace.
	Workspaces []string `json:"workspaces"`
}

// Evidence is one recorded call.
type Evidence struct {
	JobID   string  `json:"jobId"`
	Seq     int     `json:"seq"`
	CallID  string  `json:"callId"`
	Summary string  `json:"summary"`
	Then    Outcome `json:"then"`
}

// Rejected is a candidate rule that was not suggested, and why.
type Rejected struct {
	Rule string `json:"rule"`
	Why  string `json:"why"`
}

// Suggestions is what `policy suggest` prints.
type Suggestions struct {
	Min         int          `json:"min"`
	Approvals   int          `json:"approvals"`
	Denials     int          `json:"denials"`
	Suggestions []Suggestion `json:"suggestions"`
	// Rejected are the candidates a denial or an overriding rule ruled out
	// (not those that merely covered too few approvals).
	Rejected []Rejected `json:"rejected"`
}

// item is one recorded call, with what judging it again needs.
type item struct {
	job  *Job
	rec  approval.AuditRecord
	call approval.Call
	env  approval.Env
	mode approval.Mode
	// kind: approval (a person allowed it), denial (anyone denied it,
	// timers included), other (allowed without a person).
	kind string
	// names and argvs are a Bash call's commands (analyseBash); envKey its
	// facts as a key for the policies compiled for them.
	names  []string
	argvs  [][]string
	envKey string
	// rel is a file tool's path relative to the workspace ("" outside it).
	rel string
}

// candidate is a rule and how narrow it is (higher: narrower).
type candidate struct {
	rule        string
	specificity int
}

// Suggest proposes the narrowest allow rules, in custos' rule syntax, that
// each cover at least min recorded approvals and none of the recorded
// denials, judged with the workspaces' current settings (pols.Current): a
// rule a system rule, a deny rule or an ask rule would override for a call
// it covers is never suggested.
func Suggest(jobs []Job, pols Policies, min int) (*Suggestions, error) {
	items := gather(jobs)
	out := &Suggestions{Min: min, Suggestions: []Suggestion{}, Rejected: []Rejected{}}
	cands := map[string]candidate{}
	for _, it := range items {
		switch it.kind {
		case "approval":
			out.Approvals++
			for _, c := range candidates(it) {
				if old, ok := cands[c.rule]; !ok || c.specificity > old.specificity {
					cands[c.rule] = c
				}
			}
		case "denial":
			out.Denials++
		}
	}
	var valid []scored
	sc := newScorer(items, pols)
	for _, c := range sortedCandidates(cands) {
		s, why, err := sc.score(c)
		if err != nil {
			return nil, err
		}
		switch {
		case why != "":
			out.Rejected = append(out.Rejected, Rejected{Rule: c.rule, Why: why})
		case len(s.Approvals) >= min:
			valid = append(valid, scored{c, s})
		}
	}
	out.Suggestions = choose(valid, min)
	return out, nil
}

type scored struct {
	c candidate
	s Suggestion
}

// choose takes the narrowest candidates first, each only if it covers at
// least min approvals no narrower suggestion covers already.
func choose(valid []scored, min int) []Suggestion {
	sort.SliceStable(valid, func(a, b int) bool {
		x, y := valid[a], valid[b]
		return cmp.Or(cmp.Compare(y.c.specificity, x.c.specificity),
			cmp.Compare(len(x.s.Approvals)+len(x.s.Also), len(y.s.Approvals)+len(y.s.Also)),
			strings.Compare(x.c.rule, y.c.rule)) < 0
	})
	covered := map[string]bool{}
	out := []Suggestion{}
	for _, v := range valid {
		fresh := 0
		for _, e := range v.s.Approvals {
			if !covered[evidenceKey(e)] {
				fresh++
			}
		}
		if fresh < min {
			continue
		}
		for _, e := range v.s.Approvals {
			covered[evidenceKey(e)] = true
		}
		out = append(out, v.s)
	}
	return out
}

func evidenceKey(e Evidence) string { return fmt.Sprintf("%s\x00%d", e.JobID, e.Seq) }

func sortedCandidates(m map[string]candidate) []candidate {
	out := make([]candidate, 0, len(m))
	for _, c := range m {
		out = append(out, c)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].rule < out[b].rule })
	return out
}

// gather lists the recorded calls a suggestion is judged on.
func gather(jobs []Job) []item {
	var items []item
	for ji := range jobs {
		j := &jobs[ji]
		env := approval.Env{Workspace: j.Workspace}
		mode := approval.ModeDefault
		for _, rec := range j.Records {
			if rec.Env != nil {
				env = *rec.Env
			}
			if rec.Event == "mode-changed" {
				if _, to, ok := strings.Cut(rec.Reason, " -> "); ok {
					mode = approval.Mode(strings.TrimSpace(to))
				}
			}
			if !decided(rec) || refusedBeforePolicy(rec) {
				continue
			}
			it := item{job: j, rec: rec, call: approval.Call{Tool: rec.Tool, Input: modelInput(rec)}, env: env,
				mode: cmp.Or(rec.Mode, mode), kind: "other"}
			it.names, it.argvs = analyseBash(it.call, env)
			it.envKey = envKey(env)
			it.rel, _ = relPath(it.call, env)
			switch {
			case rec.Decision == approval.Deny:
				it.kind = "denial"
			case rec.Layer == approval.LayerHuman:
				it.kind = "approval"
			}
			items = append(items, it)
		}
	}
	return items
}

// plainWord is a command word a prefix rule may name as it is.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./=@%+,-]+$`)

// candidates are the rules, narrowest first, that would allow one call: the
// rule Always would save (approval.SuggestRule), then for a simple command
// its words as a prefix, one fewer each time down to the program; for a
// file tool the file's directories, deepest first.
func candidates(it item) []candidate {
	exact := approval.SuggestRule(it.call, it.env)
	out := []candidate{{exact, 1000}}
	switch it.call.Tool {
	case "Bash":
		var in struct {
			Command string `json:"command"`
		}
		_ = json.Unmarshal(it.call.Input, &in)
		a := shell.Analyze(in.Command, shell.Env{Workspace: it.env.Workspace, Home: it.env.Home})
		if len(a.Commands) != 1 || len(a.Undecidable) > 0 || len(a.Commands[0].Wrappers) > 0 || len(a.WriteTargets) > 0 {
			return out
		}
		words := a.Commands[0].Argv
		for k := len(words); k >= 1; k-- {
			if allPlain(words[:k]) {
				out = append(out, candidate{"Bash(" + strings.Join(words[:k], " ") + ":*)", 10 * k})
			}
		}
	case "Read", "Write", "Edit", "LSP":
		rel, ok := relPath(it.call, it.env)
		if !ok {
			return out
		}
		depth := strings.Count(rel, "/")
		for d := path.Dir(rel); d != "." && d != "/"; d = path.Dir(d) {
			out = append(out, candidate{it.call.Tool + "(" + pathglob.Escape(d) + "/**)", 10 * depth})
			depth--
		}
	}
	return out
}

func allPlain(words []string) bool {
	for _, w := range words {
		if !plainWord.MatchString(w) {
			return false
		}
	}
	return true
}

// relPath is a file tool's path relative to the workspace.
func relPath(c approval.Call, env approval.Env) (string, bool) {
	var in struct {
		FilePath string `json:"file_path"`
		Path     string `json:"path"`
	}
	if json.Unmarshal(c.Input, &in) != nil {
		return "", false
	}
	rel, ok := approval.WorkspaceRel(cmp.Or(in.FilePath, in.Path), env)
	return rel, ok && rel != "."
}

// scorer judges candidates over the recorded calls, with the policies
// they are judged by compiled once per workspace and facts.
type scorer struct {
	items []item
	pols  Policies
	// empty (system rules alone) and current, by facts (and workspace).
	empty, current map[string]*approval.Policy
}

func newScorer(items []item, pols Policies) *scorer {
	return &scorer{items: items, pols: pols, empty: map[string]*approval.Policy{}, current: map[string]*approval.Policy{}}
}

// score judges one candidate over every recorded call. A call is covered
// when the rule alone (with the system rules, which always apply) allows
// it; why is set when the candidate must not be suggested: it covers a
// denial, or the current rules override it for an approval it covers.
func (sc *scorer) score(c candidate) (Suggestion, string, error) {
	s := Suggestion{Rule: c.rule, Approvals: []Evidence{}, Also: []Evidence{}, Workspaces: []string{}}
	bare, full := map[string]*approval.Policy{}, map[string]*approval.Policy{}
	may := mayCover(c.rule)
	for _, it := range sc.items {
		if !may(it) {
			continue
		}
		if bare[it.envKey] == nil {
			var err error
			if bare[it.envKey], full[it.job.Workspace+it.envKey], err = sc.policies(c.rule, it); err != nil {
				return s, "", err
			}
		}
		v := bare[it.envKey].Evaluate(it.call, approval.ModeDefault)
		if v.Decision == approval.Deny && it.kind == "denial" && namedDespiteDeny(c.rule, it) {
			return s, fmt.Sprintf("%s overrides it for %s #%d %s", denier(v), it.job.ID, it.rec.Seq,
				api.Summarize(it.call.Tool, it.call.Input)), nil
		}
		if v.Decision != approval.Allow || !ruleNamed(v.Rule, c.rule) {
			continue
		}
		ev := Evidence{JobID: it.job.ID, Seq: it.rec.Seq, CallID: it.rec.CallID,
			Summary: api.Summarize(it.call.Tool, it.call.Input), Then: then(it.rec)}
		switch it.kind {
		case "denial":
			return s, fmt.Sprintf("it covers a denial: %s #%d %s (%s)", it.job.ID, it.rec.Seq, ev.Summary, outcomeText(ev.Then, true)), nil
		case "approval":
			f := full[it.job.Workspace+it.envKey]
			if f == nil {
				var err error
				if _, f, err = sc.policies(c.rule, it); err != nil {
					return s, "", err
				}
				full[it.job.Workspace+it.envKey] = f
			}
			if fv := f.Evaluate(it.call, it.mode); fv.Decision != approval.Allow {
				return s, fmt.Sprintf("the current settings override it for %s #%d %s: %s", it.job.ID, it.rec.Seq, ev.Summary, fv.Reason), nil
			}
			s.Approvals = append(s.Approvals, ev)
			if !slices.Contains(s.Workspaces, it.job.Workspace) {
				s.Workspaces = append(s.Workspaces, it.job.Workspace)
			}
		default:
			s.Also = append(s.Also, ev)
		}
	}
	return s, "", nil
}

// policies are the rule alone, and the workspace's current settings with
// the rule added, both for the call's facts.
func (sc *scorer) policies(rule string, it item) (bare, full *approval.Policy, err error) {
	empty := sc.empty[it.envKey]
	if empty == nil {
		if empty, err = approval.Compile(approval.Settings{}, it.env); err != nil {
			return nil, nil, err
		}
		sc.empty[it.envKey] = empty
	}
	if bare, err = empty.WithRule(approval.ListAllow, rule); err != nil {
		return nil, nil, fmt.Errorf("candidate rule %s: %w", rule, err)
	}
	k := it.job.Workspace + "\x00" + it.envKey
	cur := sc.current[k]
	if cur == nil {
		s, err := sc.pols.Current(it.job.Workspace)
		if err != nil {
			return nil, nil, err
		}
		if cur, err = approval.Compile(s, it.env); err != nil {
			return nil, nil, fmt.Errorf("current settings of %s: %w", it.job.Workspace, err)
		}
		sc.current[k] = cur
	}
	if full, err = cur.WithRule(approval.ListAllow, rule); err != nil {
		return nil, nil, fmt.Errorf("candidate rule %s: %w", rule, err)
	}
	return bare, full, nil
}

func envKey(env approval.Env) string {
	b, _ := json.Marshal(env)
	return string(b)
}

// ruleNamed reports whether a verdict's rule text (one rule, or several
// joined with ", ") names rule.
func ruleNamed(verdictRule, rule string) bool {
	return verdictRule == rule || slices.Contains(strings.Split(verdictRule, ", "), rule)
}

// mayCover is a cheap necessary condition for rule to allow a call, so a
// candidate is judged only on the calls it could cover: its tool (an Edit
// rule also covers Write, a Read rule Glob and Grep, as in approval's
// rules), and for a Bash prefix rule its first word in the command.
func mayCover(rule string) func(item) bool {
	tool, spec, _ := strings.Cut(rule, "(")
	tools := map[string]bool{tool: true}
	switch tool {
	case "Edit":
		tools["Write"] = true
	case "Read":
		tools["Glob"], tools["Grep"], tools["LSP"] = true, true, true
	}
	first := ""
	if tool == "Bash" {
		first, _, _ = strings.Cut(strings.TrimSuffix(spec, ")"), " ")
		first = strings.TrimSuffix(first, ":*")
	}
	if !plainWord.MatchString(first) {
		first = "" // a quoted or patterned first word: no shortcut
	}
	prefix, paths := pathPrefix(tool, strings.TrimSuffix(spec, ")"))
	return func(it item) bool {
		if !tools[it.call.Tool] || (first != "" && !slices.Contains(it.names, first)) {
			return false
		}
		// An allow rule never matches a path outside the workspace.
		return !paths || (it.rel != "" && strings.HasPrefix(it.rel, prefix))
	}
}

// pathPrefix is the literal start every workspace-relative path a path
// rule matches must have: its pattern up to the first pattern character
// (or escape). ok is false when there is no such shortcut: absolute or ~
// patterns, and those without a slash, which also match a base name at any
// depth.
func pathPrefix(tool, spec string) (prefix string, ok bool) {
	if !pathTools[tool] || !strings.Contains(spec, "/") || strings.HasPrefix(spec, "/") || strings.HasPrefix(spec, "~") {
		return "", false
	}
	if i := strings.IndexAny(spec, `*?[{\`); i >= 0 {
		spec = spec[:i]
	}
	return spec, true
}

// pathTools are the tools whose rules name paths.
var pathTools = map[string]bool{"Read": true, "Write": true, "Edit": true, "Glob": true, "Grep": true, "LSP": true}

// analyseBash gives what a candidate is checked against in a Bash call
// (approval's own analysis, so quoting and wrappers are seen through):
// names, each simple command's name and outermost wrapper (approval
// indexes rules by them; an allow rule's first word must be the first
// command's), and argvs, each command's words from its name on.
func analyseBash(c approval.Call, env approval.Env) (names []string, argvs [][]string) {
	var in struct {
		Command string `json:"command"`
	}
	if c.Tool != "Bash" || json.Unmarshal(c.Input, &in) != nil {
		return nil, nil
	}
	for _, sc := range shell.Analyze(in.Command, shell.Env{Workspace: env.Workspace, Home: env.Home}).Commands {
		names = append(names, sc.Name)
		if len(sc.Wrappers) > 0 {
			names = append(names, sc.Wrappers[0])
		}
		for i, w := range sc.Argv {
			if path.Base(w) == sc.Name {
				argvs = append(argvs, append([]string{sc.Name}, sc.Argv[i+1:]...))
				break
			}
		}
	}
	return names, argvs
}

// namedDespiteDeny reports whether candidate c names call it although a
// system rule (or custos' own deny of its directories) denies it: such a
// rule is overridden for part of what it says, and is not suggested. It
// reads the rule's words (or literal directory) against the call's, and
// says false when it cannot tell.
func namedDespiteDeny(rule string, it item) bool {
	tool, spec, _ := strings.Cut(rule, "(")
	spec = strings.TrimSuffix(spec, ")")
	if prefix, ok := pathPrefix(tool, spec); ok {
		return mayCover(rule)(it) && strings.HasPrefix(it.rel, prefix)
	}
	if tool != "Bash" {
		return false
	}
	words, open := strings.Fields(strings.TrimSuffix(spec, ":*")), strings.HasSuffix(spec, ":*")
	if len(words) == 0 || !allPlain(words) {
		return false
	}
	for _, argv := range it.argvs {
		if len(argv) >= len(words) && slices.Equal(argv[:len(words)], words) && (open || len(argv) == len(words)) {
			return true
		}
	}
	return false
}

// denier names what denied a call in words.
func denier(v approval.Verdict) string {
	switch {
	case v.System:
		return "the system rule " + v.Rule
	case v.Rule != "":
		return "the deny rule " + v.Rule
	}
	return "a denial (" + v.Reason + ")"
}
