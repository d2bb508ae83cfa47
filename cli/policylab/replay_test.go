package policylab_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/policyreplay"
	"github.com/custos-dev/custos/settingsfile"
)

// The fixture of package policyreplay: two jobs of /srv/app, a user config
// that trusts it, and proposed settings that allow two denied commands.
const (
	fixtureState    = "../../policyreplay/testdata/state"
	fixtureConfig   = "../../policyreplay/testdata/config"
	fixtureProposed = "../../policyreplay/testdata/proposed.json"
)

// policy replay's exit status gates a settings change: 1 when a past
// denial would now be allowed, 0 when not, 2 when the replay cannot run
// (bad flags, a broken settings file, an audit line that is not a record);
// errors name what is wrong and print nothing on stdout.
func TestPolicyReplayExitStatus(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	narrower := write("narrower.json", `{"permissions": {"deny": ["Bash(npm:*)"]}}`)
	broken := write("broken.json", `{"permissions": {"allow": [}`)
	typo := write("typo.json", `{"permissions": {"alow": ["Bash(*)"]}}`)
	badState := filepath.Join(dir, "state")
	require.NoError(t, os.MkdirAll(filepath.Join(badState, "workspaces", "x-1", "audit"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(badState, "workspaces", "x-1", "workspace"), []byte("/srv/x\n"), 0o600))
	badAudit := filepath.Join(badState, "workspaces", "x-1", "audit", "job-x.jsonl")
	require.NoError(t, os.WriteFile(badAudit, []byte(`{"seq":1,"jobId":"job-x"}`+"\n"+`{"seq":2,`+"\n"), 0o600))

	base := []string{"policy", "replay", "--state-dir", fixtureState, "--config-dir", fixtureConfig}
	for _, tc := range []struct {
		name      string
		args      []string
		code      int
		stdoutHas string
		stderrHas []string
	}{
		{name: "a past denial allowed", code: 1, args: append(base, "--settings", fixtureProposed),
			stdoutHas: "DENIED THEN, ALLOWED NOW WITHOUT ASKING", stderrHas: []string{"allow calls that were denied: 2"}},
		{name: "nothing denied is allowed", code: 0, args: append(base, "--settings", narrower),
			stdoutHas: "A PERSON ALLOWED IT THEN, DENIED NOW"},
		{name: "one job", code: 0, args: append(base, "--settings", fixtureProposed, "--job", "job-a", "--since", "2026-11-30T09:30:00Z"),
			stdoutHas: "replayed 4 calls of 1 jobs"},
		{name: "broken proposed settings", code: 2, args: append(base, "--settings", broken),
			stderrHas: []string{"proposed settings " + broken, "invalid JSON"}},
		{name: "unknown permissions key", code: 2, args: append(base, "--settings", typo),
			stderrHas: []string{typo, "alow"}},
		{name: "no proposed file", code: 2, args: append(base, "--settings", filepath.Join(dir, "missing.json")),
			stderrHas: []string{"missing.json"}},
		{name: "an unreadable audit line", code: 2,
			args:      []string{"policy", "replay", "--state-dir", badState, "--config-dir", fixtureConfig, "--settings", narrower},
			stderrHas: []string{badAudit + " line 2 is not an audit record"}},
		{name: "--settings missing", code: 2, args: base, stderrHas: []string{"--settings NEW.json is required"}},
		{name: "bad --since", code: 2, args: append(base, "--settings", narrower, "--since", "last week"),
			stderrHas: []string{`"last week"`}},
		{name: "an untrusted workspace takes the proposal only to narrow", code: 0,
			args:      []string{"policy", "replay", "--state-dir", fixtureState, "--config-dir", dir, "--settings", fixtureProposed},
			stdoutHas: "replayed 14 calls", stderrHas: []string{"/srv/app is not a trusted workspace", "starter trust /srv/app"}},
		{name: "bad --as", code: 2, args: append(base, "--settings", narrower, "--as", "team"), stderrHas: []string{`--as "team"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runApp(t, context.Background(), tc.args...)
			assert.Equal(t, tc.code, code, "stdout %q stderr %q", out, errOut)
			if tc.code == 2 {
				assert.Empty(t, out, "nothing on stdout when the replay cannot run")
			}
			assert.Contains(t, out, tc.stdoutHas)
			for _, s := range tc.stderrHas {
				assert.Contains(t, errOut, s)
			}
		})
	}
}

// --json is the report policyreplay pins in its golden file.
func TestPolicyReplayJSON(t *testing.T) {
	t.Setenv("HOME", "/home/dev") // the home assumed for the fixture's older job
	code, out, errOut := runApp(t, context.Background(), "policy", "replay", "--state-dir", fixtureState,
		"--config-dir", fixtureConfig, "--settings", fixtureProposed, "--json")
	require.Equal(t, 1, code, errOut)
	var rep policyreplay.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, 2, rep.DeniedNowAllowed())
	want, err := os.ReadFile("../../policyreplay/testdata/replay.golden.json")
	require.NoError(t, err)
	assert.JSONEq(t, string(want), out)
}

// audit stats reads the same files; --json decodes to policyreplay.Stats.
func TestAuditStats(t *testing.T) {
	code, out, errOut := runApp(t, context.Background(), "audit", "stats", "--state-dir", fixtureState, "--config-dir", fixtureConfig, "--json")
	require.Equal(t, 0, code, errOut)
	var st policyreplay.Stats
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	assert.Equal(t, 8, st.Prompts)
	assert.Equal(t, 1, st.Timeouts)
	require.NotEmpty(t, st.AlwaysApproved)
	assert.Equal(t, "Bash(npm test)", st.AlwaysApproved[0].Rule)

	code, out, errOut = runApp(t, context.Background(), "audit", "stats", "--state-dir", fixtureState, "--config-dir", fixtureConfig)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "wait for a person (7 answers): median 2.5s, p99 30s")
}

// policy suggest --write adds the rule through the code an Always answer
// uses, to the settings.local.json of the workspace whose calls it covers;
// a replay afterwards with those settings allows the approvals.
func TestPolicySuggestWrite(t *testing.T) {
	ws := testenv.Workspace(t)
	state := t.TempDir()
	dir := filepath.Join(state, "workspaces", "ws-1")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "audit"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workspace"), []byte(ws+"\n"), 0o600))
	for _, name := range []string{"job-a.jsonl", "job-b.jsonl"} {
		data, err := os.ReadFile(filepath.Join(fixtureState, "workspaces", "app-0123456789ab", "audit", name))
		require.NoError(t, err)
		// The records name /srv/app as their workspace; this copy is ws's.
		data = []byte(strings.ReplaceAll(string(data), "/srv/app", ws))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "audit", name), data, 0o600))
	}
	config := t.TempDir()

	code, out, errOut := runApp(t, context.Background(), "policy", "suggest", "--state-dir", state, "--config-dir", config, "--min", "3")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "\n  Bash(npm test)\n    would have allowed 4 approvals without asking:")
	assert.NoFileExists(t, filepath.Join(ws, ".custos", "settings.local.json"), "nothing written without --write")

	code, _, errOut = runApp(t, context.Background(), "policy", "suggest", "--state-dir", state, "--config-dir", config, "--write", "workspace", "--rule", "Bash(rm:*)")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "Bash(rm:*) is not among the suggested rules")

	code, _, errOut = runApp(t, context.Background(), "policy", "suggest", "--state-dir", state, "--config-dir", config, "--write", "workspace")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "added allow rule Bash(npm test) to "+ws)
	assert.Contains(t, errOut, "not a trusted workspace", "an untrusted workspace's allow rules do not apply: said")
	code, _, errOut = runApp(t, context.Background(), "trust", ws, "--config-dir", config)
	require.Equal(t, 0, code, errOut)
	loaded, err := settingsfile.Load(config, ws)
	require.NoError(t, err)
	assert.Equal(t, []string{"Bash(npm test)"}, loaded.Settings.Permissions.Allow)

	code, out, errOut = runApp(t, context.Background(), "policy", "suggest", "--state-dir", state, "--config-dir", config, "--write", "user")
	require.Equal(t, 0, code, errOut+out)
	user, err := os.ReadFile(settingsfile.UserFile(config))
	require.NoError(t, err)
	assert.Contains(t, string(user), `"Bash(npm test)"`)
}
