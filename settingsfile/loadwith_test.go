package settingsfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// LoadWith merges as Load does, with the given content in place of a
// file: trust and the untrusted workspace's narrowing apply to it too.
func TestLoadWithGivenContent(t *testing.T) {
	cfg, ws := t.TempDir(), t.TempDir()
	project := filepath.Join(ws, ".custos", "settings.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(project), 0o755))
	require.NoError(t, os.WriteFile(project, []byte(`{"permissions": {"allow": ["Bash(on:disk)"]}}`), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(cfg, "custos"), 0o755))
	require.NoError(t, os.WriteFile(UserFile(cfg), []byte(`{"permissions": {"deny": ["Bash(git push:*)"]}}`), 0o644))
	proposed := []byte(`{"permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(.env)"]}}`)

	for _, tc := range []struct {
		name      string
		trust     bool
		given     map[string][]byte
		allow     []string
		deny      []string
		errorHas  string
		ignoredIn string
	}{
		{name: "read from disk", trust: true, allow: []string{"Bash(on:disk)"}, deny: []string{"Bash(git push:*)"}},
		{name: "the proposal in place of the project file", trust: true, given: map[string][]byte{project: proposed},
			allow: []string{"Bash(npm test:*)"}, deny: []string{"Bash(git push:*)", "Read(.env)"}},
		{name: "untrusted: the proposal only narrows", given: map[string][]byte{project: proposed},
			deny: []string{"Bash(git push:*)", "Read(.env)"}, ignoredIn: project},
		{name: "nil content is a missing file", trust: true, given: map[string][]byte{project: nil}, deny: []string{"Bash(git push:*)"}},
		{name: "a given user file's trust counts", given: map[string][]byte{
			UserFile(cfg): []byte(`{"trustedWorkspaces": ["` + ws + `"]}`), project: proposed},
			allow: []string{"Bash(npm test:*)"}, deny: []string{"Read(.env)"}},
		{name: "a broken proposal names its place", trust: true, given: map[string][]byte{project: []byte(`{`)}, errorHas: project},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			if tc.trust {
				c = t.TempDir()
				require.NoError(t, os.MkdirAll(filepath.Join(c, "custos"), 0o755))
				require.NoError(t, os.WriteFile(UserFile(c), []byte(`{"trustedWorkspaces": ["`+ws+`"], "permissions": {"deny": ["Bash(git push:*)"]}}`), 0o644))
			}
			l, err := LoadWith(c, ws, tc.given)
			if tc.errorHas != "" {
				require.ErrorContains(t, err, tc.errorHas)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.allow, l.Settings.Permissions.Allow)
			assert.Equal(t, tc.deny, l.Settings.Permissions.Deny)
			if tc.ignoredIn != "" {
				require.NotEmpty(t, l.Ignored)
				assert.Contains(t, l.Ignored[0], tc.ignoredIn)
			}
		})
	}
}

// AddUserRule adds to the user's file, keeping what else it holds, once.
func TestAddUserRule(t *testing.T) {
	cfg := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(cfg, "custos"), 0o755))
	require.NoError(t, os.WriteFile(UserFile(cfg), []byte(`{"trustedWorkspaces": ["/srv/app"], "permissions": {"deny": ["Bash(git push:*)"]}}`), 0o644))
	require.NoError(t, AddUserRule(cfg, "allow", "Bash(npm test)"))
	require.NoError(t, AddUserRule(cfg, "allow", "Bash(npm test)"))
	l, err := Load(cfg, "/srv/app")
	require.NoError(t, err)
	assert.Equal(t, []string{"Bash(npm test)"}, l.Settings.Permissions.Allow)
	assert.Equal(t, []string{"Bash(git push:*)"}, l.Settings.Permissions.Deny)
	assert.True(t, l.Trusted, "trustedWorkspaces kept")

	require.ErrorContains(t, AddUserRule(cfg, "allow", "Bash("), "malformed rule")
	require.Error(t, AddUserRule("", "allow", "Bash(ls)"))
}
