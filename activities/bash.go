package activities

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/sandbox"
)

//go:embed bash.md
var bashDescription string

// bashTool is Bash as the model sees it: bash.md describes it, and the
// schema names exactly the fields of bashInput.
var bashTool = toolkit.ToolDef{
	Name:        api.BashActivity,
	Description: toolkit.Describe(bashDescription),
	Schema:      api.BashSchema,
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
	if err := toolkit.DecodeInput(req.Input, &in, "command"); err != nil {
		return toolkit.ErrorResult("Bash: %v", err), nil
	}
	cmd, err := in.command()
	if err != nil {
		return toolkit.ErrorResult("Bash: %v", err), nil
	}
	if cmd.unconfined, err = t.mayRun(ctx, req); err != nil {
		return toolkit.ErrorResult("Bash: %v", err), nil
	}

	max := toolkit.MaxOutput(req)
	// The sandbox keeps the head of each stream; the live copy kept here
	// also keeps the tail, where test failures and error summaries are, and
	// interleaves stdout and stderr in the order they came, as a terminal
	// would show them.
	combined := &combinedOutput{keep: max}
	ckpt := &bashCheckpoint{t: t, req: req, what: cmd.command}
	sreq := cmd.sandboxRequest(req, combined, max)
	sreq.BeforeMerge = ckpt.hook()
	release, err := toolkit.WorkspaceLanes.Acquire(ctx, req.Workspace) // a writing MCP server's call
	if err != nil {
		return api.ToolResult{}, fmt.Errorf("bash: %w", err)
	}
	res, err := t.runHeartbeating(ctx, sreq, cmd.command, combined)
	release()
	if res.Backend != "" {
		ckpt.unrecorded("the command ran without the overlay (it wrote to the workspace directly): what it changed is not recorded and cannot be taken back")
	}
	if len(res.HostConfig) > 0 || res.HostConfigUnchecked != "" || len(res.Withheld) > 0 {
		// Logged whatever comes next: a cancelled activity's result is lost.
		t.log().Warn("tool Bash: host config neutralised", "job", req.JobID, "call", req.CallID,
			"changes", hostConfigLines(res), "kept", res.HostConfigKept, "unchecked", res.HostConfigUnchecked)
	}
	if err != nil {
		if ctx.Err() != nil {
			// Cancelled or timed out as an activity: report that to
			// Temporal rather than dressing it up as a result.
			return api.ToolResult{}, fmt.Errorf("bash: %w", ctx.Err())
		}
		out := toolkit.ErrorResult("Bash: the sandbox could not run the command: %v", err)
		if toolkit.IsDiskFull(err) {
			out = toolkit.ErrorResult("Bash: the disk is full (%s): the sandbox could not run the command: %v", toolkit.DiskFullName(err), err)
		}
		if n := res.HostConfigNote(); n != "" {
			out.Output += "\n[host config: " + n + "]"
			out.HostConfig = hostConfigLines(res)
		}
		return out, nil
	}
	t.log().Info("tool Bash", "job", req.JobID, "exit", res.ExitCode, "killed", res.Killed,
		"reason", res.KillReason, "duration", res.Duration, "backend", res.Backend)
	observeBash(ctx, res)
	unapplied := false
	if (res.ExitCode != 0 || res.Unmerged != "") && res.Note == "" {
		text, _ := combined.Text(max)
		res.Note = toolkit.DiskFullNote(req.Workspace, text+res.Stdout+res.Stderr+res.Unmerged)
		// The command may have exited 0, but the workspace does not hold
		// what it wrote: that is a failure for the model.
		unapplied = res.Note != "" && res.Unmerged != ""
	}
	out := commandResult(res, combined, max, len(req.ReadDeny)+len(req.EditDeny) > 0)
	out.IsError = out.IsError || unapplied
	return out, nil
}

// bashCommand is a command Bash accepted to run.
type bashCommand struct {
	command    string
	timeout    time.Duration
	unconfined bool // run without OS isolation (see mayRun)
}

// command checks the input: a command, and a timeout in range.
func (in bashInput) command() (bashCommand, error) {
	if strings.TrimSpace(in.Command) == "" {
		return bashCommand{}, errors.New("command must not be empty")
	}
	timeout, err := in.timeout()
	if err != nil {
		return bashCommand{}, err
	}
	return bashCommand{command: in.Command, timeout: timeout}, nil
}

// mayRun says whether this worker runs the command, and whether it runs it
// unconfined; the error says why not.
func (t *Tools) mayRun(ctx context.Context, req api.ToolRequest) (unconfined bool, err error) {
	if t.Sandbox == nil {
		return false, errors.New("no sandbox is configured on this worker; commands cannot run")
	}
	unconfined = req.Unconfined && req.Sandbox.AllowUnsandboxed && !req.Sandbox.FailIfUnavailable
	if name, why := t.Sandbox.Backend(); name != sandbox.BackendBwrap && !unconfined {
		// No isolation, no command: unless the user allowed unconfined runs and a
		// person approved this one knowing it.
		return false, errors.New(sandbox.UnavailableHelp(why))
	}
	if a := toolkit.Attempt(ctx); a > 1 {
		return false, errors.New("the command was interrupted (the worker running it stopped) and may have partially run; it was not run again. Check its effects before retrying it.")
	}
	return unconfined, nil
}

// sandboxRequest runs the command with bash in the workspace, under the
// job's sandbox settings and deny rules, streaming its output into out and
// keeping limit bytes.
func (c bashCommand) sandboxRequest(req api.ToolRequest, out *combinedOutput, limit int) sandbox.Request {
	return sandbox.Request{
		Workspace:       req.Workspace,
		Argv:            []string{"bash", "-c", c.command},
		Timeout:         c.timeout,
		Network:         req.Sandbox.Network,
		Env:             req.Sandbox.Env,
		MaxOutput:       limit,
		Stdout:          out,
		Stderr:          out,
		ReadDeny:        req.ReadDeny,
		EditDeny:        req.EditDeny,
		AllowUnconfined: c.unconfined,
		Toolchains:      toolchainList(req.Sandbox.Toolchains),
		ToolchainsSet:   req.Sandbox.Toolchains != nil,
	}
}

// toolchainList is sandbox.toolchains as the sandbox takes it.
func toolchainList(tc *[]string) []string {
	if tc == nil {
		return nil
	}
	return *tc
}

// runHeartbeating runs sreq in the sandbox and heartbeats while the command
// runs, so a worker that dies mid-command is detected within the
// workflow's HeartbeatTimeout instead of the whole StartToCloseTimeout; a
// cancelled activity cancels ctx, which kills it.
func (t *Tools) runHeartbeating(ctx context.Context, sreq sandbox.Request, command string, out *combinedOutput) (sandbox.Result, error) {
	every := t.HeartbeatInterval
	if every <= 0 {
		// Often enough that an interrupt, which arrives with a heartbeat's
		// answer, kills the command within about a second.
		every = time.Second
	}
	begin := time.Now()
	stop := toolkit.HeartbeatEvery(ctx, every, func() any {
		return bashProgress{Command: command, OutputBytes: out.Total(), ElapsedMS: time.Since(begin).Milliseconds()}
	})
	res, err := t.Sandbox.Run(ctx, sreq)
	stop()
	return res, err
}

// commandResult is Bash's answer for a command that ran: its output and
// status within limit bytes, its exit code, and an error when it failed or
// was killed. With deny rules in force, a failure notes them.
func commandResult(res sandbox.Result, live *combinedOutput, limit int, denyRules bool) api.ToolResult {
	if res.ExitCode != 0 && res.Note == "" && denyRules {
		// Tell the model why a file may have refused it, so it can say
		// what it could not do instead of retrying.
		res.Note = denyRulesNote
	}
	out := formatBashResult(res, live, limit)
	code := res.ExitCode
	out.ExitCode = &code
	out.IsError = res.ExitCode != 0 || res.Killed
	out.HostConfig = hostConfigLines(res)
	return out
}

// hostConfigLines are the sandbox's HostConfig changes, one line each, and
// the directory that keeps what was set aside, for the job's record.
func hostConfigLines(res sandbox.Result) []string {
	var out []string
	for _, c := range res.HostConfig {
		out = append(out, c.String())
	}
	if res.HostConfigKept != "" {
		out = append(out, "kept in "+res.HostConfigKept)
	}
	if res.HostConfigUnchecked != "" {
		out = append(out, res.HostConfigUnchecked)
	}
	for _, c := range res.Withheld {
		out = append(out, "not applied as written: "+c.String())
	}
	return out
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
	if n := res.HostConfigNote(); n != "" {
		// A status line, so it is never cut with the output.
		status = append(status, "[host config: "+n+"]")
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
		body, truncated = toolkit.CapHeadTail(body, room)
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
		return toolkit.CapHeadTail(string(c.head)+string(c.tail), limit)
	}
	marker := toolkit.TruncMarker(limit, int(c.total))
	n := max(limit-len(marker)-2, 0)
	head := toolkit.CutUTF8(string(c.head), n/2)
	tail := string(c.tail)
	if want := n - len(head); want < len(tail) {
		i := len(tail) - want
		for i < len(tail) && !utf8.RuneStart(tail[i]) {
			i++
		}
		tail = tail[i:]
	}
	return head + toolkit.TruncMarker(len(head)+len(tail), int(c.total)) + "\n\n" + tail, true
}

// timeout is the command's timeout, by the rule the workflow sizes the
// activity's deadline with (api.CheckBashTimeout): the default when none is
// given; an error when out of range, which the tool refuses.
func (in bashInput) timeout() (time.Duration, error) {
	return api.CheckBashTimeout(in.Timeout)
}
