package policylab_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/cli/policylab"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/settingsfile"
)

// policyHook is a real PreToolUse command hook. It reads the call on stdin and
//   - denies (exit 2, reason on stderr) any Bash command that mentions curl;
//   - rewrites "make-dangerous" into rm -rf / (which layer 1 must still deny);
//   - rewrites "make-safe" into "echo rewritten" and allows it;
//   - says nothing otherwise.
const policyHook = `#!/bin/sh
in=$(cat)
case "$in" in
*curl*) echo "no network from hooks' point of view" >&2; exit 2 ;;
*make-dangerous*) echo '{"decision":"allow","modifiedInput":{"command":"rm -rf /"}}' ;;
*make-safe*) echo '{"decision":"allow","reason":"rewritten by policy.sh","modifiedInput":{"command":"echo rewritten"}}' ;;
esac
exit 0
`

// hookName is how settings name the hook: its place in the file and its command.
const hookName = "PreToolUse[0].hooks[0] ./policy.sh"

const policySettings = `{
  "permissions": {
    "allow": ["Bash(go test *)"],
    "deny":  ["Read(.env*)"]
  },
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./policy.sh", "timeout": 10}]}]
  }
}`

// policyWorkspace is a workspace with .custos/settings.json and the hook script.
func policyWorkspace(t *testing.T) string {
	t.Helper()
	ws := testenv.Workspace(t)
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".custos"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".custos", "settings.json"), []byte(policySettings), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "policy.sh"), []byte(policyHook), 0o755))
	return ws
}

// fileDenySettings are settings as people copy them from Claude Code:
// allow rules for read-only programs and deny rules on files, which must
// hold for Bash too.
const fileDenySettings = `{"permissions": {"allow": ["Bash(cat:*)", "Bash(echo:*)", "Bash(grep:*)"],
                 "deny":  ["Read(.env)", "Edit(.env)", "Read(secrets/**)"]}}`

func fileDenyWorkspace(t *testing.T) string {
	t.Helper()
	ws := testenv.Workspace(t)
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".custos"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".custos", "settings.json"), []byte(fileDenySettings), 0o644))
	return ws
}

func TestPolicyCheck(t *testing.T) {
	plain := testenv.Workspace(t)   // no settings at all
	withRules := policyWorkspace(t) // user rules and the hook
	configDir := t.TempDir()        // user settings that trust withRules only
	require.NoError(t, settingsfile.Trust(configDir, withRules))
	fileDeny := fileDenyWorkspace(t) // deny rules on files, allow rules for Bash
	require.NoError(t, settingsfile.Trust(configDir, fileDeny))

	edit := `{"file_path":"a.txt","old_string":"a","new_string":"b"}`
	write := `{"file_path":"a.txt","content":"x"}`
	cases := []struct {
		name      string
		ws        string
		tool      string
		input     string
		mode      string
		decision  approval.Decision
		layer     approval.Layer
		rule      string
		hook      string
		modified  string // expected modifiedInput, "" = none
		reasonHas string
	}{
		{name: "system deny rm -rf /", ws: plain, tool: "Bash", input: `{"command":"rm -rf /"}`,
			decision: approval.Deny, layer: approval.LayerRules, rule: "rm-critical"},
		{name: "system deny sudo", ws: plain, tool: "Bash", input: `{"command":"sudo ls"}`,
			decision: approval.Deny, layer: approval.LayerRules, rule: "privilege-escalation"},
		{name: "system deny nested bash -c", ws: plain, tool: "Bash", input: `{"command":"bash -c 'rm -rf ~'"}`,
			decision: approval.Deny, layer: approval.LayerRules, rule: "rm-critical"},
		{name: "system deny beats bypass", ws: plain, tool: "Bash", input: `{"command":"rm -rf /"}`, mode: "bypass",
			decision: approval.Deny, layer: approval.LayerRules, rule: "rm-critical"},
		{name: "read-only allow", ws: plain, tool: "Read", input: `{"file_path":"a.txt"}`,
			decision: approval.Allow, layer: approval.LayerReadOnly},
		{name: "an MCP tool asks without a rule", ws: plain, tool: "mcp__tracker__create_issue", input: `{"title":"x"}`,
			decision: approval.Ask, layer: approval.LayerHuman},
		{name: "an MCP tool is no custos tool", ws: plain, tool: "mcp__tracker", input: `{}`,
			decision: approval.Deny, layer: approval.LayerRules},
		{name: "edit asks a person by default", ws: plain, tool: "Edit", input: edit,
			decision: approval.Ask, layer: approval.LayerHuman},
		{name: "acceptEdits allows edit", ws: plain, tool: "Edit", input: edit, mode: "acceptEdits",
			decision: approval.Allow, layer: approval.LayerMode},
		{name: "acceptEdits still asks for Bash", ws: plain, tool: "Bash", input: `{"command":"make"}`, mode: "acceptEdits",
			decision: approval.Ask, layer: approval.LayerHuman},
		{name: "plan denies write", ws: plain, tool: "Write", input: write, mode: "plan",
			decision: approval.Deny, layer: approval.LayerMode},
		{name: "bypass allows Bash", ws: plain, tool: "Bash", input: `{"command":"make"}`, mode: "bypass",
			decision: approval.Allow, layer: approval.LayerMode},
		{name: "dontAsk denies write", ws: plain, tool: "Write", input: write, mode: "dontAsk",
			decision: approval.Deny, layer: approval.LayerMode},
		{name: "user allow rule", ws: withRules, tool: "Bash", input: `{"command":"go test ./..."}`,
			decision: approval.Allow, layer: approval.LayerRules, rule: "Bash(go test *)"},
		{name: "user deny rule", ws: withRules, tool: "Read", input: `{"file_path":".env.local"}`,
			decision: approval.Deny, layer: approval.LayerRules, rule: "Read(.env*)"},
		{name: "user deny rule beats read-only", ws: withRules, tool: "Read", input: `{"file_path":".env"}`,
			decision: approval.Deny, layer: approval.LayerRules, rule: "Read(.env*)"},
		{name: "hook denies curl by exit 2", ws: withRules, tool: "Bash", input: `{"command":"curl https://example.com"}`,
			decision: approval.Deny, layer: approval.LayerHook, rule: hookName, hook: hookName, reasonHas: "no network"},
		{name: "hook silent: a person decides", ws: withRules, tool: "Bash", input: `{"command":"make"}`,
			decision: approval.Ask, layer: approval.LayerHuman},
		{name: "hook rewrite allowed", ws: withRules, tool: "Bash", input: `{"command":"echo make-safe"}`,
			decision: approval.Allow, layer: approval.LayerHook, rule: hookName, hook: hookName, reasonHas: "rewritten by policy.sh", modified: `{"command":"echo rewritten"}`},
		{name: "hook rewrite into rm -rf / is still denied", ws: withRules, tool: "Bash", input: `{"command":"echo make-dangerous"}`,
			decision: approval.Deny, layer: approval.LayerRules, rule: "rm-critical", hook: hookName, modified: `{"command":"rm -rf /"}`},
		{name: "hook not run for other tools", ws: withRules, tool: "Write", input: `{"file_path":"curl.txt","content":"x"}`,
			decision: approval.Ask, layer: approval.LayerHuman},
		{name: "unknown tool", ws: plain, tool: "Teleport", input: `{}`,
			decision: approval.Deny, layer: approval.LayerRules, reasonHas: "unknown tool"},
		// Read and Edit rules hold for Bash, and redirections are writes.
		{name: "cat .env denied by Read(.env)", ws: fileDeny, tool: "Bash", input: `{"command":"cat .env"}`,
			decision: approval.Deny, layer: approval.LayerRules, rule: "Read(.env)", reasonHas: "reads .env"},
		{name: "grep KEY .env denied by Read(.env)", ws: fileDeny, tool: "Bash", input: `{"command":"grep KEY .env"}`,
			decision: approval.Deny, layer: approval.LayerRules, rule: "Read(.env)"},
		{name: "cat secrets/prod.key denied by Read(secrets/**)", ws: fileDeny, tool: "Bash", input: `{"command":"cat secrets/prod.key"}`,
			decision: approval.Deny, layer: approval.LayerRules, rule: "Read(secrets/**)"},
		{name: "echo x > .env denied by Edit(.env)", ws: fileDeny, tool: "Bash", input: `{"command":"echo x > .env"}`,
			decision: approval.Deny, layer: approval.LayerRules, rule: "Edit(.env)", reasonHas: "writes .env (redirection), denied by Edit(.env)"},
		{name: "ls > ../outside.txt asks a person", ws: fileDeny, tool: "Bash", input: `{"command":"ls > ../outside.txt"}`,
			decision: approval.Ask, layer: approval.LayerHuman, reasonHas: "outside the workspace"},
		{name: "outside the workspace asks even in bypass", ws: fileDeny, tool: "Bash", input: `{"command":"cat notes.md > /etc/cron.d/x"}`, mode: "bypass",
			decision: approval.Ask, layer: approval.LayerHuman, reasonHas: "/etc/cron.d/x"},
		{name: "cat notes.md still allowed", ws: fileDeny, tool: "Bash", input: `{"command":"cat notes.md"}`,
			decision: approval.Allow, layer: approval.LayerRules, rule: "Bash(cat:*)"},
		{name: "echo hi > /dev/null allowed", ws: fileDeny, tool: "Bash", input: `{"command":"echo hi > /dev/null"}`,
			decision: approval.Allow, layer: approval.LayerRules, rule: "Bash(echo:*)"},
		{name: "2>&1 allowed", ws: fileDeny, tool: "Bash", input: `{"command":"cat notes.md 2>&1"}`,
			decision: approval.Allow, layer: approval.LayerRules, rule: "Bash(cat:*)"},
		{name: "a write inside the workspace asks by default", ws: fileDeny, tool: "Bash", input: `{"command":"echo x > notes.txt"}`,
			decision: approval.Ask, layer: approval.LayerHuman, reasonHas: "writes notes.txt (redirection)"},
		{name: "acceptEdits allows a write inside the workspace", ws: fileDeny, tool: "Bash", input: `{"command":"echo x > notes.txt"}`, mode: "acceptEdits",
			decision: approval.Allow, layer: approval.LayerMode, rule: "Bash(echo:*)"},
		{name: "malformed input fails closed", ws: plain, tool: "Bash", input: `not json`,
			decision: approval.Deny, layer: approval.LayerRules, reasonHas: "malformed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"policy", "check", "--tool", tc.tool, "--input", tc.input, "--workspace", tc.ws, "--config-dir", configDir}
			if tc.mode != "" {
				args = append(args, "--mode", tc.mode)
			}
			code, out, errOut := runApp(t, context.Background(), args...)
			require.Equal(t, 0, code, "stderr: %s", errOut)
			var res policylab.PolicyResult
			require.NoError(t, json.Unmarshal([]byte(out), &res), "stdout: %q", out)
			assert.Equal(t, tc.decision, res.Decision, "decision; %s", out)
			assert.Equal(t, tc.layer, res.Layer, "layer; %s", out)
			assert.Equal(t, tc.rule, res.Rule, "rule; %s", out)
			assert.Equal(t, tc.hook, res.Hook, "hook; %s", out)
			if tc.modified == "" {
				assert.Empty(t, res.Input, "modifiedInput")
			} else {
				assert.JSONEq(t, tc.modified, string(res.Input))
			}
			if tc.reasonHas != "" {
				assert.Contains(t, res.Reason, tc.reasonHas)
			}
		})
	}
}

func TestPolicyCheckErrors(t *testing.T) {
	broken := testenv.Workspace(t)
	require.NoError(t, os.MkdirAll(filepath.Join(broken, ".custos"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(broken, ".custos", "settings.json"), []byte(`{"permissions": {"allow": [}`), 0o644))
	typo := testenv.Workspace(t)
	require.NoError(t, os.MkdirAll(filepath.Join(typo, ".custos"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(typo, ".custos", "settings.local.json"), []byte(`{"permissions": {"denny": ["Bash(*)"]}}`), 0o644))
	plain := testenv.Workspace(t)
	configDir := t.TempDir()

	cases := []struct {
		name      string
		args      []string
		code      int
		stderrHas []string
	}{
		{name: "broken settings", code: 1,
			args:      []string{"policy", "check", "--tool", "Bash", "--input", `{"command":"ls"}`, "--workspace", broken, "--config-dir", configDir},
			stderrHas: []string{filepath.Join(broken, ".custos", "settings.json")}},
		{name: "unknown permissions key", code: 1,
			args:      []string{"policy", "check", "--tool", "Bash", "--input", `{"command":"ls"}`, "--workspace", typo, "--config-dir", configDir},
			stderrHas: []string{"settings.local.json", "denny"}},
		{name: "missing --tool", code: 2,
			args:      []string{"policy", "check", "--input", `{"command":"ls"}`, "--workspace", plain, "--config-dir", configDir},
			stderrHas: []string{"--tool is required"}},
		{name: "unknown mode", code: 2,
			args:      []string{"policy", "check", "--tool", "Bash", "--mode", "yolo", "--workspace", plain, "--config-dir", configDir},
			stderrHas: []string{`"yolo"`}},
		{name: "no subcommand", code: 2, args: []string{"policy"}, stderrHas: []string{"policy check --tool"}},
		{name: "missing workspace", code: 1,
			args:      []string{"policy", "check", "--tool", "Read", "--workspace", filepath.Join(plain, "nope"), "--config-dir", configDir},
			stderrHas: []string{"workspace", "nope"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runApp(t, context.Background(), tc.args...)
			assert.Equal(t, tc.code, code, "stdout %q stderr %q", out, errOut)
			assert.Empty(t, out, "nothing on stdout on error")
			for _, s := range tc.stderrHas {
				assert.Contains(t, errOut, s)
			}
		})
	}
}

// policy check names the program table entry and the option that decided (so
// a person can see why), under the allow rules people write for read-only
// programs.
func TestPolicyCheckNamesTheProgramAndOption(t *testing.T) {
	ws := testenv.Workspace(t)
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".custos"), 0o755))
	settings := `{"permissions":{"allow":["Bash(rg:*)","Bash(sed -n:*)","Bash(awk:*)","Bash(git log:*)","Bash(git diff:*)"],"deny":["Bash(git push:*)"]}}`
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".custos", "settings.json"), []byte(settings), 0o644))
	configDir := t.TempDir()
	require.NoError(t, settingsfile.Trust(configDir, ws))
	for _, tc := range []struct {
		cmd             string
		decision        approval.Decision
		program, option string
		reasonHas       string
	}{
		{"rg --pre=sh TODO .", approval.Ask, "rg", "--pre", "runs a program"},
		{"sed -n '1p; s/a/b/e' README.md", approval.Ask, "sed", "s///e", "runs a program"},
		{`awk 'BEGIN{system("id")}'`, approval.Ask, "awk", "system()", "runs a program"},
		{"PAGER='sh -c id' git log", approval.Ask, "git log", "PAGER", "run another"},
		{"git diff --output=notes.txt", approval.Ask, "git diff", "--output", "writes notes.txt"},
		{"git -C . push", approval.Deny, "", "", "git push"},
		{"rg -n TODO src", approval.Allow, "", "", ""},
		{"git log --oneline -5", approval.Allow, "", "", ""},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			input, _ := json.Marshal(map[string]string{"command": tc.cmd})
			code, out, errOut := runApp(t, context.Background(), "policy", "check", "--tool", "Bash", "--input", string(input),
				"--workspace", ws, "--config-dir", configDir)
			require.Equal(t, 0, code, "stderr: %s", errOut)
			var res policylab.PolicyResult
			require.NoError(t, json.Unmarshal([]byte(out), &res), "stdout: %q", out)
			assert.Equal(t, tc.decision, res.Decision, out)
			assert.Equal(t, tc.program, res.Program, out)
			assert.Equal(t, tc.option, res.Option, out)
			assert.Contains(t, res.Reason, tc.reasonHas, out)
		})
	}
}
