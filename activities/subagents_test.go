package activities

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/settingsfile"
)

func TestParseSubagent(t *testing.T) {
	a, err := ParseSubagent("---\nname: reviewer\ndescription: \"Reviews code\"\ntools: Read, Grep, mcp__gh__search\nmode: plan\nmodel: sonnet\n---\n\nBe thorough.\n")
	require.NoError(t, err)
	assert.Equal(t, "reviewer", a.Name)
	assert.Equal(t, "Reviews code", a.Description)
	assert.Equal(t, []string{"Read", "Grep", "mcp__gh__search"}, a.Tools)
	assert.Equal(t, "plan", a.Mode)
	assert.Equal(t, "Be thorough.", a.Instructions)

	a, err = ParseSubagent("---\nname: lister\ndescription: d\ntools:\n  - Read\n  - Glob\n---\nx")
	require.NoError(t, err)
	assert.Equal(t, []string{"Read", "Glob"}, a.Tools)
	a, err = ParseSubagent("---\nname: all\ndescription: d\n---\n")
	require.NoError(t, err)
	assert.Nil(t, a.Tools, "no tools key: every tool of the parent")

	for text, want := range map[string]string{
		"name: x\n":                               "no front matter",
		"---\nname: x\ndescription: d\n":          "does not end",
		"---\nname: X Y\ndescription: d\n---\n":   "name",
		"---\nname: x\n---\n":                     "no description",
		"---\nname: x\ndescription: d\nnope\n---": "want key: value",
	} {
		_, err := ParseSubagent(text)
		assert.ErrorContains(t, err, want, text)
	}
}

// A trusted workspace's definition replaces the user's of the same name;
// an untrusted workspace's are not read, and that is said.
func TestLoadSubagentsTrust(t *testing.T) {
	user, ws := t.TempDir(), t.TempDir()
	write := func(dir, name, desc string) {
		require.NoError(t, os.MkdirAll(dir, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".md"), []byte("---\nname: "+name+"\ndescription: "+desc+"\n---\n"), 0o600))
	}
	write(filepath.Join(user, "custos", "agents"), "rev", "user's")
	write(filepath.Join(ws, ".custos", "agents"), "rev", "workspace's")
	write(filepath.Join(ws, ".custos", "agents"), "other", "more")
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".custos", "agents", "bad.md"), []byte("nothing"), 0o600))
	got, notes := loadSubagents(user, ws, true, approval.Settings{})
	require.Len(t, got, 2)
	assert.Equal(t, "other", got[0].Name)
	assert.Equal(t, "workspace's", got[1].Description)
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "bad.md: skipped: no front matter")
	got, notes = loadSubagents(user, ws, false, approval.Settings{})
	require.Len(t, got, 1)
	assert.Equal(t, "user's", got[0].Description)
	assert.Contains(t, notes[0], "not trusted")
}

// A definition's mode custos cannot read skips the file (a typo of plan
// must not run the child in its parent's mode); a definition in bypass is
// not offered, with a note, when the settings disable bypass.
func TestSubagentModeChecked(t *testing.T) {
	_, err := ParseSubagent("---\nname: r\ndescription: d\nmode: plna\n---\n")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown permission mode "plna"`)

	cfg, ws := t.TempDir(), t.TempDir()
	agents := filepath.Join(cfg, "custos", "agents")
	require.NoError(t, os.MkdirAll(agents, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(agents, "wide.md"), []byte("---\nname: wide\ndescription: d\npermissionMode: bypassPermissions\n---\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(agents, "narrow.md"), []byte("---\nname: narrow\ndescription: d\nmode: plan\n---\n"), 0o644))
	load := func() ([]string, []string) {
		res, err := (&Settings{UserConfigDir: cfg, StateDir: t.TempDir()}).LoadSettings(context.Background(), api.LoadSettingsRequest{Workspace: ws})
		require.NoError(t, err)
		var names []string
		for _, a := range res.Subagents {
			names = append(names, a.Name+":"+a.Mode)
		}
		return names, res.SubagentNotes
	}
	names, notes := load()
	assert.Equal(t, []string{"narrow:plan", "wide:bypassPermissions"}, names)
	assert.Empty(t, notes)
	require.NoError(t, os.WriteFile(settingsfile.UserFile(cfg), []byte(`{"permissions": {"disableBypassPermissionsMode": "disable"}}`), 0o644))
	names, notes = load()
	assert.Equal(t, []string{"narrow:plan"}, names)
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "wide.md: skipped: bypass mode is disabled")
}
