// Package command runs command hooks: a hook's command in its own process
// group with the payload on stdin, its answer read from the exit code and
// stdout (hooks.ParseOutput). It is the part of hooks that starts
// processes, kept out of package hooks so that the workflow and the
// approval pipeline, which use hook points, payloads and results, import no
// os/exec.
package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/custos-dev/custos/hooks"
)

// maxCapture caps what is kept of a hook's stdout and stderr; a chatty hook must
// not blow up the worker's memory or the workflow history.
const maxCapture = 64 << 10

// waitDelay is how long Wait keeps reading pipes after the shell is gone; a
// background child that holds stdout open must not hang the hook run.
const waitDelay = time.Second

// stdinDoc is what a command hook reads on stdin: our Payload plus the field
// names Claude Code hooks read, so existing Claude Code hook scripts work as is.
type stdinDoc struct {
	hooks.Payload
	HookEventName  string          `json:"hook_event_name"`
	SessionID      string          `json:"session_id"`
	Cwd            string          `json:"cwd"`
	ToolName       string          `json:"tool_name,omitempty"`
	ToolInput      json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID      string          `json:"tool_use_id,omitempty"`
	ToolResponse   string          `json:"tool_response,omitempty"`
	PermissionMode string          `json:"permission_mode,omitempty"`
}

// Run runs one command hook: `/bin/sh -c Command` in dir, its own process
// group, the Payload as JSON on stdin, a scrubbed environment. The answer is
// read from the exit code and stdout:
//
//   - exit 2: deny, with stderr as the reason (Claude Code's convention);
//   - exit 0, empty stdout: no decision;
//   - exit 0, JSON on stdout: see hooks.ParseOutput;
//   - anything else (other exit codes, bad JSON, timeout, crash, a start
//     failure): no decision, with Err saying why.
//
// A hook that outlives h.Timeout (hooks.DefaultTimeout when zero) or ctx has
// its whole process group killed.
func Run(ctx context.Context, h hooks.CommandHook, p hooks.Payload, dir string) (out hooks.Outcome) {
	start := time.Now()
	out = hooks.Outcome{Hook: h.Name, ExitCode: -1}
	defer func() { out.Duration = time.Since(start) }()

	if strings.TrimSpace(h.Command) == "" {
		out.Err = "empty command"
		return out
	}
	if dir == "" {
		out.Err = "no working directory given for the hook"
		return out
	}
	if p.Point == "" {
		p.Point = h.Point
	}
	if p.Workspace == "" {
		p.Workspace = dir
	}
	input, err := json.Marshal(newStdinDoc(p, dir))
	if err != nil {
		out.Err = fmt.Sprintf("encode payload: %v", err)
		return out
	}

	timeout := h.Timeout
	if timeout <= 0 {
		timeout = hooks.DefaultTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var stdout, stderr capped
	cmd := exec.CommandContext(cctx, "/bin/sh", "-c", h.Command)
	cmd.Dir = dir
	cmd.Env = hookEnv(os.Environ(), p, dir)
	cmd.Stdin = bytes.NewReader(input)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.WaitDelay = waitDelay
	setProcessGroup(cmd)

	runErr := cmd.Run()
	out.Stderr = strings.TrimSpace(stderr.String())
	if cmd.ProcessState != nil {
		out.ExitCode = cmd.ProcessState.ExitCode()
	}

	switch {
	case cctx.Err() != nil && ctx.Err() == nil:
		out.TimedOut = true
		out.Err = fmt.Sprintf("timed out after %s; process group killed", timeout)
		return out
	case ctx.Err() != nil:
		out.Err = fmt.Sprintf("canceled: %v", ctx.Err())
		return out
	case errors.Is(runErr, exec.ErrWaitDelay):
		// The shell exited but a child kept stdout open: its answer may be
		// incomplete, so it counts as no decision.
		killProcessGroup(cmd)
		out.Err = "hook left a background process holding its output open; killed it"
		return out
	case runErr != nil && cmd.ProcessState == nil:
		out.Err = fmt.Sprintf("start hook: %v", runErr)
		return out
	}

	readAnswer(h, &out, &stdout, runErr)
	return out
}

// readAnswer reads the answer of a hook that ran to its end: exit 0 with
// JSON, exit 2 (deny, stderr the reason), or any other exit (no decision).
func readAnswer(h hooks.CommandHook, out *hooks.Outcome, stdout *capped, runErr error) {
	switch out.ExitCode {
	case 0:
		res, err := hooks.ParseOutput(stdout.Bytes())
		if err != nil {
			out.Err = err.Error()
			return
		}
		if stdout.truncated {
			out.Err = fmt.Sprintf("hook stdout larger than %d bytes", maxCapture)
			return
		}
		out.Result = res
	case 2:
		reason := out.Stderr
		if reason == "" {
			reason = "denied by hook " + h.Name
		}
		out.Result = hooks.Result{Decision: hooks.Deny, Reason: reason}
	default:
		// Exit 1 and friends are a broken hook, not a verdict (as in Claude Code).
		msg := fmt.Sprintf("hook failed: %v", runErr)
		if out.Stderr != "" {
			msg += ": " + hooks.Shorten(out.Stderr, 200)
		}
		out.Err = msg
		return
	}
	if !out.Result.Empty() {
		out.Result.Hook = h.Name
	}
}

// RunAll runs hooks in order. The first non-empty result is returned with Hook
// set. At decision points (Point.Decides) that result ends the run; at observer
// points every hook runs and the first result is only reported. Hooks not run
// because ctx ended have no Outcome.
func RunAll(ctx context.Context, hs []hooks.CommandHook, p hooks.Payload, dir string) (hooks.Result, []hooks.Outcome) {
	point := p.Point
	if point == "" && len(hs) > 0 {
		point = hs[0].Point
	}
	var res hooks.Result
	decided := false
	outs := make([]hooks.Outcome, 0, len(hs))
	for _, h := range hs {
		if ctx.Err() != nil {
			break
		}
		o := Run(ctx, h, p, dir)
		outs = append(outs, o)
		if decided || o.Result.Empty() {
			continue
		}
		res, decided = o.Result, true
		if point.Decides() {
			break
		}
	}
	return res, outs
}

func newStdinDoc(p hooks.Payload, dir string) stdinDoc {
	return stdinDoc{
		Payload:        p,
		HookEventName:  p.Point.ClaudeName(),
		SessionID:      p.JobID,
		Cwd:            dir,
		ToolName:       p.Tool,
		ToolInput:      p.Input,
		ToolUseID:      p.CallID,
		ToolResponse:   p.Output,
		PermissionMode: p.Mode,
	}
}

// IsSecretEnv reports whether an environment variable must not reach a hook:
// model and Temporal credentials, cloud credentials, and anything named like a
// token, key, secret or password.
func IsSecretEnv(name string) bool {
	n := strings.ToUpper(name)
	for _, prefix := range []string{"OPENAI_", "TEMPORAL_", "AWS_", "ANTHROPIC_"} {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	for _, suffix := range []string{"_TOKEN", "_KEY", "_SECRET", "_PASSWORD", "_CREDENTIALS"} {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	return false
}

// hookEnv is base without secrets and without stale CUSTOS_* hook variables,
// plus the hook's own variables. CLAUDE_PROJECT_DIR is set too, because Claude
// Code hook commands commonly refer to it.
func hookEnv(base []string, p hooks.Payload, dir string) []string {
	own := map[string]string{
		"CUSTOS_HOOK_POINT":  string(p.Point),
		"CUSTOS_JOB_ID":      p.JobID,
		"CUSTOS_WORKSPACE":   dir,
		"CLAUDE_PROJECT_DIR": dir,
	}
	env := make([]string, 0, len(base)+len(own))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, mine := own[name]; mine || IsSecretEnv(name) {
			continue
		}
		env = append(env, kv)
	}
	// Fixed order: the environment is part of what a test may compare.
	for _, name := range []string{"CUSTOS_HOOK_POINT", "CUSTOS_JOB_ID", "CUSTOS_WORKSPACE", "CLAUDE_PROJECT_DIR"} {
		env = append(env, name+"="+own[name])
	}
	return env
}

// capped is a bytes.Buffer that keeps at most maxCapture bytes and swallows the
// rest, so a hook never blocks on a full pipe.
type capped struct {
	bytes.Buffer
	truncated bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := maxCapture - c.Len()
	if room < len(p) {
		c.truncated = true
		if room > 0 {
			c.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return c.Buffer.Write(p)
}
