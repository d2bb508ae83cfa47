package policyreplay

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
)

// Statistics over the fixture audit: prompts, who answered, waits,
// timeouts, rules, unused rules and the always-approved asks, pinned.
func TestStatsOverFixtureAudit(t *testing.T) {
	jobs, err := FromStateDir("testdata/state", Filter{})
	require.NoError(t, err)
	current := func(string) (approval.Settings, error) {
		return approval.Settings{Permissions: approval.Permissions{
			Allow: []string{"Edit(src/**)", "Bash(ls:*)"}, Deny: []string{"Bash(git push:*)"}}}, nil
	}
	st, err := Summarise(jobs, current)
	require.NoError(t, err)

	assert.Equal(t, 14, st.Calls)
	assert.Equal(t, 8, st.Prompts, "rm, npm test x3, curl, Write, make, npm test")
	assert.Equal(t, 1, st.Timeouts)
	assert.Equal(t, WaitStats{Answered: 7, MedianMs: 2500, P99Ms: 30000}, st.Wait)
	assert.Equal(t, []Share{{ByPeople, 7, 50}, {ByRules, 3, 21.4}, {ByReadOnly, 1, 7.1}, {ByModes, 1, 7.1},
		{ByTimers, 1, 7.1}, {ByRefused, 1, 7.1}}, st.AnsweredBy)
	assert.Equal(t, []WsRule{{"/srv/app", "allow", "Bash(ls:*)"}}, st.UnusedRules, "Edit(src/**) and the deny rule decided")
	assert.Equal(t, []AskCount{{Rule: "Bash(npm test)", Count: 4, Approvers: []string{"alice", "bob", "carol"}}}, st.AlwaysApproved,
		"rm -rf build and make were denied once; the Write only once")
	assert.Equal(t, "Bash(git push:*)", st.TopRules[0].Rule)

	var text bytes.Buffer
	require.NoError(t, WriteStats(&text, st))
	golden(t, "stats.golden.txt", text.Bytes())
	js, err := json.MarshalIndent(st, "", "  ")
	require.NoError(t, err)
	golden(t, "stats.golden.json", append(js, '\n'))
}
