package activities

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/protected"
)

// toolDef is one tool as the model sees it. Schemas are literal JSON so the
// request bytes are the same on every call (and every replay).
type toolDef struct {
	name, description, schema string
}

// protectedNote is the one list of protected paths (protected.By), as
// Write, Edit and Bash describe it: the same paths the path guard, the
// system hook and the sandbox refuse.
var protectedNote = protected.Summary()

var toolDefs = []toolDef{
	{
		name: ReadActivity,
		description: `Reads a text file from the workspace and returns its lines numbered like "cat -n" (line number, tab, line).
- file_path is relative to the workspace root (an absolute path must lie inside the workspace).
- By default up to 2000 lines are returned from the start; for long files pass offset (1-based line number) and limit (number of lines) to read a window.
- Lines longer than 2000 characters are cut. Binary files and directories are refused; use Glob to list a directory.
- Read a file before editing it: Edit needs the exact text, and the line-number prefix is not part of the file.
- Several independent reads can be requested in one turn; they run in parallel.`,
		schema: `{"type":"object","properties":{"file_path":{"type":"string","description":"Path of the file, relative to the workspace root"},"offset":{"type":"integer","minimum":1,"description":"1-based line number to start reading from"},"limit":{"type":"integer","minimum":1,"description":"Number of lines to read (default 2000)"}},"required":["file_path"],"additionalProperties":false}`,
	},
	{
		name: GlobActivity,
		description: `Finds files by name pattern, fastest way to locate files in any size of codebase.
- Supports glob patterns like "**/*.go", "src/**/*.{ts,tsx}", "cmd/*/main.go". "*" stays within a directory, "**" spans directories (including none).
- Matches paths relative to path (default: the workspace root); results are relative to the workspace, most recently modified first, at most 1000.
- .git is skipped and symlinked directories are not followed.
- To search file contents, use Grep.`,
		schema: `{"type":"object","properties":{"pattern":{"type":"string","description":"Glob pattern to match file paths against"},"path":{"type":"string","description":"Directory to search in, relative to the workspace root (default: the root)"}},"required":["pattern"],"additionalProperties":false}`,
	},
	{
		name: GrepActivity,
		description: `Searches file contents with a regular expression (Go RE2 syntax: no lookaround or backreferences; escape literal braces and dots, e.g. "interface\\{\\}" or "os\\.Exit").
- output_mode "files_with_matches" (default) lists matching files; "content" shows matching lines as path:line:text with optional context lines; "count" gives matches per file.
- Narrow the search with path (a directory or a single file) and glob (e.g. "*.go", "**/*_test.go"; without a "/" it matches file names).
- "-i" makes the search case-insensitive; "-n" (default true) shows line numbers in content mode; context shows that many lines before and after each match.
- Files are searched in path order; .git, binary files and files over 10 MiB are skipped.
- Prefer Grep over running grep or rg through Bash.`,
		schema: `{"type":"object","properties":{"pattern":{"type":"string","description":"Regular expression (RE2) to search for"},"path":{"type":"string","description":"File or directory to search, relative to the workspace root (default: the root)"},"glob":{"type":"string","description":"Only search files matching this glob, e.g. \"*.go\""},"output_mode":{"type":"string","enum":["content","files_with_matches","count"],"description":"What to return (default files_with_matches)"},"-i":{"type":"boolean","description":"Case-insensitive search"},"-n":{"type":"boolean","description":"Show line numbers in content mode (default true)"},"context":{"type":"integer","minimum":0,"maximum":20,"description":"Lines of context before and after each match (content mode)"}},"required":["pattern"],"additionalProperties":false}`,
	},
	{
		name: WriteActivity,
		description: `Writes a file in the workspace, creating parent directories as needed and replacing the file if it exists (atomically; its permissions are kept).
- Use it to create new files or to rewrite a file completely. For changes to part of an existing file, prefer Edit: it sends only the change.
- If the file exists, Read it first so you do not lose content you have not seen.
- ` + protectedNote,
		schema: `{"type":"object","properties":{"file_path":{"type":"string","description":"Path of the file, relative to the workspace root"},"content":{"type":"string","description":"The complete new content of the file"}},"required":["file_path","content"],"additionalProperties":false}`,
	},
	{
		name: EditActivity,
		description: `Replaces an exact string in an existing file.
- old_string must match the file exactly, including whitespace and indentation (copy it from Read output, without the line-number prefix), and must occur exactly once; include a few surrounding lines to make it unique.
- Set replace_all to replace every occurrence instead (e.g. to rename a variable).
- new_string must differ from old_string; an empty new_string deletes old_string.
- The result shows the edited lines. Several edits to different files can be requested in one turn.
- ` + protectedNote,
		schema: `{"type":"object","properties":{"file_path":{"type":"string","description":"Path of the file, relative to the workspace root"},"old_string":{"type":"string","description":"The exact text to replace"},"new_string":{"type":"string","description":"The text to put in its place"},"replace_all":{"type":"boolean","description":"Replace every occurrence of old_string (default false)"}},"required":["file_path","old_string","new_string"],"additionalProperties":false}`,
	},
	{
		name: BashActivity,
		description: `Runs a command with "bash -c" in the workspace directory, inside a sandbox, and returns its stdout, stderr and exit code.
- Use it for builds, tests, git and other programs. To read, find or search files, use Read, Glob and Grep instead of cat, find or grep.
- Each call is a fresh shell: cd, variables and aliases do not carry over; chain dependent steps with && in one command.
- timeout is in milliseconds (default 120000, at most 600000); a command that runs longer is killed.
- Network access is limited to the allowed domains; writes outside the workspace do not persist.
- Output is capped; long output keeps its beginning and its end. Commands run one at a time, after approval.
- Give a short description of what the command does (5-10 words).
- ` + protectedNote + ` Inside Bash a missing one shows as an empty read-only directory, so it cannot be created.`,
		schema: `{"type":"object","properties":{"command":{"type":"string","description":"The command to run"},"timeout":{"type":"integer","minimum":1,"maximum":600000,"description":"Timeout in milliseconds (default 120000)"},"description":{"type":"string","description":"What the command does, in 5-10 words"}},"required":["command"],"additionalProperties":false}`,
	},
}

// ToolDefinitions returns the six tools as OpenAI function tools, in a fixed
// order with fixed bytes.
func ToolDefinitions() []openai.Tool {
	out := make([]openai.Tool, 0, len(toolDefs))
	for _, d := range toolDefs {
		out = append(out, openai.Tool{
			Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{
				Name:        d.name,
				Description: d.description,
				Parameters:  json.RawMessage(d.schema),
			},
		})
	}
	return out
}

// ToolNames are the tools' names, in the order the model is offered them.
func ToolNames() []string {
	names := make([]string, len(toolDefs))
	for i, d := range toolDefs {
		names[i] = d.name
	}
	return names
}

// KnownTool reports whether name is one of the six tools.
func KnownTool(name string) bool {
	for _, d := range toolDefs {
		if d.name == name {
			return true
		}
	}
	return false
}

// maxSummary bounds Summarize's answer, in runes.
const maxSummary = 100

// Summarize gives a one-line human summary of a tool call ("Read README.md",
// "Bash: go test ./...") for activity summaries and the terminal. It never
// fails: malformed input is summarized as such.
func Summarize(tool string, input json.RawMessage) string {
	var args map[string]any
	if err := json.Unmarshal(input, &args); err != nil || args == nil {
		return clip(tool + " (invalid arguments)")
	}
	str := func(k string) string {
		s, _ := args[k].(string)
		return s
	}
	var s string
	switch tool {
	case ReadActivity:
		s = "Read " + str("file_path")
		if off, ok := args["offset"].(float64); ok && off > 1 {
			s += fmt.Sprintf(" from line %d", int(off))
		}
	case GlobActivity:
		s = "Glob " + str("pattern")
		if p := str("path"); p != "" {
			s += " in " + p
		}
	case GrepActivity:
		s = fmt.Sprintf("Grep %q", str("pattern"))
		if p := str("path"); p != "" {
			s += " in " + p
		}
		if g := str("glob"); g != "" {
			s += " (" + g + ")"
		}
	case WriteActivity:
		s = "Write " + str("file_path")
	case EditActivity:
		s = "Edit " + str("file_path")
		if b, _ := args["replace_all"].(bool); b {
			s += " (replace all)"
		}
	case BashActivity:
		s = "Bash: " + str("command")
	default:
		compact, _ := json.Marshal(args) // map keys are sorted: deterministic
		s = tool + " " + string(compact)
	}
	return clip(s)
}

// clip makes s one line of at most maxSummary runes.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= maxSummary {
		return s
	}
	r := []rune(s)
	return string(r[:maxSummary-1]) + "…"
}
