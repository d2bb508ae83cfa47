package mcpservers

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEditorServersRoundTripOwnerOnly(t *testing.T) {
	state := t.TempDir()
	srv, err := EditorServer("job-1", EditorEntry{Name: "mem", Command: "npx", Args: []string{"-y", "x"}, Env: map[string]string{"TOKEN": "${HOME}-s3cret"}})
	require.NoError(t, err)
	require.NoError(t, WriteEditorServers(state, "job-1", []Server{srv}))
	fi, err := os.Stat(EditorFile(state, "job-1"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the entries hold secrets")
	di, err := os.Stat(filepath.Dir(EditorFile(state, "job-1")))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())

	got, found, err := LoadEditorServers(state, "job-1")
	require.NoError(t, err)
	require.True(t, found)
	require.Len(t, got, 1)
	assert.Equal(t, SourceEditor, got[0].Source)
	assert.Equal(t, "job-1", got[0].Job)
	assert.False(t, got[0].Trusted)
	exp, err := got[0].expanded()
	require.NoError(t, err)
	assert.Equal(t, "${HOME}-s3cret", exp.Env["TOKEN"], "an editor's value is taken as it is, never expanded from the worker's environment")

	_, found, err = LoadEditorServers(state, "job-2")
	require.NoError(t, err)
	assert.False(t, found, "another job has none")

	require.NoError(t, RemoveEditorServers(state, "job-1"))
	_, found, err = LoadEditorServers(state, "job-1")
	require.NoError(t, err)
	assert.False(t, found)
	require.NoError(t, RemoveEditorServers(state, "job-1"), "removing twice is no error")
}

func TestEditorServerRefusesMalformedEntries(t *testing.T) {
	for name, e := range map[string]EditorEntry{
		"bad name":       {Name: "a b", Command: "x"},
		"no command":     {Name: "a", Type: "stdio"},
		"sse":            {Name: "a", Type: "sse", URL: "http://h/"},
		"http with env":  {Name: "a", Type: "http", URL: "http://h/", Env: map[string]string{"A": "b"}},
		"stdio with url": {Name: "a", Command: "x", URL: "http://h/"},
	} {
		_, err := EditorServer("j", e)
		assert.Error(t, err, name)
	}
	s, err := EditorServer("j", EditorEntry{Name: "web", Type: "http", URL: "https://h/mcp", Headers: map[string]string{"Authorization": "Bearer t"}})
	require.NoError(t, err)
	assert.Equal(t, "http", s.Type)
}

func TestEditorServerDoesNotShadowTheSettings(t *testing.T) {
	settings := Config{Servers: []Server{{Name: "mem", Source: SourceUser}}}
	ed := []Server{{Name: "mem", Source: SourceEditor, Job: "j"}, {Name: "other", Source: SourceEditor, Job: "j"}}
	got := withEditor(settings, ed)
	require.Len(t, got.Servers, 2)
	assert.Equal(t, SourceUser, got.Servers[0].Source, "the settings' server of that name wins")
	assert.Equal(t, "other", got.Servers[1].Name)
	require.Len(t, got.Notes, 1)
	assert.Contains(t, got.Notes[0], `the editor's MCP server "mem" is not used`)
	assert.Len(t, settings.Servers, 1, "the cached Config is not changed")
	assert.NotEqual(t, ed[1].poolName(), "other", "a job's server is its own in the pool")
}
