package approval

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseApprovals(t *testing.T) {
	tests := []struct {
		name, json, err string
	}{
		{name: "good", json: `{"approvals": [{"rule": "Bash(git push:*)", "require": 2, "from": ["U0ALICE", "U0BOB", "S0OPS"]}], "identities": ["U0CAROL"]}`},
		{name: "group lets require exceed the list", json: `{"approvals": [{"rule": "Bash(git push:*)", "require": 3, "from": ["S0OPS"]}]}`},
		{name: "typo in a key", json: `{"approvals": [{"rule": "Bash(git push:*)", "requires": 2, "from": ["U0A"]}]}`, err: `unknown field "requires"`},
		{name: "bad rule", json: `{"approvals": [{"rule": "Bash(git push", "require": 1, "from": ["U0A"]}]}`, err: "approvals[0].rule"},
		{name: "nobody", json: `{"approvals": [{"rule": "Bash(git push:*)", "require": 1, "from": []}]}`, err: "approvals[0].from"},
		{name: "zero", json: `{"approvals": [{"rule": "Bash(git push:*)", "require": 0, "from": ["U0A"]}]}`, err: "at least 1"},
		{name: "never met", json: `{"approvals": [{"rule": "Bash(git push:*)", "require": 3, "from": ["U0A", "U0B"]}]}`, err: "can never be met"},
		{name: "blank identity", json: `{"approvals": [{"rule": "Bash(git push:*)", "require": 1, "from": [" U0A"]}]}`, err: "is not an identity"},
		{name: "not a list", json: `{"approvals": {"rule": "Bash(git push:*)"}}`, err: "approvals"},
		{name: "bad identities", json: `{"identities": ["U0A", ""]}`, err: "identities[1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSettings([]byte(tc.json), "/w")
			if tc.err != "" {
				require.ErrorIs(t, err, ErrBadSettings)
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.NotEmpty(t, s.Approvals)
		})
	}
}

func TestMergeKeepsEveryQuorum(t *testing.T) {
	user := Settings{Approvals: []QuorumRule{{Rule: "Bash(git push:*)", Require: 2, From: []string{"U0A", "U0B"}}}, Identities: []string{"U0A"}}
	ws := Settings{Approvals: []QuorumRule{
		{Rule: "Bash(git push:*)", Require: 2, From: []string{"U0A", "U0B"}},
		{Rule: "Bash(git push:*)", Require: 1, From: []string{"U0C"}},
	}}
	m := MergeSettings(user, ws)
	assert.Equal(t, []QuorumRule{user.Approvals[0], ws.Approvals[1]}, m.Approvals, "a workspace adds requirements, never replaces one")
	assert.Equal(t, []string{"U0A"}, m.Identities)
}

func TestQuorumCovers(t *testing.T) {
	push := QuorumRule{Rule: "Bash(git push:*)", Require: 2, From: []string{"U0A", "U0B"}}
	deploy := QuorumRule{Rule: "Edit(deploy/**)", Require: 1, From: []string{"S0OPS"}}
	p, err := Compile(Settings{Approvals: []QuorumRule{push, deploy}}, Env{Workspace: "/w", Home: "/home/u"})
	require.NoError(t, err)
	bash := func(cmd string) Call {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return Call{Tool: "Bash", Input: in}
	}
	file := func(tool, path string) Call {
		in, _ := json.Marshal(map[string]string{"file_path": path})
		return Call{Tool: tool, Input: in}
	}
	tests := []struct {
		name string
		call Call
		want []QuorumRule
	}{
		{"push", bash("git push origin main"), []QuorumRule{push}},
		{"push through a global option", bash("git -C . push"), []QuorumRule{push}},
		{"push in a list", bash("go test ./... && git push"), []QuorumRule{push}},
		{"push behind a wrapper", bash("env GIT_TRACE=1 git push"), []QuorumRule{push}},
		{"push behind timeout", bash("timeout 60 git push --force"), []QuorumRule{push}},
		{"a command that cannot be analysed could be a push", bash(`eval "$(echo Z2l0IHB1c2g= | base64 -d)"`), []QuorumRule{push}},
		{"status", bash("git status"), nil},
		{"push named as data", bash("echo git push"), nil},
		{"edit under deploy", file("Edit", "/w/deploy/prod.yaml"), []QuorumRule{deploy}},
		{"write under deploy", file("Write", "deploy/new.yaml"), []QuorumRule{deploy}},
		{"read under deploy", file("Read", "deploy/prod.yaml"), nil},
		{"edit elsewhere", file("Edit", "src/main.go"), nil},
		{"malformed input", Call{Tool: "Bash", Input: json.RawMessage(`{"command": 1}`)}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, p.Quorum(tc.call))
		})
	}
	learned, err := p.WithRule(ListAllow, "Bash(git push:*)")
	require.NoError(t, err)
	assert.Equal(t, []QuorumRule{push}, learned.Quorum(bash("git push")), "a learned rule keeps the quorum")
}

func TestQualifies(t *testing.T) {
	q := QuorumRule{Rule: "Bash(git push:*)", Require: 2, From: []string{"U0A", "S0OPS"}}
	assert.True(t, q.Qualifies("U0A", nil))
	assert.True(t, q.Qualifies("U0Z", []string{"S0OPS"}))
	assert.False(t, q.Qualifies("U0Z", []string{"S0DEV"}))
	assert.False(t, q.Qualifies("", nil))
}
