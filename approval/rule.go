package approval

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/gobwas/glob"

	"github.com/custos-dev/custos/approval/shell"
	"github.com/custos-dev/custos/pathglob"
)

// ErrMalformedRule is wrapped by every rule parse error.
var ErrMalformedRule = errors.New("malformed rule")

// ruleKind is how a rule's specifier matches.
type ruleKind int

const (
	kindAny     ruleKind = iota // "Tool" or "Tool(*)": every call of the tool
	kindExact                   // Bash(npm test): the normalised command line, exactly
	kindPrefix                  // Bash(npm run test:*): these words, then anything
	kindGlob                    // Bash(git push *): a glob over the normalised command line
	kindRegexp                  // Bash(re:^git (status|log)\b)
	kindPath                    // Read(.env*), Edit(src/**): a glob over a path
	kindText                    // Bash(a && b): the whole command text, exactly
	kindLiteral                 // Tool(x) for tools without known input: the specifier, exactly
)

// pathTools are the tools whose specifier is a path pattern, and the input
// field holding the path.
var pathTools = map[string]bool{"Read": true, "Write": true, "Edit": true, "Glob": true, "Grep": true, "LSP": true}

// rule is one compiled permission rule.
type rule struct {
	text string // as written, for verdicts
	tool string
	kind ruleKind
	// exact / prefix / text value, normalised.
	value string
	g     glob.Glob
	// bare is set for globs ending in " *": the words before it alone also
	// match ("git push *" matches "git push").
	bare string
	re   *regexp.Regexp
	// rePrefix is a literal every match must start with (for regexps
	// anchored with ^): a cheap filter before running the regexp.
	rePrefix string
	// prog is the file a Bash rule's first word names by a path outside
	// the system directories (Bash(./gradlew:*)), resolved in the
	// workspace; "" for a program looked up by name (programpath.go).
	prog string
	// Path rules: absolute patterns match the absolute path; relative ones the
	// workspace-relative path; patterns without a slash also match the base
	// name at any depth (gitignore style).
	absolute bool
	baseName bool
}

// parseRule compiles one rule. env supplies ~ for path and command rules.
func parseRule(text string, env Env) (*rule, error) {
	t := strings.TrimSpace(text)
	if t == "" {
		return nil, fmt.Errorf("%w: empty rule", ErrMalformedRule)
	}
	tool, spec, hasSpec, err := splitRule(t)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrMalformedRule, text, err)
	}
	r := &rule{text: t, tool: mcpRuleTool(tool)}
	spec = strings.TrimSpace(spec)
	if !hasSpec || spec == "*" {
		r.kind = kindAny
		return r, nil
	}
	if spec == "" {
		return nil, fmt.Errorf("%w %q: empty specifier (write %s alone to match every call)", ErrMalformedRule, text, tool)
	}
	if re, ok := strings.CutPrefix(spec, "re:"); ok {
		if re == "" {
			return nil, fmt.Errorf("%w %q: empty regular expression", ErrMalformedRule, text)
		}
		rx, err := regexp.Compile(re)
		if err != nil {
			return nil, fmt.Errorf("%w %q: bad regular expression: %w", ErrMalformedRule, text, err)
		}
		r.kind, r.re = kindRegexp, rx
		if strings.HasPrefix(re, "^") && !strings.Contains(re, "|") && !strings.Contains(re, "(?") {
			// LiteralPrefix is empty for anchored programs; ask the rest.
			if rest, err := regexp.Compile(re[1:]); err == nil {
				r.rePrefix, _ = rest.LiteralPrefix()
			}
		}
		return r, nil
	}
	switch {
	case tool == "Bash":
		err = r.compileCommand(spec, env)
	case pathTools[tool]:
		err = r.compilePath(spec, env)
	default:
		r.kind, r.value = kindLiteral, spec
	}
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrMalformedRule, text, err)
	}
	return r, nil
}

// splitRule splits "Tool(spec)" into its parts and checks the parentheses.
func splitRule(t string) (tool, spec string, hasSpec bool, err error) {
	open := strings.IndexByte(t, '(')
	if open < 0 {
		if strings.ContainsAny(t, ")") {
			return "", "", false, errors.New("unbalanced parentheses")
		}
		tool = t
	} else {
		if !strings.HasSuffix(t, ")") {
			return "", "", false, errors.New("unbalanced parentheses: the specifier must end with ')'")
		}
		tool, spec, hasSpec = t[:open], t[open+1:len(t)-1], true
		// Parentheses inside the specifier must balance, except in regular
		// expressions, where escaped ones are common.
		if !strings.HasPrefix(strings.TrimSpace(spec), "re:") {
			depth := 0
			for _, c := range spec {
				switch c {
				case '(':
					depth++
				case ')':
					depth--
				}
				if depth < 0 {
					return "", "", false, errors.New("unbalanced parentheses")
				}
			}
			if depth != 0 {
				return "", "", false, errors.New("unbalanced parentheses")
			}
		}
	}
	tool = strings.TrimSpace(tool)
	if tool == "" {
		return "", "", false, errors.New("missing tool name")
	}
	name := tool
	if mcpRuleTool(tool) != tool {
		name = mcpRuleTool(tool) // mcp__SERVER__*: every tool of the server
	}
	for _, c := range name {
		if !(c == '_' || c == '-' || c == '.' || c == ':' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "", "", false, fmt.Errorf("invalid character %q in tool name", c)
		}
	}
	return tool, spec, hasSpec, nil
}

// declKeywords are bash's declarations and let, which the shell parser
// reads as syntax, never as commands.
var declKeywords = []string{"export", "declare", "local", "typeset", "readonly", "let", "nameref"}

// compileCommand compiles a Bash specifier. The specifier is normalised the
// same way commands are (quotes removed, argv[0] basename, flags sorted for
// alias-table commands, paths cleaned), so "rm -fr build/" matches "rm -rf build".
func (r *rule) compileCommand(spec string, env Env) error {
	if prefix, ok := strings.CutSuffix(spec, ":*"); ok {
		words, _, ok := shell.RuleWords(prefix, env.shell())
		if !ok || len(words) == 0 {
			if first, _, _ := strings.Cut(strings.TrimSpace(prefix), " "); slices.Contains(declKeywords, first) {
				return fmt.Errorf("%s is part of the shell's syntax, not a command a rule names: what it assigns or evaluates is judged where it appears", first)
			}
			return errors.New("prefix rule must be a plain command before ':*'")
		}
		r.kind, r.value = kindPrefix, shell.Normalise(words)
		r.prog = shell.ProgramFile(words[0], env.shell())
		return nil
	}
	words, pattern, ok := shell.RuleWords(spec, env.shell())
	if !ok {
		// Not one plain simple command (a compound command, substitutions):
		// match the whole command text exactly, never as a glob, so that
		// "ls * && echo" can never stand for more than it says.
		r.kind, r.value = kindText, strings.Join(strings.Fields(spec), " ")
		return nil
	}
	norm := shell.Normalise(words)
	r.prog = shell.ProgramFile(words[0], env.shell())
	if !pattern {
		// No unquoted glob character: the rule names one command exactly
		// (Bash(ls '*.go') is the literal command ls '*.go').
		r.kind, r.value = kindExact, norm
		return nil
	}
	g, err := glob.Compile(norm)
	if err != nil {
		return fmt.Errorf("bad glob %q: %w", norm, err)
	}
	r.kind, r.g, r.value = kindGlob, g, norm
	if bare, ok := strings.CutSuffix(norm, " *"); ok && !hasGlobMeta(bare) {
		r.bare = bare
	}
	return nil
}

func hasGlobMeta(s string) bool { return strings.ContainsAny(s, "*?[{") }

// compilePath compiles a path specifier.
func (r *rule) compilePath(spec string, env Env) error {
	p := spec
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		if env.Home == "" {
			return errors.New("~ in a path rule needs a home directory")
		}
		p = env.Home + p[1:]
	case strings.HasPrefix(p, "./"):
		p = p[2:]
	}
	r.absolute = strings.HasPrefix(p, "/")
	trailingDir := strings.HasSuffix(p, "/")
	p = path.Clean(p)
	if trailingDir && p != "/" {
		p += "/**" // "src/" means everything below src
	}
	if !r.absolute && strings.HasPrefix(p, "../") || p == ".." {
		return errors.New("relative path rule must not leave the workspace; use an absolute path")
	}
	r.baseName = !r.absolute && !strings.Contains(p, "/")
	g, err := pathglob.Compile(p)
	if err != nil {
		return fmt.Errorf("bad glob %q: %w", p, err)
	}
	r.kind, r.g, r.value = kindPath, g, p
	return nil
}

// appliesTo reports whether the rule is about tool. Read rules cover the
// other reading tools (LSP included: a language server reads the file) and Edit rules cover Write, as in Claude Code.
func (r *rule) appliesTo(tool string) bool {
	if r.tool == tool {
		return true
	}
	switch r.tool {
	case "Read":
		return tool == "Glob" || tool == "Grep" || tool == "LSP"
	case "Edit":
		return tool == "Write"
	}
	return false
}

// matchCommandLine matches one normalised command line (Text or Raw of a
// simple command).
func (r *rule) matchCommandLine(line string) bool {
	switch r.kind {
	case kindAny:
		return true
	case kindExact:
		return line == r.value
	case kindPrefix:
		return line == r.value || strings.HasPrefix(line, r.value+" ")
	case kindGlob:
		return r.g.Match(line) || (r.bare != "" && line == r.bare)
	case kindRegexp:
		return strings.HasPrefix(line, r.rePrefix) && r.re.MatchString(line)
	}
	return false
}

// matchPath matches a resolved path: abs is absolute and clean; rel is the
// workspace-relative path, or "" when abs is outside the workspace.
func (r *rule) matchPath(abs, rel string) bool {
	switch r.kind {
	case kindAny:
		return true
	case kindRegexp:
		return r.re.MatchString(abs) || (rel != "" && r.re.MatchString(rel))
	case kindPath:
		if r.absolute {
			return r.g.Match(abs)
		}
		if rel == "" {
			return false
		}
		if r.g.Match(rel) {
			return true
		}
		return r.baseName && r.g.Match(path.Base(rel))
	}
	return false
}
