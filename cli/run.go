package cli

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
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
	"github.com/custos-dev/custos/jobevents"
	"github.com/custos-dev/custos/jobstart"
	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/pathguard"
	"github.com/custos-dev/custos/settingsfile"
	"github.com/custos-dev/custos/workflows/jobapi"
)

func (a *App) run(ctx context.Context, args []string) error {
	fs := newFlagSet("run", a.Stderr)
	workspace := fs.String("workspace", ".", "the job's workspace")
	mode := fs.String("mode", "", "permission mode: default, acceptEdits, dontAsk, plan, bypass (default: settings)")
	timeout := fs.Duration("approval-timeout", jobapi.DefaultApprovalTimeout, "how long a call waits for a person before it is denied")
	maxTurns := fs.Int("max-turns", jobapi.DefaultMaxTurns, "turn limit")
	detach := fs.Bool("detach", false, "start the job, print its ID and return")
	maxTokens := fs.Int("max-tokens", 0, "token budget of the whole job (0: the settings' conversation.budget); a job that reaches it waits for a person to raise it")
	once := fs.Bool("once", false, "end the job at its first answer instead of waiting for the next message")
	idle := fs.Duration("idle-limit", 0, "how long the job waits for a message before it ends (default: settings conversation.idleLimit, else 7 days)")
	id := fs.String("id", "", "workflow ID (default: custos-<time>-<random>)")
	model := fs.String("model", cmp.Or(os.Getenv("OPENAI_MODEL"), app.DefaultModel), "model name (OPENAI_MODEL)")
	baseURL := fs.String("base-url", os.Getenv("OPENAI_BASE_URL"), "OpenAI-compatible endpoint (OPENAI_BASE_URL)")
	host := fs.String("host", "", "run on this worker host (default: the live host whose workspace roots hold --workspace)")
	window := fs.Int("context-window", 0, "the model's context window in tokens (default: CUSTOS_CONTEXT_WINDOW, else known for the model, else 128000)")
	jsonOut := jsonFlag(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	a.useJSON(*jsonOut)
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
	if err := bypassAllowed("run", ws, approval.Mode(*mode)); err != nil {
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
	in := jobapi.JobInput{Task: task, Workspace: ws, Mode: approval.Mode(*mode), ApprovalTimeout: *timeout, MaxTurns: *maxTurns,
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
		if a.json {
			a.out.render(jobevents.Job{Job: run.GetID(), Workspace: ws, Host: *host})
			return nil
		}
		fmt.Fprintln(a.Stdout, run.GetID())
		return nil
	}
	a.inProcess = s.workers != nil
	a.started = &jobevents.Job{Job: run.GetID(), Workspace: ws, Host: *host}
	return a.follow(ctx, s.client, run.GetID(), 0)
}

// jobEvent renders the Job event that begins --json's events: the job
// run started, or the followed job's status.
func (a *App) jobEvent(ctx context.Context, c client.Client, id string) error {
	if !a.json {
		return nil
	}
	if a.started != nil {
		a.out.render(*a.started)
		return nil
	}
	st, err := queryStatus(ctx, c, id)
	if err != nil {
		return fmt.Errorf("follow %s: %w", id, err)
	}
	a.out.render(jobevents.JobOf(id, st))
	return nil
}

// jsonFlag is --json of run, say and follow.
func jsonFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("json", false, "newline-delimited JSON events on stdout (docs/automation.md); messages for people on stderr; nobody is prompted")
}

// useJSON makes follow render JSON lines and never read stdin: a call
// that needs a person waits for the other channels or its timeout.
func (a *App) useJSON(on bool) {
	if on {
		a.json, a.Interactive = true, false
		a.out = &jsonLines{out: a.Stdout, hint: a.Stderr}
	}
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

// follow shows the job's events as they happen and, on a terminal, prompts
// for each pending approval. It returns when the job ends, or has answered
// and waits for the next message; a job that did not answer is a jobExit.
func (a *App) follow(ctx context.Context, c client.Client, id string, since int) error {
	stop := make(chan struct{})
	defer close(stop)
	lines := a.typedLines(stop)
	liveCtx, stopLive := context.WithCancel(ctx)
	defer stopLive()
	if a.out == nil {
		a.out = &terminal{out: a.Stdout, job: id, interactive: a.Interactive}
	}
	if jl, ok := a.out.(*jsonLines); ok {
		jl.job = id
	}
	a.src = a.newSource(liveCtx, c, id, since)
	defer a.src.Close()
	if err := a.jobEvent(ctx, c, id); err != nil {
		return err
	}
	done, finished := awaitJob(ctx, c, id)
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
		case r := <-done:
			return a.jobDone(ctx, c, id, r)
		case <-ctx.Done():
			a.stopped(id)
			return nil
		case <-a.src.Ready():
			a.show(a.src.Live(ctx))
			continue
		case <-tick.C:
		}
		a.printEvents(ctx)
		st, err := queryStatus(ctx, c, id)
		if err != nil {
			continue
		}
		if key := jobevents.StatusKey(st); waitsForMessage(st) && key != answered {
			answered = key
			a.printEvents(ctx)
			more, err := a.converse(ctx, c, id, st, steering)
			if !more || err != nil {
				return err
			}
			continue
		}
		if !a.Interactive {
			continue
		}
		if err = a.promptPending(ctx, c, id, st, prompted, lines, finished); err != nil {
			return err
		}
	}
}

// awaitJob delivers the job's outcome on done and closes finished when it
// completes, so a prompt waiting for a line gives up then.
func awaitJob(ctx context.Context, c client.Client, id string) (<-chan jobevents.Outcome, <-chan struct{}) {
	done := make(chan jobevents.Outcome, 1)
	finished := make(chan struct{})
	awaited := jobevents.Await(ctx, c, id)
	go func() {
		select {
		case r := <-awaited:
			done <- r
			close(finished)
		case <-ctx.Done():
		}
	}()
	return done, finished
}

// promptPending prompts, on a terminal, for each call of st not prompted
// for yet.
func (a *App) promptPending(ctx context.Context, c client.Client, id string, st jobapi.Status, prompted map[string]bool, lines <-chan string, finished <-chan struct{}) error {
	for _, p := range st.Pending {
		if prompted[p.CallID] {
			continue
		}
		prompted[p.CallID] = true
		// The events that led to this call (the model's turn, the call,
		// the ask) come before its prompt.
		a.printEvents(ctx)
		if err := a.prompt(ctx, c, id, p, lines, finished); err != nil {
			return err
		}
		// Show what happened meanwhile before the next prompt.
		a.printEvents(ctx)
	}
	return nil
}

// jobDone is what follow says when the job completes: its last events and
// answer, then how it ended (a jobExit unless it answered).
func (a *App) jobDone(ctx context.Context, c client.Client, id string, r jobevents.Outcome) error {
	if ctx.Err() != nil {
		// Get ended because we stopped, not because the job did.
		a.stopped(id)
		return nil
	}
	a.printEvents(ctx)
	res := jobevents.Finished(ctx, c, id, r.Result, r.Err)
	defer a.out.render(res)
	if r.Err != nil {
		return jobExit{res.Status, fmt.Errorf("job %s: %w", id, r.Err)}
	}
	if res.Status == jobevents.StatusEnded || res.Status == jobevents.StatusBudget {
		// Its answers were shown as they came.
		fmt.Fprintf(a.Stderr, "custos: job %s ended after %d turns (%d tokens)\n", id, res.Turns, res.Usage.TotalTokens)
		return exitFor(res)
	}
	a.show(a.src.NewAnswer(res.Answer, res.Turns))
	fmt.Fprintf(a.Stderr, "custos: done after %d turns (%d tokens)\n", res.Turns, res.Usage.TotalTokens)
	if st, err := queryStatus(ctx, c, id); err == nil {
		files := st.Files.Or(st.Workspace, id)
		fmt.Fprintf(a.Stderr, "custos: transcript %s, audit %s (starter audit %s)\n",
			display.Line(files.Transcript, 0), display.Line(files.Audit, 0), id)
	}
	return exitFor(res)
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

// printEvents shows the journal's new events.
func (a *App) printEvents(ctx context.Context) { a.show(a.src.Journal(ctx)) }

// callsSuffix is how the workflow marks a model turn that calls tools.
var callsSuffix = regexp.MustCompile(`(^|\s\()calls [\w, ]+\)?$`)

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
func (a *App) prompt(ctx context.Context, c client.Client, id string, p jobapi.PendingAsk, lines <-chan string, finished <-chan struct{}) error {
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
		res, err := sendDecision(ctx, c, id, jobapi.ApprovalDecision{CallID: p.CallID, Decision: decision,
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
func (a *App) askLine(p jobapi.PendingAsk, left time.Duration) {
	reason := ""
	if p.Reason != "" {
		reason = " (" + display.Line(p.Reason, maxReason) + ")"
	}
	if len(p.Quorum) > 0 {
		fmt.Fprintf(a.Stdout, "? %s%s — needs approvals from verified people (still %s); here you may [n]o deny it or [v]iew it (denied in %s): ",
			display.SafeLine(p.Summary), reason, display.Line(jobapi.QuorumNeeded(p.Quorum), maxReason), left)
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

func hasPending(st jobapi.Status, callID string) bool {
	for _, p := range st.Pending {
		if p.CallID == callID {
			return true
		}
	}
	return false
}

func queryStatus(ctx context.Context, c client.Client, id string) (jobapi.Status, error) {
	var st jobapi.Status
	v, err := c.QueryWorkflow(ctx, id, "", jobapi.StatusQuery)
	if err != nil {
		return st, err
	}
	return st, v.Get(&st)
}

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

// bypassAllowed refuses bypass (asked for, or the settings' defaultMode)
// before any job starts when the settings disable it; the job's own start
// refuses it too, on whatever host it runs.
func bypassAllowed(cmd, ws string, m approval.Mode) error {
	cfg, err := os.UserConfigDir()
	if err != nil {
		return nil
	}
	loaded, err := settingsfile.Load(cfg, ws)
	if err != nil {
		return err
	}
	if _, err := approval.ResolveModeIn(m, loaded.Settings); err != nil {
		return usagef("%s: %v", cmd, err)
	}
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

// Exit codes of run, say and follow (docs/automation.md).
const (
	// ExitAnswered: the job answered (and waits for a message, or ended).
	ExitAnswered = 0
	// ExitError: starter itself failed (no server, a refused request).
	ExitError = 1
	// ExitUsage: the command line is wrong; nothing was started.
	ExitUsage = 2
	// ExitFailed: the job's workflow failed, was canceled, terminated or
	// timed out.
	ExitFailed = 3
	// ExitStopped: the job's turn limit stopped the model, or the job was
	// ended while its token budget was reached.
	ExitStopped = 4
)

// jobExit is a followed job that did not answer: its status names the
// exit code.
type jobExit struct {
	status string
	err    error
}

func (e jobExit) Error() string { return e.err.Error() }
func (e jobExit) Unwrap() error { return e.err }

func (e jobExit) code() int {
	switch e.status {
	case jobevents.StatusFailed:
		return ExitFailed
	case jobevents.StatusMaxTurns, jobevents.StatusBudget:
		return ExitStopped
	}
	return ExitError
}

// exitFor is the error a job's result makes follow return: nil when it
// answered or was ended.
func exitFor(r jobevents.Result) error {
	switch r.Status {
	case jobevents.StatusMaxTurns:
		return jobExit{r.Status, fmt.Errorf("job %s was stopped by its turn limit after %d turns", r.Job, r.Turns)}
	case jobevents.StatusBudget:
		return jobExit{r.Status, fmt.Errorf("job %s ended with its token budget reached (%d tokens)", r.Job, r.Usage.TotalTokens)}
	case jobevents.StatusFailed:
		return jobExit{r.Status, fmt.Errorf("job %s failed: %s", r.Job, r.Error)}
	}
	return nil
}
