package activities

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
)

// Subagents defined as files, in Claude Code's format: a markdown file
// whose YAML front matter names the subagent, describes it and lists its
// tools (and optionally a permission mode), and whose body is added to the
// child's system prompt. The user's are in ~/.config/custos/agents, a
// trusted workspace's in .custos/agents (an untrusted workspace's are not
// read: a file in a repository must not give itself a tool list or mode);
// a workspace's subagent replaces the user's of the same name.

// maxSubagentFile bounds one definition file.
const maxSubagentFile = 64 << 10

var subagentName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// loadSubagents reads the definitions; notes say which files were skipped
// and why (a mode s refuses: bypass under disableBypassPermissionsMode).
func loadSubagents(userConfig, ws string, trusted bool, s approval.Settings) ([]api.Subagent, []string) {
	byName := map[string]api.Subagent{}
	var notes []string
	dirs := []string{}
	if userConfig != "" {
		dirs = append(dirs, filepath.Join(userConfig, "custos", "agents"))
	}
	if trusted {
		dirs = append(dirs, filepath.Join(ws, ".custos", "agents"))
	} else if _, err := os.Stat(filepath.Join(ws, ".custos", "agents")); err == nil {
		notes = append(notes, ".custos/agents: not read, the workspace is not trusted (see: starter trust)")
	}
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.md"))
		slices.Sort(files)
		for _, f := range files {
			a, err := readSubagent(f)
			if m, _ := approval.ParseMode(a.Mode); err == nil {
				err = approval.CheckMode(s, m)
			}
			if err != nil {
				notes = append(notes, fmt.Sprintf("%s: skipped: %v", f, err))
				continue
			}
			byName[a.Name] = a
		}
	}
	out := make([]api.Subagent, 0, len(byName))
	for _, a := range byName {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b api.Subagent) int { return strings.Compare(a.Name, b.Name) })
	return out, notes
}

// readSubagent reads one definition file.
func readSubagent(path string) (api.Subagent, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return api.Subagent{}, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxSubagentFile {
		return api.Subagent{}, fmt.Errorf("not a regular file of at most %d bytes", maxSubagentFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return api.Subagent{}, err
	}
	a, err := ParseSubagent(string(b))
	a.Source = path
	return a, err
}

// ParseSubagent reads a definition: front matter between "---" lines,
// then the instructions.
func ParseSubagent(text string) (api.Subagent, error) {
	text = strings.TrimPrefix(strings.ReplaceAll(text, "\r\n", "\n"), "\ufeff")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return api.Subagent{}, fmt.Errorf("no front matter (the file must begin with a line ---)")
	}
	front, body, ok := strings.Cut(rest, "\n---")
	if !ok {
		return api.Subagent{}, fmt.Errorf("the front matter does not end (a line --- after it)")
	}
	a := api.Subagent{Instructions: strings.TrimSpace(strings.TrimPrefix(body, "\n"))}
	if err := frontMatter(front, &a); err != nil {
		return a, err
	}
	if !subagentName.MatchString(a.Name) {
		return a, fmt.Errorf("name %q: want lowercase letters, digits, - and _ (at most 64)", a.Name)
	}
	if strings.TrimSpace(a.Description) == "" {
		return a, fmt.Errorf("no description (the model chooses a subagent by it)")
	}
	return a, nil
}

// frontMatter reads the keys custos uses; others Claude Code knows (model,
// color) are ignored, and a line that is no "key: value" is an error.
func frontMatter(front string, a *api.Subagent) error {
	lines := strings.Split(front, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			return fmt.Errorf("front matter line %d: want key: value", i+1)
		}
		value = unquote(strings.TrimSpace(value))
		switch strings.TrimSpace(key) {
		case "name":
			a.Name = value
		case "description":
			a.Description = value
		case "mode", "permissionMode":
			// Unreadable is refused, not the parent's mode: a typo of plan
			// must not give the child more.
			if _, err := approval.ParseMode(value); err != nil {
				return fmt.Errorf("mode: %w", err)
			}
			a.Mode = value
		case "tools":
			for value == "" && i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "- ") {
				i++
				a.Tools = append(a.Tools, unquote(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i]), "- "))))
			}
			for _, t := range strings.Split(strings.Trim(value, "[]"), ",") {
				if t = unquote(strings.TrimSpace(t)); t != "" {
					a.Tools = append(a.Tools, t)
				}
			}
			if a.Tools == nil {
				a.Tools = []string{}
			}
		}
	}
	return nil
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}
