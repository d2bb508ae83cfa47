// Package protected is the one list of workspace paths no tool and no
// command may change: git hooks and config, shell start-up files, editor and
// agent configuration, custos' own settings. Something on the host reads
// them later and runs what they name, outside any sandbox. The list is pure
// data and lexical matching, so the policy (a system hook in workflow code),
// the path guard of Write and Edit, the bubblewrap profile of Bash and the
// tool descriptions all ask it and cannot disagree.
package protected

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Rule says why a path in the workspace is never writable from a
// tool or a command: something on the host (git, a shell, an editor, an
// agent, custos itself) reads it later and runs what it names, outside the
// sandbox.
type Rule struct {
	// Name is short and shown to the model, e.g. "git hooks".
	Name string
	// Why is one clause: what on the host would run it.
	Why string
}

// The rules. Each protected name below points at one of them.
var (
	ShellStartup  = Rule{Name: "shell start-up file", Why: "a shell on the host runs it when it starts"}
	GitConfigFile = Rule{Name: "git configuration file", Why: "git on the host reads URLs, programs and hook paths from it"}
	ToolConfig    = Rule{Name: "tool configuration", Why: "a tool on the host reads its options from it"}
	MCPServers    = Rule{Name: "MCP server list", Why: "an agent on the host starts the servers it lists"}
	EditorConfig  = Rule{Name: "editor configuration", Why: "an editor on the host runs the tasks and tools it names when the folder is opened"}
	AgentConfig   = Rule{Name: "agent configuration", Why: "an agent on the host runs the hooks and commands it defines"}
	Custos        = Rule{Name: "custos settings", Why: "they set the permissions of the next job"}
	GitHooks      = Rule{Name: "git hooks", Why: "git on the host runs them"}
	GitConfig     = Rule{Name: "git config", Why: "it can name programs git on the host runs (core.hooksPath, core.fsmonitor, aliases)"}
	GitPointer    = Rule{Name: "git directory pointer", Why: "it tells git on the host which repository, hooks and config to use"}
	GitMetadata   = Rule{Name: "git metadata", Why: "git manages it; change it with git commands"}
)

// Name is one protected file or directory name and its rule.
type Name struct {
	Name string
	Rule *Rule
}

// Files are file names protected wherever they appear in the
// workspace: at least what Anthropic's sandbox-runtime protects by default
// (its DANGEROUS_FILES), plus the other start-up files of bash and zsh.
var Files = []Name{
	{".bashrc", &ShellStartup}, {".bash_profile", &ShellStartup}, {".bash_login", &ShellStartup},
	{".bash_logout", &ShellStartup}, {".profile", &ShellStartup},
	{".zshrc", &ShellStartup}, {".zshenv", &ShellStartup}, {".zprofile", &ShellStartup},
	{".zlogin", &ShellStartup}, {".zlogout", &ShellStartup},
	{".gitconfig", &GitConfigFile}, {".gitmodules", &GitConfigFile},
	{".ripgreprc", &ToolConfig},
	{".mcp.json", &MCPServers}, {".claude.json", &MCPServers},
}

// Dirs are directory names protected, with everything below them,
// wherever they appear: editor and agent configuration that runs commands
// when a folder is opened or an agent starts there (sandbox-runtime protects
// .vscode, .idea and parts of .claude; all of .claude holds hooks too), and
// custos' own settings.
var Dirs = []Name{
	{".vscode", &EditorConfig}, {".idea", &EditorConfig}, {".zed", &EditorConfig},
	{".devcontainer", &EditorConfig},
	{".claude", &AgentConfig}, {".cursor", &AgentConfig}, {".codex", &AgentConfig},
	{".gemini", &AgentConfig},
	{".custos", &Custos},
}

// GitDir is the entry git looks for: a repository directory, or a
// "gitdir:" pointer file (linked worktrees, submodules).
const GitDir = ".git"

// By reports whether rel (relative to the workspace, any spelling:
// "./", "..", either slash) is protected, and by which rule. Matching ignores
// case, because on case-insensitive file systems .GIT/config is .git/config.
// It is lexical and pure, so workflow code may call it:
//   - any path component named like a protected file or directory;
//   - any path through a .git component, in any repository of the workspace
//     (nested ones and submodules included): the file tools have no business
//     there, and hooks, config and pointers are named for what they do.
func By(rel string) (Rule, bool) {
	r := strings.ToLower(filepath.ToSlash(filepath.Clean(rel)))
	if r == "." || r == ".." || strings.HasPrefix(r, "../") || strings.HasPrefix(r, "/") {
		return Rule{}, false
	}
	comps := strings.Split(r, "/")
	for i, c := range comps {
		if c == GitDir {
			return gitRule(comps[i+1:]), true
		}
		if rule := lookup(Dirs, c); rule != nil {
			return *rule, true
		}
		if rule := lookup(Files, c); rule != nil {
			return *rule, true
		}
	}
	return Rule{}, false
}

// gitRule names the rule for a path inside a git directory, given the
// components after ".git".
func gitRule(rest []string) Rule {
	if len(rest) == 0 {
		return GitPointer
	}
	for _, c := range rest {
		switch {
		case c == "hooks":
			return GitHooks
		case strings.HasPrefix(c, "config"):
			return GitConfig
		case c == "commondir" || c == "gitdir":
			return GitPointer
		}
	}
	return GitMetadata
}

// Lookup is the rule of one path component (lower case), if it is a
// protected directory or file name; .git is GitDir's, see By.
func Lookup(name string) *Rule {
	if r := lookup(Dirs, name); r != nil {
		return r
	}
	return lookup(Files, name)
}

func lookup(list []Name, name string) *Rule {
	for _, p := range list {
		if p.Name == name {
			return p.Rule
		}
	}
	return nil
}

// Reason is the sentence a refusal shows: the path, the rule and why.
func Reason(path string, rule Rule) string {
	return fmt.Sprintf("%s is protected (%s: %s); tools and commands cannot change it", path, rule.Name, rule.Why)
}

// Summary lists the protected paths for the tool descriptions, in
// a fixed order with fixed bytes.
func Summary() string {
	names := func(list []Name, suffix string) string {
		out := make([]string, len(list))
		for i, p := range list {
			out[i] = p.Name + suffix
		}
		return strings.Join(out, ", ")
	}
	return "Protected paths are read-only (the host runs what they name): " +
		"git hooks and config in every repository (.git/hooks, .git/config, the files that config includes through [include] and [includeIf], " +
		"the directory core.hooksPath names, a .git pointer file; " +
		"Write and Edit leave all of .git/ to git commands), " +
		names(Dirs, "/") + ", " + names(Files, "") + "."
}
