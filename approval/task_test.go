package approval

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Task asks in default mode, runs in plan (the child stays in plan),
// acceptEdits and bypass, is refused in dontAsk, and an allow rule Task
// lets it run in default mode.
func TestTaskByMode(t *testing.T) {
	env := Env{Workspace: "/ws", Home: "/home/u"}
	p, err := Compile(Settings{}, env)
	require.NoError(t, err)
	c := Call{Tool: TaskTool, Input: []byte(`{"description": "d", "prompt": "p"}`)}
	eval := p.Evaluate
	for mode, want := range map[Mode]Decision{ModeDefault: Continue, ModePlan: Allow, ModeAcceptEdits: Allow, ModeBypass: Allow, ModeDontAsk: Continue} {
		assert.Equal(t, want, eval(c, mode).Decision, "mode %s", mode)
	}
	assert.True(t, Decide(c, ModeDefault, eval, Findings{Rules: eval(c, ModeDefault)}).NeedsHuman, "default mode asks a person")
	assert.Equal(t, Deny, Decide(c, ModeDontAsk, eval, Findings{Rules: eval(c, ModeDontAsk)}).Verdict.Decision)
	allowed, err := Compile(Settings{Permissions: Permissions{Allow: []string{"Task"}}}, env)
	require.NoError(t, err)
	v := allowed.Evaluate(c, ModeDefault)
	assert.Equal(t, Allow, v.Decision)
	assert.Equal(t, LayerRules, v.Layer)
	assert.Equal(t, Allow, allowed.Evaluate(c, ModePlan).Decision, "an allow rule in plan mode still allows Task")
	denied, err := Compile(Settings{Permissions: Permissions{Deny: []string{"Task"}}}, env)
	require.NoError(t, err)
	assert.Equal(t, Deny, denied.Evaluate(c, ModeBypass).Decision, "a deny rule beats every mode")
}

func TestSubagentSettings(t *testing.T) {
	s, err := ParseSettings([]byte(`{"subagents": {"maxParallel": 2}}`), "/ws")
	require.NoError(t, err)
	assert.Equal(t, 2, s.Subagents.MaxParallel)
	_, err = ParseSettings([]byte(`{"subagents": {"maxParalel": 2}}`), "/ws")
	assert.ErrorIs(t, err, ErrBadSettings, "a typo is an error")
	_, err = ParseSettings([]byte(`{"subagents": {"maxParallel": -1}}`), "/ws")
	assert.ErrorIs(t, err, ErrBadSettings)
	m := MergeSettings(Settings{Subagents: SubagentSettings{MaxParallel: 2}}, Settings{Subagents: SubagentSettings{MaxParallel: 8}})
	assert.Equal(t, 2, m.Subagents.MaxParallel, "a workspace only narrows")
}
