package activities

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/sandbox"
)

//go:embed bash.md
var bashDescription string

// bashTool is Bash as the model sees it: bash.md describes it, and the
// schema names exactly the fields of bashInput.
var bashTool = toolDef{
	name:        api.BashActivity,
	description: describe(bashDescription),
	schema:      `{"type":"object","properties":{"command":{"type":"string","description":"The command to run"},"timeout":{"type":"integer","minimum":1,"maximum":600000,"description":"Timeout in milliseconds (default 120000)"},"description":{"type":"string","description":"What the command does, in 5-10 words"}},"required":["command"],"additionalProperties":false}`,
}

type bashInput struct {
	Command     string `json:"command"`
	Timeout     *int   `json:"timeout,omitempty"`
	Description string `json:"description,omitempty"`
}

// bashProgress is Bash's heartbeat detail: enough to see in the Web UI that
// the command is alive and producing output.
type bashProgress struct {
	Command     string `json:"command"`
	OutputBytes int64  `json:"outputBytes"`
	ElapsedMS   int64  `json:"elapsedMs"`
}

// Bash runs `bash -c command` in the sandbox, in the workspace.
//
// Bash is at-most-once: the workflow schedules it without retries. Should an
// attempt > 1 reach it anyway (a misconfigured retry policy), it does not run
// the command a second time but reports that the first run was interrupted.
// A non-zero exit or a kill is a normal result with IsError set, not an
// activity failure.
func (t *Tools) Bash(ctx context.Context, req api.ToolRequest) (api.ToolResult, error) {
	var in bashInput
	if err := decodeInput(req.Input, &in, "command"); err != nil {
		return errorResult("Bash: %v", err), nil
	}
	if strings.TrimSpace(in.Command) == "" {
		return errorResult("Bash: command must not be empty"), nil
	}
	timeout, err := in.timeout()
	if err != nil {
		return errorResult("Bash: %v", err), nil
	}
	if t.Sandbox == nil {
		return errorResult("Bash: no sandbox is configured on this worker; commands cannot run"), nil
	}
	unconfined := req.Unconfined && req.Sandbox.AllowUnsandboxed && !req.Sandbox.FailIfUnavailable
	if name, why := t.Sandbox.Backend(); name != sandbox.BackendBwrap && !unconfined {
		// No isolation, no command: unless the user allowed unconfined
		// runs and a person approved this one knowing it (issue 8 §4).
		return errorResult("Bash: %s", sandbox.UnavailableHelp(why)), nil
	}
	if a := attempt(ctx); a > 1 {
		return errorResult("Bash: the command was interrupted (the worker running it stopped) and may have partially run; it was not run again. Check its effects before retrying it."), nil
	}

	max := maxOutput(req)
	// The sandbox keeps the head of each stream; the live copy kept here
	// also keeps the tail, where test failures and error summaries are, and
	// interleaves stdout and stderr in the order they came, as a terminal
	// would show them.
	combined := &combinedOutput{keep: max}
	sreq := sandbox.Request{
		Workspace: req.Workspace,
		Argv:      []string{"bash", "-c", in.Command},
		Timeout:   timeout,
		Network: sandbox.Network{
			AllowedDomains:    req.Sandbox.Network.AllowedDomains,
			DeniedDomains:     req.Sandbox.Network.DeniedDomains,
			AllowLocalBinding: req.Sandbox.Network.AllowLocalBinding,
		},
		Env:             req.Sandbox.Env,
		MaxOutput:       max,
		Stdout:          combined,
		Stderr:          combined,
		ReadDeny:        req.ReadDeny,
		EditDeny:        req.EditDeny,
		AllowUnconfined: unconfined,
	}

	// Heartbeat while the command runs, so a worker that dies mid-command is
	// detected within the workflow's HeartbeatTimeout instead of the whole
	// StartToCloseTimeout; a cancelled activity cancels ctx, which kills it.
	every := t.HeartbeatInterval
	if every <= 0 {
		every = 5 * time.Second
	}
	begin := time.Now()
	stop := heartbeatEvery(ctx, every, func() any {
		return bashProgress{Command: in.Command, OutputBytes: combined.Total(), ElapsedMS: time.Since(begin).Milliseconds()}
	})
	res, err := t.Sandbox.Run(ctx, sreq)
	stop()
	if err != nil {
		if ctx.Err() != nil {
			// Cancelled or timed out as an activity: report that to
			// Temporal rather than dressing it up as a result.
			return api.ToolResult{}, fmt.Errorf("bash: %w", ctx.Err())
		}
		return errorResult("Bash: the sandbox could not run the command: %v", err), nil
	}
	t.log().Info("tool Bash", "job", req.JobID, "exit", res.ExitCode, "killed", res.Killed,
		"reason", res.KillReason, "duration", res.Duration, "backend", res.Backend)
	observeBash(ctx, res)

	if res.ExitCode != 0 && res.Note == "" && len(req.ReadDeny)+len(req.EditDeny) > 0 {
		// Tell the model why a file may have refused it, so it can say
		// what it could not do instead of retrying.
		res.Note = denyRulesNote
	}
	out := formatBashResult(res, combined, max)
	code := res.ExitCode
	out.ExitCode = &code
	out.IsError = res.ExitCode != 0 || res.Killed
	return out, nil
}

// formatBashResult lays out the output, then status lines, within limit
// bytes: the status lines are always kept, the output is cut in the middle
// (its start and its end both matter). live is the streamed copy of the
// output; when the sandbox streamed nothing into it, the Result's own
// stdout and stderr are used, stderr under a label.
func formatBashResult(res sandbox.Result, live *combinedOutput, limit int) api.ToolResult {
	var status []string
	if res.Killed {
		reason := res.KillReason
		if reason == "" {
			reason = "killed"
		}
		status = append(status, fmt.Sprintf("[command killed: %s after %s]", reason, res.Duration.Round(time.Millisecond)))
	}
	if res.ExitCode != 0 {
		status = append(status, fmt.Sprintf("[exit code %d]", res.ExitCode))
	}
	streamed := live != nil && live.Total() > 0
	if res.Truncated && !streamed {
		status = append(status, "[the sandbox kept only part of the output]")
	}
	if res.Note != "" {
		status = append(status, "[note: "+res.Note+"]")
	}
	footer := strings.Join(status, "\n")
	room := limit
	if footer != "" {
		room -= len(footer) + 1
	}
	room = max(room, 0)

	var body string
	var truncated bool
	if streamed {
		body, truncated = live.Text(room)
	} else {
		body = res.Stdout
		if res.Stderr != "" {
			if body != "" && !strings.HasSuffix(body, "\n") {
				body += "\n"
			}
			if body != "" {
				body += "[stderr]\n"
			}
			body += res.Stderr
		}
		body, truncated = capHeadTail(body, room)
		truncated = truncated || res.Truncated
	}
	if body == "" && footer == "" {
		body = "(no output)"
	}
	text := body
	if footer != "" {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += footer
	}
	return api.ToolResult{Output: text, Truncated: truncated}
}

// combinedOutput receives a command's stdout and stderr as they are
// produced (from two goroutines) and keeps the first keep bytes and the
// last keep bytes, whatever the total: memory stays bounded under `yes`.
type combinedOutput struct {
	mu    sync.Mutex
	keep  int
	head  []byte
	tail  []byte
	total int64
}

func (c *combinedOutput) Write(p []byte) (int, error) {
	n := len(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(n)
	if room := c.keep - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*c.keep {
		c.tail = append([]byte(nil), c.tail[len(c.tail)-c.keep:]...)
	}
	return n, nil
}

// Total is how many bytes the command wrote so far.
func (c *combinedOutput) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Text returns the output within limit bytes; when it does not fit, its
// start and its end around a truncation marker giving the true total.
func (c *combinedOutput) Text(limit int) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.total == int64(len(c.head)+len(c.tail)) {
		return capHeadTail(string(c.head)+string(c.tail), limit)
	}
	marker := truncMarker(limit, int(c.total))
	n := max(limit-len(marker)-2, 0)
	head := cutUTF8(string(c.head), n/2)
	tail := string(c.tail)
	if want := n - len(head); want < len(tail) {
		i := len(tail) - want
		for i < len(tail) && !utf8.RuneStart(tail[i]) {
			i++
		}
		tail = tail[i:]
	}
	return head + truncMarker(len(head)+len(tail), int(c.total)) + "\n\n" + tail, true
}

// timeout is the command's timeout, by the rule the workflow sizes the
// activity's deadline with (api.CheckBashTimeout): the default when none is
// given; an error when out of range, which the tool refuses.
func (in bashInput) timeout() (time.Duration, error) {
	return api.CheckBashTimeout(in.Timeout)
}
