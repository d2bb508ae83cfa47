package cli

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/jobstart"
	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/pathguard"
	"github.com/custos-dev/custos/settingsfile"
	"github.com/custos-dev/custos/workflows"
)

func (a *App) run(ctx context.Context, args []string) error {
	fs := newFlagSet("run", a.Stderr)
	workspace := fs.String("workspace", ".", "the job's workspace")
	mode := fs.String("mode", "", "permission mode: default, acceptEdits, dontAsk, plan, bypass (default: settings)")
	timeout := fs.Duration("approval-timeout", workflows.DefaultApprovalTimeout, "how long a call waits for a person before it is denied")
	maxTurns := fs.Int("max-turns", workflows.DefaultMaxTurns, "turn limit")
	detach := fs.Bool("detach", false, "start the job, print its ID and return")
	maxTokens := fs.Int("max-tokens", 0, "token budget of the whole job (0: the settings' conversation.budget); a job that reaches it waits for a person to raise it")
	once := fs.Bool("once", false, "end the job at its first answer instead of waiting for the next message")
	idle := fs.Duration("idle-limit", 0, "how long the job waits for a message before it ends (default: settings conversation.idleLimit, else 7 days)")
	id := fs.String("id", "", "workflow ID (default: custos-<time>-<random>)")
	model := fs.String("model", cmp.Or(os.Getenv("OPENAI_MODEL"), app.DefaultModel), "model name (OPENAI_MODEL)")
	baseURL := fs.String("base-url", os.Getenv("OPENAI_BASE_URL"), "OpenAI-compatible endpoint (OPENAI_BASE_URL)")
	host := fs.String("host", "", "run on this worker host (default: the live host whose workspace roots hold --workspace)")
	window := fs.Int("context-window", 0, "the model's context window in tokens (default: CUSTOS_CONTEXT_WINDOW, else known for the model, else 128000)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	task := strings.TrimSpace(strings.Join(pos, " "))
	if task == "" {
		return usagef(`run: say what to do, e.g. starter run "fix the failing test"`)
	}
	if *mode != "" {
		if _, err := approval.ParseMode(*mode); err != nil {
			return usagef("run: %v", err)
		}
	}
	ws, err := pathguard.CanonicalWorkspace(*workspace)
	if err != nil {
		return err
	}
	if *id == "" {
		*id = newJobID()
	}
	if err := a.offerTrust(ws); err != nil {
		return err
	}
	s, err := a.connectOrEmbed(ctx, app.Options{BaseURL: *baseURL, APIKey: os.Getenv("OPENAI_API_KEY"), Model: *model})
	if err != nil {
		return err
	}
	defer s.Close()
	if s.workers == nil && *host == "" {
		if *host, err = app.RouteJob(ctx, s.client, ws); err != nil {
			return err
		}
	}
	in := workflows.JobInput{Task: task, Workspace: ws, Mode: approval.Mode(*mode), ApprovalTimeout: *timeout, MaxTurns: *maxTurns,
		ContextWindow: *window, Host: *host, WorkDir: workDirIn(ws), Owner: identities(os.Getenv(EnvIdentity)),
		Once: *once, IdleLimit: *idle, MaxTokens: *maxTokens}
	run, err := jobstart.Start(ctx, s.client, *id, in, jobstart.Options{})
	if err != nil {
		return err
	}
	if *host != "" {
		fmt.Fprintf(a.Stderr, "custos: job %s started in %s on host %s\n", run.GetID(), ws, *host)
	} else {
		fmt.Fprintf(a.Stderr, "custos: job %s started in %s\n", run.GetID(), ws)
	}
	if *detach {
		if s.workers != nil {
			fmt.Fprintln(a.Stderr, "custos: note: the worker runs in this process; the job continues when a worker is running (go run ./worker)")
		}
		fmt.Fprintln(a.Stdout, run.GetID())
		return nil
	}
	a.inProcess = s.workers != nil
	return a.follow(ctx, s.client, run.GetID(), 0)
}

// EnvIdentity names the person starting jobs on the channels, for example
// their Slack user ID (comma-separated when several): their own answers
// never count towards a call's approvals (settings "approvals").
const EnvIdentity = "CUSTOS_IDENTITY"

// identities splits a CUSTOS_IDENTITY value.
func identities(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// workDirIn is this process's working directory relative to the workspace
// ws when it lies inside it ("" otherwise, or at its root): the project's
// instructions are read from ws down to there.
func workDirIn(ws string) string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		wd = real
	}
	rel, ok := hostfs.Within(ws, wd)
	if !ok || rel == "." {
		return ""
	}
	return filepath.ToSlash(rel)
}

func newJobID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("custos-%s-%s", time.Now().UTC().Format("20060102-150405"), hex.EncodeToString(b))
}

// follow prints the job's events as they happen and, on a terminal, prompts
// for each pending approval. It returns when the job ends.
func (a *App) follow(ctx context.Context, c client.Client, id string, since int) error {
	stop := make(chan struct{})
	defer close(stop)
	lines := a.typedLines(stop)
	liveCtx, stopLive := context.WithCancel(ctx)
	defer stopLive()
	a.live = a.startLive(liveCtx, id)
	defer a.live.close()
	done := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		// GetWorkflow follows continue-as-new to the final run.
		var res workflows.JobResult
		err := c.GetWorkflow(ctx, id, "").Get(ctx, &res)
		if err == nil {
			a.lastResult = &res
		}
		done <- err
		close(finished)
	}()
	prompted := map[string]bool{}
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	// Lines typed while the job works are messages for it (steering).
	steering := lines
	answered := ""
	for {
		select {
		case line, ok := <-steering:
			if !ok {
				steering = nil
				continue
			}
			a.steer(ctx, c, id, line)
			continue
		case err := <-done:
			return a.jobDone(ctx, c, id, since, err)
		case <-ctx.Done():
			a.stopped(id)
			return nil
		case <-a.live.ready():
			a.live.print(func() { since = a.printEvents(ctx, c, id, since) })
			continue
		case <-tick.C:
		}
		since = a.printEvents(ctx, c, id, since)
		st, err := queryStatus(ctx, c, id)
		if err != nil {
			continue
		}
		if key := fmt.Sprint(st.Runs, st.Turn, st.Messages); waitsForMessage(st) && key != answered {
			answered = key
			since = a.printEvents(ctx, c, id, since)
			more, err := a.converse(ctx, c, id, st, steering)
			if !more || err != nil {
				return err
			}
			continue
		}
		if !a.Interactive {
			continue
		}
		if since, err = a.promptPending(ctx, c, id, st, since, prompted, lines, finished); err != nil {
			return err
		}
	}
}

// promptPending prompts, on a terminal, for each call of st not prompted
// for yet, and returns the last event printed.
func (a *App) promptPending(ctx context.Context, c client.Client, id string, st workflows.Status, since int, prompted map[string]bool, lines <-chan string, finished <-chan struct{}) (int, error) {
	for _, p := range st.Pending {
		if prompted[p.CallID] {
			continue
		}
		prompted[p.CallID] = true
		// The events that led to this call (the model's turn, the call,
		// the ask) come before its prompt.
		since = a.printEvents(ctx, c, id, since)
		if err := a.prompt(ctx, c, id, p, lines, finished); err != nil {
			return since, err
		}
		// Show what happened meanwhile before the next prompt.
		since = a.printEvents(ctx, c, id, since)
	}
	return since, nil
}

// jobDone is what follow says when the job completes (err: how it failed).
func (a *App) jobDone(ctx context.Context, c client.Client, id string, since int, err error) error {
	if ctx.Err() != nil {
		// Get ended because we stopped, not because the job did.
		a.stopped(id)
		return nil
	}
	a.printEvents(ctx, c, id, since)
	if err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	if r := a.lastResult.Reason; r == "ended" || r == "idle" {
		// Its answers were shown as they came.
		fmt.Fprintf(a.Stderr, "custos: job %s ended after %d turns (%d tokens)\n", id, a.lastResult.Turns, a.lastResult.Usage.TotalTokens)
		return nil
	}
	if a.answeredTurn != a.lastResult.Turns {
		a.printAnswer(a.lastResult.Answer)
	}
	fmt.Fprintf(a.Stderr, "custos: done after %d turns (%d tokens)\n", a.lastResult.Turns, a.lastResult.Usage.TotalTokens)
	if st, err := queryStatus(ctx, c, id); err == nil {
		files := st.Files.Or(st.Workspace, id)
		fmt.Fprintf(a.Stderr, "custos: transcript %s, audit %s (starter audit %s)\n",
			display.Line(files.Transcript, 0), display.Line(files.Audit, 0), id)
	}
	return nil
}

func (a *App) stopped(id string) {
	if a.inProcess {
		// The server and worker stop with this process: the job is saved
		// but does not go on by itself.
		fmt.Fprintf(a.Stderr, "\ncustos: stopped; job %s is saved and paused until a worker runs; resume it with: starter follow %s\n", id, id)
		return
	}
	fmt.Fprintf(a.Stderr, "\ncustos: stopped following; the job goes on. Resume with: starter follow %s\n", id)
}

// typedLines are the lines typed at the terminal until stop is closed; nil
// when the session is not interactive (nobody is prompted).
func (a *App) typedLines(stop <-chan struct{}) <-chan string {
	if !a.Interactive {
		return nil
	}
	lines := make(chan string)
	go readLines(a.Stdin, lines, stop)
	return lines
}

// readLines sends the lines of r to lines until r ends (then closes lines) or
// stop is closed.
func readLines(r io.Reader, lines chan<- string, stop <-chan struct{}) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		select {
		case lines <- sc.Text():
		case <-stop:
			return
		}
	}
	close(lines)
}

// printEvents prints events after since and returns the last one seen.
func (a *App) printEvents(ctx context.Context, c client.Client, id string, since int) int {
	v, err := c.QueryWorkflow(ctx, id, "", workflows.EventsQuery, since)
	if err != nil {
		return since
	}
	var evs []workflows.Event
	if v.Get(&evs) != nil {
		return since
	}
	for _, e := range evs {
		// Events restart from the carried sequence after continue-as-new;
		// anything at or below since was printed already.
		if e.Seq <= since {
			continue
		}
		if line := a.live.eventLine(e, formatEvent(e)); line != "" {
			fmt.Fprintln(a.Stdout, line)
		}
		if e.Kind == "answer" {
			// Every answer of a conversation, also one the job went past
			// at once for a message that was waiting.
			a.printAnswer(e.Text)
			a.answeredTurn = e.Turn
		}
		if e.Kind == "ask" && !a.Interactive {
			// No prompt here: say how to decide from elsewhere.
			fmt.Fprintf(a.Stdout, "      decide with: starter approve %s %s   |   starter deny %s %s\n", id, shownID(e.CallID), id, shownID(e.CallID))
		}
		since = e.Seq
	}
	return since
}

// callsSuffix is how the workflow marks a model turn that calls tools.
var callsSuffix = regexp.MustCompile(`(^|\s\()calls [\w, ]+\)?$`)

// formatEvent is one line of a job's progress. What the model and the tools
// wrote (summaries, results, reasons, call IDs) is shown through package
// display, so an escape sequence in it is seen, never run by the terminal.
func formatEvent(e workflows.Event) string {
	switch e.Kind {
	case "result":
		// A glimpse of the output: its first line, tabs kept (Read numbers
		// its lines with them).
		first, _, _ := strings.Cut(e.Text, "\n")
		e.Text = display.Safe(first)
	case "model", "call", "decision", "ask":
		e.Text = display.SafeLine(e.Text)
	default:
		e.Text = display.Safe(e.Text) // the job's own notes may span lines
	}
	e.CallID = shownID(e.CallID)
	switch e.Kind {
	case "model":
		if !callsSuffix.MatchString(e.Text) {
			// A turn without tool calls is the final answer, printed in
			// full when the job ends.
			return fmt.Sprintf("[turn %d] model: final answer", e.Turn)
		}
		return fmt.Sprintf("[turn %d] model: %s", e.Turn, e.Text)
	case "call":
		return fmt.Sprintf("  → %s %s", e.CallID, e.Text)
	case "decision":
		return fmt.Sprintf("    %s: %s", e.CallID, e.Text)
	case "ask":
		return fmt.Sprintf("    %s: waiting for approval: %s", e.CallID, e.Text)
	case "result":
		return fmt.Sprintf("    %s ← %s", e.CallID, strings.TrimSpace(e.Text))
	case "answer":
		return ""
	default:
		return fmt.Sprintf("  [%s] %s", e.Kind, e.Text)
	}
}

// typedAnswer is the decision a line typed at the prompt means: allow, deny,
// always, never, view (show the input), or "" for anything else.
func typedAnswer(line string) string {
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return "allow"
	case "n", "no":
		return "deny"
	case "a", "always":
		return "always"
	case "never":
		return "never"
	case "v", "view":
		return "view"
	}
	return ""
}

// prompt asks the person at the terminal about one pending call. It gives up
// when the call is decided elsewhere (Web UI, another CLI), when its deadline
// passes, or when the job ends.
func (a *App) prompt(ctx context.Context, c client.Client, id string, p workflows.PendingAsk, lines <-chan string, finished <-chan struct{}) error {
	// Lines typed before the question was asked answer nothing: a stray "y"
	// must not approve a call its author has not seen.
	if closed := drain(lines); closed {
		return nil
	}
	deadline := time.NewTimer(time.Until(p.Deadline))
	defer deadline.Stop()
	check := time.NewTicker(time.Second)
	defer check.Stop()
	shown := false
	for {
		left := time.Until(p.Deadline).Round(time.Second)
		if left <= 0 {
			fmt.Fprintf(a.Stdout, "    %s: deadline passed; denied\n", shownID(p.CallID))
			return nil
		}
		if !shown {
			// What the call would do, once: the diff of a Write or Edit,
			// the parsed commands of a Bash call.
			if p.Preview != "" {
				fmt.Fprintln(a.Stdout, indent(display.Safe(p.Preview), "    │ "))
			}
			shown = true
		}
		a.askLine(p, left)
		line, ok := a.awaitLine(ctx, c, id, p.CallID, lines, finished, deadline.C, check.C)
		if !ok {
			return nil
		}
		if len(p.Quorum) > 0 {
			if d := typedAnswer(line); d != "deny" && d != "view" && strings.TrimSpace(line) != "" {
				fmt.Fprintf(a.Stdout, "    %s needs approvals from verified people (Slack, a deployed inbox); from this terminal you may only deny it\n", shownID(p.CallID))
				continue
			}
		}
		decision, grant, bad := typedGrant(line)
		if bad != "" {
			fmt.Fprintf(a.Stdout, "    %s\n", bad)
			continue
		}
		if grant == nil {
			decision = typedAnswer(line)
		}
		if decision == "view" {
			fmt.Fprintln(a.Stdout, viewInput(p.Input))
			continue
		}
		if decision == "" {
			continue // empty or unknown: ask again, with the countdown updated
		}
		// First answer wins across channels: the job says whether this one
		// counted.
		res, err := sendDecision(ctx, c, id, workflows.ApprovalDecision{CallID: p.CallID, Decision: decision,
			By: app.OSUser(), Channel: "terminal", Grant: grant})
		if errors.Is(err, errNotApplied) {
			fmt.Fprintf(a.Stdout, "    %s: %s\n", shownID(p.CallID), display.SafeLine(err.Error()))
			if grant != nil && !strings.Contains(err.Error(), "already ") {
				continue // the grant would not hold; the call still waits
			}
			return nil
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(a.Stdout, "    %s: %s\n", shownID(p.CallID), outcomeText(res))
		if res.Grant != nil {
			fmt.Fprintf(a.Stdout, "    granted: %s (revoke: starter revoke %s %s)\n", grantText(*res.Grant), id, shownID(res.Grant.ID))
		}
		return nil
	}
}

// askLine is the question for a waiting call. A call that needs verified
// people's approvals is offered only what this terminal's answer can do.
func (a *App) askLine(p workflows.PendingAsk, left time.Duration) {
	reason := ""
	if p.Reason != "" {
		reason = " (" + display.Line(p.Reason, maxReason) + ")"
	}
	if len(p.Quorum) > 0 {
		fmt.Fprintf(a.Stdout, "? %s%s — needs approvals from verified people (still %s); here you may [n]o deny it or [v]iew it (denied in %s): ",
			display.SafeLine(p.Summary), reason, display.Line(workflows.QuorumNeeded(p.Quorum), maxReason), left)
		return
	}
	fmt.Fprintf(a.Stdout, "? %s%s — allow? [y]es [n]o [a]lways [v]iew, or 'never'%s (denied in %s): ",
		display.SafeLine(p.Summary), reason, grantHint(p), left)
}

// awaitLine waits for the next line typed at the prompt. It reports false,
// having said why, when there will be none for this call: stdin closed (the
// call is left to other approvers), the deadline passed, the job finished,
// the command was interrupted, or the call was decided elsewhere.
func (a *App) awaitLine(ctx context.Context, c client.Client, id, callID string, lines <-chan string, finished <-chan struct{}, deadline <-chan time.Time, check <-chan time.Time) (string, bool) {
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				fmt.Fprintln(a.Stdout)
			}
			return l, ok
		case <-deadline:
			fmt.Fprintf(a.Stdout, "\n    %s: no answer in time; denied\n", shownID(callID))
			return "", false
		case <-finished:
			fmt.Fprintln(a.Stdout)
			return "", false
		case <-ctx.Done():
			fmt.Fprintln(a.Stdout)
			return "", false
		case <-check:
			if st, err := queryStatus(ctx, c, id); err == nil && !hasPending(st, callID) {
				fmt.Fprintf(a.Stdout, "\n    %s was decided elsewhere\n", shownID(callID))
				return "", false
			}
		}
	}
}

// drain discards the lines already typed and reports whether input ended.
func drain(lines <-chan string) (closed bool) {
	for {
		select {
		case _, ok := <-lines:
			if !ok {
				return true
			}
		default:
			return false
		}
	}
}

func hasPending(st workflows.Status, callID string) bool {
	for _, p := range st.Pending {
		if p.CallID == callID {
			return true
		}
	}
	return false
}

func queryStatus(ctx context.Context, c client.Client, id string) (workflows.Status, error) {
	var st workflows.Status
	v, err := c.QueryWorkflow(ctx, id, "", workflows.StatusQuery)
	if err != nil {
		return st, err
	}
	return st, v.Get(&st)
}

func firstLineOf(s string, n int) string { return jobstart.FirstLine(s, n) }

// offerTrust tells what an untrusted workspace's settings would widen and, on
// a terminal, asks whether to trust the workspace before the job starts.
func (a *App) offerTrust(ws string) error {
	cfg, err := os.UserConfigDir()
	if err != nil {
		return nil // no user settings: nothing to trust with
	}
	loaded, err := settingsfile.Load(cfg, ws)
	if err != nil {
		return err // a broken settings file stops here, before any job
	}
	if len(loaded.Ignored) == 0 {
		return nil
	}
	warnIgnored(a.Stderr, ws, loaded.Ignored)
	if !a.Interactive {
		return nil
	}
	fmt.Fprintf(a.Stdout, "? Trust %s, so that its settings apply in full (hooks run on this machine)? [y/N]: ", ws)
	line, _ := readLine(a.Stdin)
	if answer := strings.ToLower(strings.TrimSpace(line)); answer != "y" && answer != "yes" {
		fmt.Fprintln(a.Stdout, "    not trusted: the job runs with the narrowed settings")
		return nil
	}
	if err := settingsfile.Trust(cfg, ws); err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "    trusted %s\n", ws)
	return nil
}

// readLine reads one line a byte at a time, so nothing after it is taken
// from the reader the prompts use later.
func readLine(r io.Reader) (string, error) {
	var b strings.Builder
	buf := make([]byte, 1)
	for {
		n, err := r.Read(buf)
		if n == 1 {
			if buf[0] == '\n' {
				return b.String(), nil
			}
			b.WriteByte(buf[0])
		}
		if err != nil {
			return b.String(), err
		}
	}
}
