package sandbox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/sandbox/probecache"
)

// A passed probe serves the next process with the same bubblewrap,
// executable, kernel boot and user, and only that: whatever it depended
// on changed, or the file is old, or not the user's alone, or a Run
// failed since, the next process probes again. The sandbox of a process
// that took the earlier probe still masks what the rules deny.
func TestProbeCache(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "state", "sandbox-probe.json")
	why := func() string {
		_, w := newBwrap(t, Config{ProbeCache: cache}).Backend()
		return w
	}
	require.NotContains(t, why(), "an earlier process's", "nothing recorded yet: it probes")
	require.FileExists(t, cache)
	fi, err := os.Stat(cache)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "owner-only")

	sb := newBwrap(t, Config{ProbeCache: cache})
	_, w := sb.Backend()
	assert.Contains(t, w, "an earlier process's", "the recorded probe serves")
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "secret"), "s3cret")
	res, err := sb.Run(t.Context(), Request{Workspace: ws, Argv: []string{"cat", "secret"}, ReadDeny: []string{"secret"}})
	require.NoError(t, err)
	assert.NotContains(t, res.Stdout, "s3cret", "the masks hold in a process that did not probe")

	edit := func(f func(*probecache.Record)) { editRecord(t, cache, f) }
	for _, tc := range []struct {
		name   string
		change func()
	}{
		{"another boot", func() { edit(func(r *probecache.Record) { r.Key.Boot = "another" }) }},
		{"another bubblewrap", func() { edit(func(r *probecache.Record) { r.Key.Bwrap += "0" }) }},
		{"another executable", func() { edit(func(r *probecache.Record) { r.Key.Exe += "0" }) }},
		{"older than the TTL", func() { edit(func(r *probecache.Record) { r.At = time.Now().Add(-probecache.TTL - time.Minute) }) }},
		{"written by others too", func() { require.NoError(t, os.Chmod(cache, 0o622)) }},
		{"torn", func() { require.NoError(t, os.WriteFile(cache, []byte(`{"key":`), 0o600)) }},
		{"a failed run since", func() {
			_, err := sb.Run(t.Context(), Request{Workspace: filepath.Join(ws, "missing"), Argv: []string{"true"}})
			require.Error(t, err)
			assert.NoFileExists(t, cache, "a failed run removes it")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, why(), "an earlier process's", "recorded again before the change")
			tc.change()
			assert.NotContains(t, why(), "an earlier process's", "it probes again")
			assert.Contains(t, why(), "an earlier process's", "and records the new probe")
		})
	}
}

// editRecord rewrites the JSON record at path (readRecord's) through f,
// and leaves it owner-only.
func editRecord[T any](t *testing.T, path string, f func(*T)) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var r T
	require.NoError(t, json.Unmarshal(b, &r))
	f(&r)
	b, err = json.Marshal(r)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o600))
	require.NoError(t, os.Chmod(path, 0o600))
}
