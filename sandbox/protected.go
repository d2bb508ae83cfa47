package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// ProtectedRule says why a path in the workspace is never writable from a
// tool or a command: something on the host (git, a shell, an editor, an
// agent, custos itself) reads it later and runs what it names, outside the
// sandbox. The same list feeds the path guard (Write/Edit), the system hook,
// the bubblewrap profile (Bash) and the tool descriptions, so they cannot
// disagree.
type ProtectedRule struct {
	// Name is short and shown to the model, e.g. "git hooks".
	Name string
	// Why is one clause: what on the host would run it.
	Why string
}

// The rules. Each protected name below points at one of them.
var (
	RuleShellStartup  = ProtectedRule{Name: "shell start-up file", Why: "a shell on the host runs it when it starts"}
	RuleGitConfigFile = ProtectedRule{Name: "git configuration file", Why: "git on the host reads URLs, programs and hook paths from it"}
	RuleToolConfig    = ProtectedRule{Name: "tool configuration", Why: "a tool on the host reads its options from it"}
	RuleMCPServers    = ProtectedRule{Name: "MCP server list", Why: "an agent on the host starts the servers it lists"}
	RuleEditorConfig  = ProtectedRule{Name: "editor configuration", Why: "an editor on the host runs the tasks and tools it names when the folder is opened"}
	RuleAgentConfig   = ProtectedRule{Name: "agent configuration", Why: "an agent on the host runs the hooks and commands it defines"}
	RuleCustos        = ProtectedRule{Name: "custos settings", Why: "they set the permissions of the next job"}
	RuleGitHooks      = ProtectedRule{Name: "git hooks", Why: "git on the host runs them"}
	RuleGitConfig     = ProtectedRule{Name: "git config", Why: "it can name programs git on the host runs (core.hooksPath, core.fsmonitor, aliases)"}
	RuleGitPointer    = ProtectedRule{Name: "git directory pointer", Why: "it tells git on the host which repository, hooks and config to use"}
	RuleGitMetadata   = ProtectedRule{Name: "git metadata", Why: "git manages it; change it with git commands"}
)

type protectedName struct {
	name string
	rule *ProtectedRule
	// home marks names only read from a home directory (shell start-up
	// files, ~/.gitconfig, ~/.ripgreprc, ~/.claude.json). Present ones are
	// protected everywhere; a missing one gets a placeholder only when the
	// workspace is a home directory (see protectedPlan.rootPlaceholders).
	home bool
}

// protectedFiles are file names protected wherever they appear in the
// workspace: at least what Anthropic's sandbox-runtime protects by default
// (its DANGEROUS_FILES), plus the other start-up files of bash and zsh.
var protectedFiles = []protectedName{
	{".bashrc", &RuleShellStartup, true}, {".bash_profile", &RuleShellStartup, true}, {".bash_login", &RuleShellStartup, true},
	{".bash_logout", &RuleShellStartup, true}, {".profile", &RuleShellStartup, true},
	{".zshrc", &RuleShellStartup, true}, {".zshenv", &RuleShellStartup, true}, {".zprofile", &RuleShellStartup, true},
	{".zlogin", &RuleShellStartup, true}, {".zlogout", &RuleShellStartup, true},
	{".gitconfig", &RuleGitConfigFile, true}, {".gitmodules", &RuleGitConfigFile, false},
	{".ripgreprc", &RuleToolConfig, true},
	{".mcp.json", &RuleMCPServers, false}, {".claude.json", &RuleMCPServers, true},
}

// protectedDirs are directory names protected, with everything below them,
// wherever they appear: editor and agent configuration that runs commands
// when a folder is opened or an agent starts there (sandbox-runtime protects
// .vscode, .idea and parts of .claude; all of .claude holds hooks too), and
// custos' own settings.
var protectedDirs = []protectedName{
	{".vscode", &RuleEditorConfig, false}, {".idea", &RuleEditorConfig, false}, {".zed", &RuleEditorConfig, false},
	{".devcontainer", &RuleEditorConfig, false},
	{".claude", &RuleAgentConfig, false}, {".cursor", &RuleAgentConfig, false}, {".codex", &RuleAgentConfig, false},
	{".gemini", &RuleAgentConfig, false},
	{".custos", &RuleCustos, false},
}

// gitDirName is the entry git looks for: a repository directory, or a
// "gitdir:" pointer file (linked worktrees, submodules).
const gitDirName = ".git"

// ProtectedBy reports whether rel (relative to the workspace, any spelling:
// "./", "..", either slash) is protected, and by which rule. Matching ignores
// case, because on case-insensitive file systems .GIT/config is .git/config.
// It is lexical and pure, so workflow code may call it:
//   - any path component named like a protected file or directory;
//   - any path through a .git component, in any repository of the workspace
//     (nested ones and submodules included): the file tools have no business
//     there, and hooks, config and pointers are named for what they do.
func ProtectedBy(rel string) (ProtectedRule, bool) {
	r := strings.ToLower(filepath.ToSlash(filepath.Clean(rel)))
	if r == "." || r == ".." || strings.HasPrefix(r, "../") || strings.HasPrefix(r, "/") {
		return ProtectedRule{}, false
	}
	comps := strings.Split(r, "/")
	for i, c := range comps {
		if c == gitDirName {
			return gitRule(comps[i+1:]), true
		}
		if rule := lookup(protectedDirs, c); rule != nil {
			return *rule, true
		}
		if rule := lookup(protectedFiles, c); rule != nil {
			return *rule, true
		}
	}
	return ProtectedRule{}, false
}

// gitRule names the rule for a path inside a git directory, given the
// components after ".git".
func gitRule(rest []string) ProtectedRule {
	if len(rest) == 0 {
		return RuleGitPointer
	}
	for _, c := range rest {
		switch {
		case c == "hooks":
			return RuleGitHooks
		case strings.HasPrefix(c, "config"):
			return RuleGitConfig
		case c == "commondir" || c == "gitdir":
			return RuleGitPointer
		}
	}
	return RuleGitMetadata
}

func lookup(list []protectedName, name string) *ProtectedRule {
	for _, p := range list {
		if p.name == name {
			return p.rule
		}
	}
	return nil
}

// ProtectedPath reports whether rel is protected (see ProtectedBy).
func ProtectedPath(rel string) bool {
	_, ok := ProtectedBy(rel)
	return ok
}

// ProtectedError is the path guard's refusal of a protected path. It is
// ErrProtectedPath for errors.Is, and its message names the rule so the
// model can tell the user what it could not do.
type ProtectedError struct {
	Path string
	Rule ProtectedRule
}

func (e *ProtectedError) Error() string {
	return fmt.Sprintf("%s: %s (%s: %s)", e.Path, ErrProtectedPath, e.Rule.Name, e.Rule.Why)
}

func (e *ProtectedError) Is(target error) bool { return target == ErrProtectedPath }

// ProtectedReason is the sentence a refusal shows: the path, the rule and why.
func ProtectedReason(path string, rule ProtectedRule) string {
	return fmt.Sprintf("%s is protected (%s: %s); tools and commands cannot change it", path, rule.Name, rule.Why)
}

// ProtectedSummary lists the protected paths for the tool descriptions, in
// a fixed order with fixed bytes.
func ProtectedSummary() string {
	names := func(list []protectedName, suffix string) string {
		out := make([]string, len(list))
		for i, p := range list {
			out[i] = p.name + suffix
		}
		return strings.Join(out, ", ")
	}
	return "Protected paths are read-only (the host runs what they name): " +
		"git hooks and config in every repository (.git/hooks, .git/config, the directory core.hooksPath names, a .git pointer file; " +
		"Write and Edit leave all of .git/ to git commands), " +
		names(protectedDirs, "/") + ", " + names(protectedFiles, "") + "."
}

var errUnprotectable = errors.New("a symbolic link stands where a protected path must be; custos cannot keep it read-only, so commands are refused until it is replaced by the real file or directory")
