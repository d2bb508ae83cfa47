package command

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/hooks"
)

// writeScript puts an executable shell script in dir and returns its path.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return path
}

func bashPayload(dir string) hooks.Payload {
	return hooks.Payload{
		Point:     hooks.ToolApprovalPre,
		JobID:     "job-1",
		CallID:    "call_1",
		Tool:      "Bash",
		Input:     json.RawMessage(`{"command":"rm -rf build"}`),
		Mode:      "default",
		Workspace: dir,
	}
}

func TestRunCommandDecisions(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		script   string
		want     hooks.Result
		wantExit int
		wantErr  string // substring of hooks.Outcome.Err; "" means none
	}{
		{
			name:   "allow (our shape)",
			script: `cat >/dev/null; echo '{"decision":"allow","reason":"looks fine"}'`,
			want:   hooks.Result{Decision: "allow", Reason: "looks fine"},
		},
		{
			name:     "deny via exit 2, stderr is the reason",
			script:   `echo "rm is not allowed here" >&2; exit 2`,
			want:     hooks.Result{Decision: "deny", Reason: "rm is not allowed here"},
			wantExit: 2,
		},
		{
			name:   "modified input (our shape)",
			script: `echo '{"decision":"allow","modifiedInput":{"command":"rm -rf ./build"}}'`,
			want:   hooks.Result{Decision: "allow", ModifiedInput: json.RawMessage(`{"command":"rm -rf ./build"}`)},
		},
		{
			name:   "modified output",
			script: `echo '{"modifiedOutput":"[redacted]"}'`,
			want:   hooks.Result{ModifiedOutput: strPtr("[redacted]")},
		},
		{
			name: "Claude Code hookSpecificOutput deny",
			script: `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",` +
				`"permissionDecisionReason":"blocked by policy"},"suppressOutput":true}'`,
			want: hooks.Result{Decision: "deny", Reason: "blocked by policy"},
		},
		{
			name: "Claude Code hookSpecificOutput allow with updatedInput",
			script: `echo '{"hookSpecificOutput":{"permissionDecision":"allow","permissionDecisionReason":"safe",` +
				`"updatedInput":{"command":"ls"}}}'`,
			want: hooks.Result{Decision: "allow", Reason: "safe", ModifiedInput: json.RawMessage(`{"command":"ls"}`)},
		},
		{
			name:   "Claude Code ask",
			script: `echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"check this"}}'`,
			want:   hooks.Result{Decision: "ask", Reason: "check this"},
		},
		{
			name:   "Claude Code top-level block",
			script: `echo '{"decision":"block","reason":"tests must pass first"}'`,
			want:   hooks.Result{Decision: "deny", Reason: "tests must pass first"},
		},
		{
			name:   "empty stdout is no decision",
			script: `cat >/dev/null; exit 0`,
		},
		{
			name:   "JSON without a decision is no decision",
			script: `echo '{"continue":true}'`,
		},
		{
			name:     "exit 1 is a broken hook, not a verdict",
			script:   `echo '{"decision":"allow"}'; echo "boom" >&2; exit 1`,
			wantExit: 1,
			wantErr:  "hook failed: exit status 1: boom",
		},
		{
			name:    "garbage stdout",
			script:  `echo 'allow please'`,
			wantErr: "hook stdout is not a JSON object",
		},
		{
			name:    "unknown decision word",
			script:  `echo '{"decision":"yes"}'`,
			wantErr: `unknown hook decision "yes"`,
		},
		{
			name:    "modified input that is not an object",
			script:  `echo '{"decision":"allow","modifiedInput":"rm -rf /"}'`,
			wantErr: "modified input is not a JSON object",
		},
		{
			// The script is a child of `sh -c`, which reports the crash as 128+9.
			name:     "crash by signal",
			script:   `kill -9 $$`,
			wantExit: 137,
			wantErr:  "hook failed: exit status 137",
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := writeScript(t, dir, "hook"+strconv.Itoa(i)+".sh", tt.script)
			h := hooks.CommandHook{Name: "h" + strconv.Itoa(i), Command: script, Timeout: 10 * time.Second, Point: hooks.ToolApprovalPre}
			o := Run(context.Background(), h, bashPayload(dir), dir)

			if tt.wantErr != "" {
				assert.Contains(t, o.Err, tt.wantErr)
				assert.True(t, o.Result.Empty(), "a failed hook must not decide: %+v", o.Result)
			} else {
				assert.Empty(t, o.Err)
			}
			want := tt.want
			if !want.Empty() {
				want.Hook = h.Name
			}
			assert.Equal(t, want, o.Result)
			assert.Equal(t, tt.wantExit, o.ExitCode)
			assert.Equal(t, h.Name, o.Hook)
			assert.Positive(t, o.Duration)
		})
	}
}

func strPtr(s string) *string { return &s }

func TestRunCommandTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	// The child sleep runs in the background and records its pid: killing only
	// the shell would leave it alive. The timeout must leave room for the
	// fork and the file write on a loaded machine; 2 s against the 60 s the
	// processes would otherwise run keeps both sides of the race far apart.
	script := writeScript(t, dir, "slow.sh", `sleep 60 & echo $! > child.pid; sleep 60`)
	h := hooks.CommandHook{Name: "slow", Command: script, Timeout: 2 * time.Second}

	start := time.Now()
	o := Run(context.Background(), h, bashPayload(dir), dir)
	elapsed := time.Since(start)

	assert.True(t, o.TimedOut)
	assert.Contains(t, o.Err, "timed out after 2s")
	assert.True(t, o.Result.Empty())
	assert.Less(t, elapsed, 30*time.Second, "the timeout must not wait for sleep 60")

	raw, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	require.NoError(t, err, "the script forked its child before the timeout")
	pid := strings.TrimSpace(string(raw))
	assert.Eventually(t, func() bool { return !processRunning(pid) }, 20*time.Second, 20*time.Millisecond,
		"background child %s survived the timeout", pid)
}

// processRunning reports whether pid is alive and not a zombie (a container's
// pid 1 may never reap the orphan, so a zombie counts as dead).
func processRunning(pid string) bool {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	// Field 3 is the state; the command name in field 2 is in parentheses.
	s := string(stat)
	rest := s[strings.LastIndexByte(s, ')')+1:]
	fields := strings.Fields(rest)
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

func TestRunCommandParentCancel(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	o := Run(ctx, hooks.CommandHook{Name: "slow", Command: "sleep 10", Timeout: time.Minute}, bashPayload(dir), dir)
	assert.False(t, o.TimedOut, "the hook's own timeout did not fire")
	assert.Contains(t, o.Err, "canceled")
	assert.Less(t, o.Duration, 5*time.Second)
}

func TestRunCommandBackgroundChildHoldingStdout(t *testing.T) {
	dir := t.TempDir()
	// The shell answers and exits, but a grandchild keeps stdout open.
	o := Run(context.Background(),
		hooks.CommandHook{Name: "bg", Command: `echo '{"decision":"allow"}'; sleep 10 &`, Timeout: time.Minute},
		bashPayload(dir), dir)
	assert.Contains(t, o.Err, "background process")
	assert.True(t, o.Result.Empty())
	assert.Less(t, o.Duration, 5*time.Second)
}

func TestRunCommandBadInput(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		h    hooks.CommandHook
		dir  string
		want string
	}{
		{"empty command", hooks.CommandHook{Name: "x", Command: " "}, dir, "empty command"},
		{"no dir", hooks.CommandHook{Name: "x", Command: "true"}, "", "no working directory"},
		{"missing dir", hooks.CommandHook{Name: "x", Command: "true"}, filepath.Join(dir, "nope"), "start hook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Run(context.Background(), tt.h, bashPayload(dir), tt.dir)
			assert.Contains(t, o.Err, tt.want)
			assert.True(t, o.Result.Empty())
		})
	}
}

func TestRunCommandStdinAndEnv(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("OPENAI_API_KEY", "sk-very-secret")
	t.Setenv("TEMPORAL_ADDRESS", "temporal:7233")
	t.Setenv("GITHUB_TOKEN", "ghp-secret")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("DEPLOY_SECRET", "s3cr3t")
	t.Setenv("CUSTOS_HOOK_POINT", "stale")
	t.Setenv("HARMLESS_SETTING", "visible")

	script := writeScript(t, dir, "probe.sh", `cat > payload.json; env > env.txt`)
	o := Run(context.Background(), hooks.CommandHook{Name: "probe", Command: script}, bashPayload(dir), dir)
	require.Empty(t, o.Err)

	rawEnv, err := os.ReadFile(filepath.Join(dir, "env.txt"))
	require.NoError(t, err)
	env := string(rawEnv)
	for _, secret := range []string{"sk-very-secret", "temporal:7233", "ghp-secret", "eu-west-1", "s3cr3t", "stale"} {
		assert.NotContains(t, env, secret)
	}
	for _, line := range []string{
		"HARMLESS_SETTING=visible",
		"CUSTOS_HOOK_POINT=tool.approval.pre",
		"CUSTOS_JOB_ID=job-1",
		"CUSTOS_WORKSPACE=" + dir,
		"CLAUDE_PROJECT_DIR=" + dir,
	} {
		assert.Contains(t, strings.Split(env, "\n"), line)
	}

	rawPayload, err := os.ReadFile(filepath.Join(dir, "payload.json"))
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(rawPayload, &got))
	want := map[string]any{
		// ours
		"point": "tool.approval.pre", "jobId": "job-1", "callId": "call_1", "tool": "Bash",
		"input": map[string]any{"command": "rm -rf build"}, "mode": "default", "workspace": dir,
		// Claude Code's names for the same things
		"hook_event_name": "PreToolUse", "session_id": "job-1", "cwd": dir, "tool_name": "Bash",
		"tool_input": map[string]any{"command": "rm -rf build"}, "tool_use_id": "call_1", "permission_mode": "default",
	}
	assert.Equal(t, want, got)
}

func TestIsSecretEnv(t *testing.T) {
	for name, secret := range map[string]bool{
		"OPENAI_API_KEY": true, "OPENAI_BASE_URL": true, "TEMPORAL_ADDRESS": true, "AWS_PROFILE": true,
		"GH_TOKEN": true, "SSH_KEY": true, "app_secret": true, "DB_PASSWORD": true,
		"PATH": false, "HOME": false, "KEYBOARD": false, "TOKENIZER": false,
	} {
		assert.Equal(t, secret, IsSecretEnv(name), name)
	}
}

func TestRunAll(t *testing.T) {
	dir := t.TempDir()
	mk := func(name, cmd string) hooks.CommandHook {
		return hooks.CommandHook{Name: name, Command: cmd, Timeout: 10 * time.Second}
	}
	// Each hook appends its name to ran.txt so we see which ones ran.
	log := func(name, answer string) string {
		return "echo " + name + " >> ran.txt; " + answer
	}
	hs := []hooks.CommandHook{
		mk("broken", log("broken", "exit 1")),
		mk("silent", log("silent", "true")),
		mk("denier", log("denier", "echo nope >&2; exit 2")),
		mk("allower", log("allower", `echo '{"decision":"allow"}'`)),
	}
	tests := []struct {
		point   hooks.Point
		wantRan string
	}{
		{hooks.ToolApprovalPre, "broken\nsilent\ndenier\n"},
		{hooks.ToolExecuteAfter, "broken\nsilent\ndenier\nallower\n"},
	}
	for _, tt := range tests {
		t.Run(string(tt.point), func(t *testing.T) {
			_ = os.Remove(filepath.Join(dir, "ran.txt"))
			p := bashPayload(dir)
			p.Point = tt.point
			res, outs := RunAll(context.Background(), hs, p, dir)
			assert.Equal(t, hooks.Result{Decision: "deny", Reason: "nope", Hook: "denier"}, res)
			ran, err := os.ReadFile(filepath.Join(dir, "ran.txt"))
			require.NoError(t, err)
			assert.Equal(t, tt.wantRan, string(ran))
			assert.Len(t, outs, strings.Count(tt.wantRan, "\n"))
			assert.NotEmpty(t, outs[0].Err)
		})
	}

	t.Run("nothing decides", func(t *testing.T) {
		res, outs := RunAll(context.Background(), hs[:2], bashPayload(dir), dir)
		assert.True(t, res.Empty())
		assert.Len(t, outs, 2)
	})
	t.Run("canceled context runs nothing", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res, outs := RunAll(ctx, hs, bashPayload(dir), dir)
		assert.True(t, res.Empty())
		assert.Empty(t, outs)
	})
}

func TestRunCommandShellKilled(t *testing.T) {
	dir := t.TempDir()
	// Inline, the shell itself dies: no exit code at all.
	o := Run(context.Background(), hooks.CommandHook{Name: "suicide", Command: `echo '{"decision":"allow"}'; kill -9 $$`}, bashPayload(dir), dir)
	assert.Equal(t, -1, o.ExitCode)
	assert.Contains(t, o.Err, "signal: killed")
	assert.True(t, o.Result.Empty())
}
