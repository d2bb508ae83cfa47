package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/workflows/details"
	"github.com/custos-dev/custos/workflows/editorjob"
	"github.com/custos-dev/custos/workflows/granting"
	"github.com/custos-dev/custos/workflows/mcpcalls"
	"github.com/custos-dev/custos/workflows/notices"
	"github.com/custos-dev/custos/workflows/parking"
)

// Agent is the workflow's host: it carries what the worker provides in Go
// rather than in workflow input, the system hooks. Register puts its Run on a
// worker under WorkflowName.
type Agent struct {
	// Hooks holds system hooks (Go functions, run inside workflow code, so
	// they must be deterministic). Nil means approval.SystemHooks(), as on
	// every worker, so a replayer needs nothing more.
	Hooks *hooks.Registry
}

// Registrar is what a workflow is registered with: a worker, a
// worker.WorkflowReplayer, a test environment.
type Registrar interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}

// Register registers the agent's workflow under WorkflowName, the one way
// workers do, so that a replayer registered by it decides as the worker
// did. Versioning is a worker option (the deployment's default behaviour),
// not a registration one, and plays no part in replay.
func (a *Agent) Register(r Registrar) {
	r.RegisterWorkflowWithOptions(a.Run, workflow.RegisterOptions{Name: WorkflowName})
}

// job is the in-memory state of one workflow run.
type job struct {
	agent  *Agent
	in     JobInput
	st     *State
	id     string
	policy *approval.Policy
	logger log.Logger

	phase   string
	pending map[string]*pendingCall
	order   []string // pending call IDs in the order they were asked
	// closed remembers how calls of this run left layer 5, so a late or
	// duplicate answer is told what happened to the call.
	closed map[string]DecideResult
	// callIDs are the job's identities of the calls of this run (see
	// jobCallIDs): no two calls of a job answer to one ID.
	callIDs map[string]bool
	// recent are the last calls that left layer 5, newest last, so the Web
	// UI shows what became of a call instead of dropping it silently.
	recent   []DecideResult
	events   []Event
	runTurns int
	// bg counts notices still running; a run waits (briefly) for them
	// before it ends, so a decided call's message is updated.
	bg notices.Background
	// retryNow carries the retry Update to a parked model call.
	retryNow workflow.Channel
	// lastFinish is the finish_reason of the last model answer.
	lastFinish string
	// granted is what the run knows of the grants (workflows/granting).
	granted granting.Keeper

	// conv is false in runs that began before conversations (GetVersion):
	// those end at the first answer.
	conv bool
	// stopWork cancels the running model call and tools (nil when the
	// job waits); interruptedBy is who interrupted them; running the
	// tools that run now, by call ID, in the order they started.
	stopWork      workflow.CancelFunc
	interruptedBy *Interrupt
	running       map[string]string
	runningOrder  []string
	// endReq is the end Update, once asked.
	endReq *End
	// rewinding is set while the rewind Update cuts the conversation: the
	// job does not leave its wait for a message until the cut is done.
	rewinding bool
	// root is the run's context, for what outlives one answer's work.
	root workflow.Context
	// userCalls are the calls people made themselves (starter tool), by
	// call ID, with who made them.
	userCalls map[string]string
	// disk is set while the job waits for disk space to save (disk.go).
	disk *parking.DiskWait
	// mcp are the job's MCP tools as last listed (mcp.go).
	mcp mcpcalls.Tools
	// listed is the listing last put in the memo, endHow how the job
	// ended (listing.go).
	listed *Listing
	endHow string
	// tasks are the job's running subagents (task.go).
	tasks taskState
}

type pendingCall struct {
	ask PendingAsk
	ch  workflow.Channel
	// answer is the first answer that counted; result the call's final
	// decision, set when it leaves layer 5.
	answer *ApprovalDecision
	result *DecideResult
	// refs resolves to the notifiers' references to what they posted for
	// this call (nil when no notifier is configured).
	refs workflow.Future
	// rules is what layers 1-3 said of the call and hookAsked whether a
	// hook asked for a person: a grant may answer only a call an allow
	// rule could have allowed (approval.Grantable).
	rules     approval.Verdict
	hookAsked bool
	// grant is the grant the answer gave, if any; viaGrant the grant,
	// given while this call waited, that answered it.
	grant    *Grant
	viaGrant *Grant
	// timeout is the deadline's length, when it denied the call.
	timeout time.Duration
}

// call is the call as the tool would run it (a hook's rewrite included).
func (p *pendingCall) call() approval.Call {
	return approval.Call{Tool: p.ask.Tool, Input: p.ask.Input}
}

// How a call left layer 5 when nobody answered (workflows/details).
const (
	answerTimeout     = details.AnswerTimeout
	answerCanceled    = details.AnswerCanceled
	answerInterrupted = details.AnswerInterrupted
)

// Run is AgentWorkflow: the ReAct loop.
func (a *Agent) Run(ctx workflow.Context, in JobInput) (JobResult, error) {
	j := &job{
		agent:   a,
		in:      in,
		id:      workflow.GetInfo(ctx).WorkflowExecution.ID,
		logger:  workflow.GetLogger(ctx),
		pending: map[string]*pendingCall{},
		closed:  map[string]DecideResult{},
		callIDs: map[string]bool{},
		running: map[string]string{},

		userCalls: map[string]string{},
		phase:     "starting",
	}
	j.root = ctx
	if in.ApprovalTimeout <= 0 {
		j.in.ApprovalTimeout = DefaultApprovalTimeout
	}
	if in.MaxTurns <= 0 {
		j.in.MaxTurns = DefaultMaxTurns
	}
	// A carried state is taken before any handler is set: an Update that
	// comes with the run's first task sees the job as it is, not empty.
	j.restore()
	if err := j.registerQueries(ctx); err != nil {
		return JobResult{}, err
	}
	if err := j.registerUpdates(ctx); err != nil {
		return JobResult{}, err
	}
	if err := j.registerRetry(ctx); err != nil {
		return JobResult{}, err
	}
	if err := j.granted.Register(ctx, j.grantHost()); err != nil {
		return JobResult{}, fmt.Errorf("register %s update: %w", RevokeUpdate, err)
	}
	if err := j.registerConversation(ctx); err != nil {
		return JobResult{}, err
	}
	if err := j.registerRewind(ctx); err != nil {
		return JobResult{}, err
	}
	if err := j.registerBudget(ctx); err != nil {
		return JobResult{}, err
	}
	if err := j.registerToolUpdate(ctx); err != nil {
		return JobResult{}, err
	}
	j.granted.On = workflow.GetVersion(ctx, granting.Version, workflow.DefaultVersion, 1) >= 1
	j.conv = workflow.GetVersion(ctx, conversationChange, workflow.DefaultVersion, 1) >= 1
	if err := j.start(ctx); err != nil {
		return JobResult{}, err
	}
	j.startSignalRouter(ctx)
	j.updateDetails(ctx)
	res, err := j.loop(ctx)
	if !workflow.IsContinueAsNewError(err) {
		editorjob.Forget(ctx, j.onHost, j.in, j.id)
	}
	return res, err
}

// restore takes the state a previous run carried, if any.
func (j *job) restore() {
	if j.in.State == nil {
		return
	}
	j.st = j.in.State
	j.in.State = nil
	j.st.Runs++
	for _, id := range j.st.PendingIDs {
		j.callIDs[id] = true
	}
}

// start begins a fresh job (restore took a carried state): settings are read by an
// activity (files and the home directory are not workflow business), then
// compiled here, deterministically, together with the learned rules.
func (j *job) start(ctx workflow.Context) error {
	if j.st == nil {
		var loaded api.LoadSettingsResult
		actx := j.onHost(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: 30 * time.Second,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
			Summary:             "load settings",
		})
		err := workflow.ExecuteActivity(actx, api.LoadSettingsActivity,
			api.LoadSettingsRequest{Workspace: j.in.Workspace, JobID: j.id, WorkDir: j.in.WorkDir, Resume: j.in.Resume,
				EditorServers: j.in.EditorServers}).Get(ctx, &loaded)
		if err != nil {
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("settings: %v", err), "SettingsError", err)
		}
		// From here on the job names its workspace canonically, as the
		// policy and the path guard see it.
		if loaded.Env.Workspace != "" {
			j.in.Workspace = loaded.Env.Workspace
		}
		mode, err := approval.ResolveModeIn(j.in.Mode, loaded.Settings)
		if err != nil {
			return temporal.NewNonRetryableApplicationError(err.Error(), "SettingsError", err)
		}
		j.st = &State{
			Notifiers:     loaded.Notifiers,
			ContextWindow: contextWindowOf(j.in, loaded.ContextWindow),
			BashQueue:     loaded.BashQueue,
			Mode:          mode,
			Settings:      loaded.Settings,
			Env:           loaded.Env,
			Sources:       loaded.Sources,
			Files:         loaded.Files,
			Instructions:  loaded.Instructions.Files,
			MCPServers:    loaded.MCPServers,
		}
		j.st.Agents = loaded.Subagents
		j.adoptParent(ctx)
		j.noteSubagents(ctx, loaded.SubagentNotes)
		if r := loaded.Resumed; j.in.Resume && r != nil {
			j.resume(ctx, r)
		} else {
			j.st.Messages = []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: j.systemPrompt(ctx, loaded)}}
			if editorjob.AwaitsFirst(ctx, j.in) {
				j.waitForMessage(ctx) // an editor's session/new: no task yet
			} else {
				j.st.Messages = append(j.st.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: j.in.Task})
			}
			j.added(j.st.Messages...)
		}
		j.announceSandbox(ctx)
		j.announceInstructions(ctx, loaded.Instructions)
		if len(loaded.MCPNotes) > 0 && workflow.GetVersion(ctx, mcpcalls.Version, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
			for _, n := range loaded.MCPNotes {
				j.mcp.Note(ctx, j.mcpHost(), n)
			}
		}
		for _, what := range loaded.Ignored {
			// An untrusted workspace's settings may only narrow the policy;
			// say what they asked for and did not get.
			j.audit(ctx, approval.AuditRecord{Event: "settings-ignored", Reason: "workspace not trusted: " + what})
			j.emit(ctx, Event{Kind: "settings", Text: "ignored (workspace not trusted; see: starter trust): " + what})
		}
	}
	p, err := approval.Compile(j.st.Settings, j.st.Env)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("settings: %v", err), "SettingsError", err)
	}
	for _, l := range j.st.Learned {
		if p, err = p.WithRule(l.List, l.Rule); err != nil {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("learned rule %q: %v", l.Rule, err), "SettingsError", err)
		}
	}
	j.policy = p
	for _, g := range j.st.Grants {
		j.granted.Watch(ctx, j.grantHost(), g)
	}
	return nil
}

func (j *job) loop(ctx workflow.Context) (JobResult, error) {
	for {
		if len(j.st.PendingCalls) == 0 {
			if done, res, err := j.turn(ctx); done {
				return res, err
			}
			if len(j.st.PendingCalls) == 0 {
				continue
			}
		}
		if len(j.st.PendingIDs) != len(j.st.PendingCalls) {
			// Carried from a run that did not name them (older state).
			j.st.PendingIDs = j.jobCallIDs(ctx, j.st.PendingCalls)
		}
		wctx := j.workContext(ctx)
		results := j.runCalls(wctx, j.st.PendingCalls, j.st.PendingIDs)
		stopped := j.interrupted(ctx, wctx)
		j.doneWork()
		for i, tc := range j.st.PendingCalls {
			j.st.Messages = append(j.st.Messages, openai.ChatCompletionMessage{
				Role:       openai.ChatMessageRoleTool,
				ToolCallID: tc.ID,
				Name:       tc.Function.Name,
				Content:    results[i],
			})
			j.added(j.st.Messages[len(j.st.Messages)-1])
		}
		j.st.PendingCalls, j.st.PendingIDs = nil, nil
		if ctx.Err() != nil {
			return JobResult{}, j.canceled(ctx)
		}
		if stopped && len(j.st.Queue) == 0 {
			// Interrupted with nothing to say: the results tell the model
			// what was stopped when the next message comes.
			j.waitForMessage(ctx)
		}
		// The calls just run must be on disk before the next ones run:
		// on a full disk the job parks here until they are.
		if parking.SaveOrPark(ctx, j.waitHost()) && ctx.Err() != nil {
			return JobResult{}, j.canceled(ctx)
		}
	}
}

// turn waits for a message when the job has answered, then asks the model;
// it leaves the answer's tool calls in State.PendingCalls for the loop to
// run. done is set when the run ends, with its result.
func (j *job) turn(ctx workflow.Context) (done bool, res JobResult, err error) {
	if c := j.in.Call; c != nil {
		// A job started for one person's call (starter tool): that call,
		// through the six layers, and no model.
		r := j.runUserCall(j.workContext(ctx), *c)
		j.doneWork()
		j.st.LastAnswer = r.Output
		res, err = j.finish(ctx, "done")
		return true, res, err
	}
	if j.endReq != nil {
		res, err = j.ended(ctx, "ended")
		return true, res, err
	}
	if j.st.Waiting && len(j.st.Queue) == 0 {
		why, again := j.awaitMessage(ctx)
		switch {
		case ctx.Err() != nil:
			return true, JobResult{}, j.canceled(ctx)
		case why != "":
			res, err = j.ended(ctx, why)
			return true, res, err
		case again:
			return true, JobResult{}, j.continueAsNew(ctx)
		}
	}
	j.deliverMessages(ctx)
	if j.turnLimitReached() {
		j.st.LastAnswer = fmt.Sprintf("Stopped: the turn limit (%d) was reached before the model finished.", j.in.MaxTurns)
		if !j.converses() {
			res, err = j.finish(ctx, "max turns")
			return true, res, err
		}
		j.answerTurn(ctx)
		return false, JobResult{}, nil
	}
	if j.shouldContinueAsNew(ctx) {
		return true, JobResult{}, j.continueAsNew(ctx)
	}
	if j.awaitBudget(ctx) {
		return true, JobResult{}, j.continueAsNew(ctx)
	}
	if ctx.Err() != nil {
		return true, JobResult{}, j.canceled(ctx)
	}
	if j.endReq != nil {
		// Ended while it waited for its budget: the next turn ends it.
		return false, JobResult{}, nil
	}
	if j.overBudget() != "" {
		// A new message lifted a per-message cap's wait: it starts its own
		// budget, and the caps are checked again.
		j.deliverMessages(ctx)
		return false, JobResult{}, nil
	}
	return j.think(ctx)
}

// think is one model call of a turn: its answer is taken, or, when an
// interrupt stopped it, abandoned.
func (j *job) think(ctx workflow.Context) (done bool, res JobResult, err error) {
	j.st.Turn++
	j.runTurns++
	wctx := j.workContext(ctx)
	msg, err := j.callModel(wctx)
	if ctx.Err() != nil {
		return true, JobResult{}, j.canceled(ctx)
	}
	if j.interrupted(ctx, wctx) {
		// The answer is abandoned: the model is asked again with
		// the interrupt's text, or the job waits for a message.
		j.doneWork()
		j.st.Turn--
		if len(j.st.Queue) == 0 {
			j.waitForMessage(ctx)
		}
		return false, JobResult{}, nil
	}
	j.doneWork()
	if errors.Is(err, parking.ErrContinueParked) {
		j.st.Turn--
		return true, JobResult{}, j.continueAsNew(ctx)
	}
	if err != nil {
		return true, JobResult{}, j.modelFailed(ctx, err)
	}
	return j.tookAnswer(ctx, msg)
}

// tookAnswer takes the model's answer: a final one is the answer to the
// message (the job waits for the next, or ends), tool calls wait in
// State.PendingCalls for the loop to run.
func (j *job) tookAnswer(ctx workflow.Context, msg openai.ChatCompletionMessage) (done bool, res JobResult, err error) {
	j.st.Messages = append(j.st.Messages, msg)
	j.added(msg)
	j.st.TurnSeqs = append(j.st.TurnSeqs, TurnSeq{Turn: j.st.Turn, Seq: j.st.Total()})
	if len(msg.ToolCalls) == 0 {
		if j.cutText(ctx, msg) {
			return false, JobResult{}, nil
		}
		j.st.LastAnswer = msg.Content
		if !j.converses() {
			res, err = j.finish(ctx, "done")
			return true, res, err
		}
		j.answerTurn(ctx)
		return false, JobResult{}, nil
	}
	j.st.PendingCalls = msg.ToolCalls
	j.st.PendingIDs = j.jobCallIDs(ctx, msg.ToolCalls)
	// The model's answer is in history; if the server wants a fresh
	// run, the calls travel with the state and run there.
	if j.shouldContinueAsNew(ctx) {
		return true, JobResult{}, j.continueAsNew(ctx)
	}
	return false, JobResult{}, nil
}

// converses says whether the job waits for a message after its answer:
// not in histories from before conversations, nor for a job started to
// end at its first answer.
func (j *job) converses() bool { return j.conv && !j.in.Once }

// turnLimitReached: the turn limit counts the turns of one message in a
// conversation, and of the whole job otherwise.
func (j *job) turnLimitReached() bool {
	if j.converses() {
		return j.st.Turn-j.st.MessageTurn >= j.in.MaxTurns
	}
	return j.st.Turn >= j.in.MaxTurns
}

func (j *job) finish(ctx workflow.Context, reason string) (JobResult, error) {
	j.phase, j.endHow = PhaseDone, reason
	j.emit(ctx, Event{Kind: "answer", Text: j.st.LastAnswer})
	j.bg.Await(ctx)
	if err := j.save(ctx); err != nil {
		j.logger.Warn("saving session failed", "error", err)
	}
	j.updateDetails(ctx)
	return JobResult{Answer: j.st.LastAnswer, Turns: j.st.Turn, Usage: j.st.Usage, Reason: reason,
		Changed: j.st.Changed, Commands: j.st.Commands}, nil
}

// canceled ends a canceled job: calls still waiting were denied ("job
// canceled") and are in the audit; the transcript and audit are saved on a
// context the cancellation does not reach.
func (j *job) canceled(ctx workflow.Context) error {
	j.phase = "canceled"
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	j.emit(dctx, Event{Kind: "error", Text: "job canceled"})
	j.bg.Await(dctx)
	if err := j.save(dctx); err != nil {
		j.logger.Warn("saving session of a canceled job failed", "error", err)
	}
	j.updateDetails(dctx)
	return temporal.NewCanceledError("job canceled")
}

func (j *job) shouldContinueAsNew(ctx workflow.Context) bool {
	if j.in.ContinueAsNewEvery > 0 && j.runTurns >= j.in.ContinueAsNewEvery {
		return true
	}
	info := workflow.GetInfo(ctx)
	// A turn adds about the same to history whatever the conversation's
	// length (the conversation is in the transcript), so the event count
	// bounds a run's size.
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= maxRunEvents
}

// continueAsNew drains signals (so none is lost with this run), saves the
// session and hands conversation, pending calls and learned rules to a new run.
func (j *job) continueAsNew(ctx workflow.Context) error {
	j.bg.Await(ctx)
	j.drainSignals(ctx)
	// An Update being handled (a message, an end) is answered by this run.
	_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
	if err := j.save(ctx); err != nil {
		j.logger.Warn("saving session before continue-as-new failed", "error", err)
	}
	// The audit file holds every record; the next run's input carries only
	// the newest, so the job's state does not grow with its conversation.
	// Records not yet in the file always travel.
	saved := 0
	for _, r := range j.st.Audit {
		if r.Seq <= j.st.AuditSaved {
			saved++
		}
	}
	if extra := saved - maxAuditCarried; extra > 0 {
		j.st.Audit = append([]approval.AuditRecord(nil), j.st.Audit[extra:]...)
	}
	next := j.in
	next.State = j.st
	// A pinned job moves to the current release at this boundary: the
	// state it carries is plain JSON that newer releases read (fields are
	// only ever added), and nothing is in flight.
	return workflow.NewContinueAsNewErrorWithOptions(ctx, workflow.ContinueAsNewErrorOptions{
		InitialVersioningBehavior: workflow.ContinueAsNewVersioningBehaviorAutoUpgrade,
	}, WorkflowName, next)
}

// callModel runs the model activity with the llm.* hooks around it.
func (j *job) callModel(ctx workflow.Context) (openai.ChatCompletionMessage, error) {
	j.phase = "thinking"
	j.updateDetails(ctx)
	j.runHooks(ctx, hooks.LLMRequestBefore, hooks.Payload{Request: &hooks.LLMRequest{
		Model: j.in.Model, Messages: j.st.VisibleCount(), Tools: api.ToolNames()}})
	actx := j.onHost(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		// The activity heartbeats while it waits, so a dead worker is
		// noticed in seconds, not after the start-to-close timeout.
		HeartbeatTimeout: 30 * time.Second,
		// 429, 5xx and network errors come back retryable, other 4xx as
		// non-retryable application errors: the model activity classifies.
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    10,
		},
		Summary: fmt.Sprintf("turn %d: ask the model", j.st.Turn),
	})
	mcpTools := j.mcp.List(ctx, j.mcpHost())
	resp, err := j.chat(ctx, func() (api.ModelResponse, error) {
		return j.askModel(ctx, func() (api.ModelResponse, error) {
			var resp api.ModelResponse
			req := api.ModelRequest{
				Conversation: j.conversation(),
				WithTools:    true,
				Tools:        mcpTools,
				Model:        j.in.Model,
			}
			j.offerTools(&req)
			err := workflow.ExecuteActivity(actx, api.ModelActivity, req).Get(ctx, &resp)
			return resp, err
		})
	})
	if errors.Is(err, parking.ErrContinueParked) {
		return openai.ChatCompletionMessage{}, err
	}
	if err != nil {
		j.runHooks(ctx, hooks.LLMResponseError, hooks.Payload{Error: err.Error()})
		return openai.ChatCompletionMessage{}, err
	}
	// The model activity stored every message it was sent.
	j.st.Stored(j.st.Total())
	j.st.LastPrompt, j.st.Pending = resp.Usage.PromptTokens, 0
	j.st.Usage.ModelCalls++
	j.st.Usage.PromptTokens += resp.Usage.PromptTokens
	j.st.Usage.CompletionTokens += resp.Usage.CompletionTokens
	j.st.Usage.TotalTokens += resp.Usage.TotalTokens
	j.lastFinish = resp.FinishReason
	j.runHooks(ctx, hooks.LLMResponseAfter, hooks.Payload{Output: resp.Message.Content, Usage: &hooks.LLMUsage{
		PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens,
		TotalTokens: resp.Usage.TotalTokens, FinishReason: resp.FinishReason, ToolCalls: len(resp.Message.ToolCalls)}})
	msg := resp.Message
	msg.Role = openai.ChatMessageRoleAssistant
	uniqueCallIDs(msg.ToolCalls, j.st.Turn)
	text := strings.TrimSpace(msg.Content)
	if len(msg.ToolCalls) > 0 {
		names := make([]string, len(msg.ToolCalls))
		for i, tc := range msg.ToolCalls {
			names[i] = tc.Function.Name
		}
		if text == "" {
			text = "calls " + strings.Join(names, ", ")
		} else {
			text += " (calls " + strings.Join(names, ", ") + ")"
		}
	}
	if len(msg.ToolCalls) > 0 || resp.FinishReason != string(openai.FinishReasonLength) {
		// A cut text answer is not the final one: cutText says so.
		j.emit(ctx, Event{Kind: "model", Text: text})
	}
	return msg, nil
}

// save writes new transcript messages and audit records to the workspace,
// with the session.save.* hooks around it.
func (j *job) save(ctx workflow.Context) error {
	files := j.st.JobFiles(j.in.Workspace, j.id)
	info := &hooks.SessionSave{
		Transcript:   files.Transcript,
		Audit:        files.Audit,
		FirstMessage: j.st.SavedMessages, LastMessage: j.st.Total(),
		AuditFrom: j.st.AuditSaved, AuditTo: j.st.AuditSeq,
	}
	j.runHooks(ctx, hooks.SessionSaveBefore, hooks.Payload{Session: info})
	req := api.SaveSessionRequest{
		Workspace:    j.in.Workspace,
		JobID:        j.id,
		Files:        j.st.Files,
		FirstMessage: j.st.SavedMessages,
		Messages:     j.st.Unsaved(),
	}
	for _, r := range j.st.Audit {
		if r.Seq > j.st.AuditSaved {
			req.Audit = append(req.Audit, r)
		}
	}
	// A local activity: the save is a short append on the worker that runs
	// the workflow, so it need not pay a round trip through the server every
	// turn; its result is still recorded in history.
	if err := j.saveActivity(ctx, req); err != nil {
		return err
	}
	j.st.Stored(j.st.Total())
	j.st.AuditSaved = j.st.AuditSeq
	// Only records already in the file may leave memory.
	if extra := len(j.st.Audit) - maxAuditInMemory; extra > 0 {
		j.st.Audit = append([]approval.AuditRecord(nil), j.st.Audit[extra:]...)
	}
	j.runHooks(ctx, hooks.SessionSaveAfter, hooks.Payload{Session: info})
	return nil
}

// runHooks dispatches one hook point: system hooks inline (deterministic Go),
// then the user's command hooks in an activity, so their answers are recorded
// in history and never re-run on replay. For decision points the first
// decision wins; at observer points every hook runs.
func (j *job) runHooks(ctx workflow.Context, point hooks.Point, p hooks.Payload) (hooks.Result, bool) {
	p.Point = point
	p.JobID = j.id
	p.Workspace = j.in.Workspace
	p.Mode = string(j.st.Mode)
	p.Turn = j.st.Turn
	decisionPoint := point == hooks.ToolApprovalPre || point == hooks.ToolApprovalPost
	system := approval.SystemHooks()
	if j.agent != nil && j.agent.Hooks != nil {
		system = j.agent.Hooks
	}
	if r, ok := hooks.Dispatch(system.Handlers(point, p.Tool), p); ok && decisionPoint {
		return r, true
	}
	cmds := j.st.Settings.Hooks.CommandHooks(point, p.Tool)
	if len(cmds) == 0 {
		return hooks.Result{}, false
	}
	timeout := time.Duration(0)
	for _, c := range cmds {
		timeout += c.Timeout
	}
	actx := j.onHost(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: timeout + 30*time.Second,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 2},
		Summary:             fmt.Sprintf("hooks %s %s", point, p.Tool),
	})
	var resp api.HookResponse
	err := workflow.ExecuteActivity(actx, api.HooksActivity, api.HookRequest{
		Hooks: cmds, Payload: p, Dir: j.in.Workspace, Blobs: j.blobs(),
	}).Get(ctx, &resp)
	if err != nil {
		j.emit(ctx, Event{Kind: "error", CallID: p.CallID, Tool: p.Tool, Text: fmt.Sprintf("hooks at %s failed, no decision: %v", point, err)})
		return hooks.Result{}, false
	}
	for _, o := range resp.Outcomes {
		if o.Err != "" || o.TimedOut {
			j.emit(ctx, Event{Kind: "error", CallID: p.CallID, Tool: p.Tool, Text: fmt.Sprintf("hook at %s gave no decision: %s", point, hookFailure(o))})
		}
	}
	if !decisionPoint {
		return hooks.Result{}, false
	}
	return resp.Result, resp.Decided
}

func hookFailure(o hooks.Outcome) string {
	if o.TimedOut {
		return "timed out"
	}
	return o.Err
}

func (j *job) emit(ctx workflow.Context, e Event) {
	j.st.EventSeq++
	e.Seq = j.st.EventSeq
	e.Time = workflow.Now(ctx)
	if e.Turn == 0 {
		e.Turn = j.st.Turn
	}
	j.events = append(j.events, e)
	if extra := len(j.events) - maxEventsInMemory; extra > 0 {
		j.events = append([]Event(nil), j.events[extra:]...)
	}
}

// uniqueCallIDs gives every call of an answer a distinct, non-empty ID: the
// ID is how a person names the call in an approval, so a model that repeats
// or omits IDs must not make two calls answer to one signal.
func uniqueCallIDs(calls []openai.ToolCall, turn int) {
	seen := map[string]bool{}
	for i := range calls {
		id := calls[i].ID
		if id == "" {
			id = fmt.Sprintf("call_t%d_%d", turn, i+1)
		}
		for n := 2; seen[id]; n++ {
			id = fmt.Sprintf("%s_%d", calls[i].ID, n)
		}
		seen[id] = true
		calls[i].ID = id
		if calls[i].Type == "" {
			calls[i].Type = openai.ToolTypeFunction
		}
	}
}

// jobCallIDs gives each call its identity within the job: the ID every
// channel, status, the audit, Slack buttons and webhooks use, and that an
// answer must name. The model chooses its IDs and may reuse one in a later
// turn; an answer meant for the earlier call must never approve the later
// one. So an ID this run already used gets the turn (call_1_t3, then _2, _3 …
// should that be taken too), and in a run continued from another (whose IDs
// this run does not hold) every ID carries the run (call_1_r2), so a stale
// answer from an earlier run names no call here. Calls carried to the next
// run keep the identities given here (State.PendingIDs). The conversation
// keeps the model's IDs (uniqueCallIDs already made them distinct within the
// answer). Histories from before this ran keep the model's IDs.
func (j *job) jobCallIDs(ctx workflow.Context, calls []openai.ToolCall) []string {
	ids := make([]string, len(calls))
	if workflow.GetVersion(ctx, "job-unique-call-ids", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		for i, tc := range calls {
			ids[i] = tc.ID
		}
		return ids
	}
	for i, tc := range calls {
		id := j.st.EpochID(tc.ID)
		if j.st.Runs > 0 {
			id = fmt.Sprintf("%s_r%d", id, j.st.Runs+1)
		}
		if j.callIDs[id] {
			id = fmt.Sprintf("%s_t%d", id, j.st.Turn)
		}
		base := id
		for n := 2; j.callIDs[id]; n++ {
			id = fmt.Sprintf("%s_%d", base, n)
		}
		j.callIDs[id] = true
		ids[i] = id
	}
	return ids
}
