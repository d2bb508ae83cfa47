// Package jobapi is a job's client-facing API: the names of its workflow,
// Updates, Signals and Queries, and the types they carry (the job's input
// and result, its status, events, messages, answers, grants, budget and
// listing). Clients (cli, jobevents, inbox, notify/slack, acpagent,
// ghhooks, app) import it instead of the workflow's code; the workflow
// (package workflows) imports it and never the other way round. Their JSON
// shapes are in histories and memos: change them only as a workflow may.
package jobapi

import (
	"encoding/json"
	"fmt"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/subagent"
)

// Names people and tools outside the worker use.
const (
	WorkflowName = "AgentWorkflow"
	// ApprovalSignal carries an ApprovalDecision for one pending tool call,
	// for clients that cannot wait for an answer (the Web UI's signal form,
	// fire-and-forget bots).
	ApprovalSignal = "approval"
	// DecideUpdate carries the same ApprovalDecision and answers its sender
	// with the call's final DecideResult; its validator refuses unknown,
	// decided and expired calls before anything enters history.
	DecideUpdate = "decide"
	// ModeSignal and ModeUpdate carry a ModeChange; the Update answers with
	// a ModeResult.
	ModeSignal = "mode"
	ModeUpdate = "mode"
	// StatusQuery returns Status; AuditQuery returns []approval.AuditRecord;
	// EventsQuery takes a sequence number and returns the Events after it.
	StatusQuery = "status"
	AuditQuery  = "audit"
	EventsQuery = "events"
	// RevokeUpdate ends a grant before its time: {"grantId": "…", "by": "…",
	// "channel": "…"} (a Revoke), answered with the ended Grant.
	RevokeUpdate = "revoke"
	// RetryUpdate makes a job waiting for the model endpoint call it again
	// now; its validator refuses it when the job does not wait.
	RetryUpdate = "retry"
)

// Defaults of a job.
const (
	DefaultApprovalTimeout = 60 * time.Second
	DefaultMaxTurns        = 100
)

// JobInput starts (or continues) a job.
type JobInput struct {
	// Task is the job's first message; "" starts a conversation that
	// waits for its first message (an editor's session/new).
	Task      string `json:"task"`
	Workspace string `json:"workspace"`
	// Mode overrides the settings' defaultMode when set.
	Mode approval.Mode `json:"mode,omitempty"`
	// ApprovalTimeout is how long layer 5 waits before denying (default 60 s).
	ApprovalTimeout time.Duration `json:"approvalTimeout,omitempty"`
	MaxTurns        int           `json:"maxTurns,omitempty"`
	// Model overrides the worker's model name for this job.
	Model string `json:"model,omitempty"`
	// MaxOutput caps each tool output kept in history (bytes).
	MaxOutput int `json:"maxOutput,omitempty"`
	// ContinueAsNewEvery forces continue-as-new after that many turns in one
	// run (0: only when the server suggests it). Tests and long jobs use it.
	ContinueAsNewEvery int `json:"continueAsNewEvery,omitempty"`

	// WorkDir is the job's working directory relative to the workspace
	// ("" for the root): the project's instructions are read from the
	// root down to it.
	WorkDir string `json:"workDir,omitempty"`
	// Host is the worker host that holds the workspace: every activity that
	// touches it runs on that host's task queue. "" runs them on the shared
	// queue (one machine).
	Host string `json:"host,omitempty"`
	// ContextWindow is the model's context window in tokens (0: what the
	// worker says for its model, or the table's for Model). CompactAt is the
	// share of it a prompt may reach before the job compacts (0: 0.8).
	ContextWindow int     `json:"contextWindow,omitempty"`
	CompactAt     float64 `json:"compactAt,omitempty"`
	// LaneWait is how long a Bash call may wait to start on its lane before
	// the job asks the host for the lane again (0: two minutes).
	LaneWait time.Duration `json:"laneWait,omitempty"`

	// Owner are the identities of the person the job is for (the
	// starter's CUSTOS_IDENTITY, for example a Slack user ID): their own
	// answers never count towards a call's approvals. The user settings'
	// "identities" count as the owner's too.
	Owner []string `json:"owner,omitempty"`

	// Once makes the job end at its first answer, as a script wants
	// (starter run --once); otherwise it waits for the next message.
	Once bool `json:"once,omitempty"`
	// IdleLimit is how long the job waits for a message before it ends
	// (0: the settings' conversation.idleLimit, else a week).
	IdleLimit time.Duration `json:"idleLimit,omitempty"`

	// MaxTokens caps the tokens the whole job may spend (0: the settings'
	// conversation.budget, else none); a job that reaches it waits.
	MaxTokens int `json:"maxTokens,omitempty"`
	// Call, when set, makes the job one person's tool call (starter tool):
	// it goes through the six layers, its result is the answer, and no
	// model is asked.
	Call *UserCall `json:"call,omitempty"`
	// Resume continues an ended job of the same name from its transcript:
	// Task is the next message (starter say to an ended job).
	Resume bool `json:"resume,omitempty"`
	// ForkOf, with Resume, names the job and turn this one was forked
	// from (starter fork): its transcript is that job's, cut there.
	ForkOf *ForkOf `json:"forkOf,omitempty"`

	// State is carried across continue-as-new; nil on a fresh job.
	State *State `json:"state,omitempty"`
	// Parent is set on a subagent: the job whose Task call started it
	// (children.go).
	Parent *ParentLink `json:"parent,omitempty"`
	// EditorServers name the MCP servers an editor passed in ACP's
	// session/new: their entries (commands, env, headers: secrets) are in
	// a file of the job's in the state directory of the host that started
	// it (mcpservers.WriteEditorServers), never in history.
	EditorServers []string `json:"editorServers,omitempty"`
}

// State is everything a job carries into its next run. The conversation
// itself is in the job's transcript (see api.Conversation): State
// holds only the messages that may not be stored yet, Messages, which start
// at index MessageBase of the whole conversation.
type State struct {
	Messages    []openai.ChatCompletionMessage `json:"messages"`
	MessageBase int                            `json:"messageBase,omitempty"`
	// View is what the model sees of the conversation after compaction.
	View api.View `json:"view,omitempty"`
	// ContextWindow is the job's model's window; LastPrompt the prompt
	// tokens the endpoint reported for the last call, Pending an estimate
	// of the messages added since.
	ContextWindow int               `json:"contextWindow,omitempty"`
	LastPrompt    int               `json:"lastPrompt,omitempty"`
	Pending       int               `json:"pending,omitempty"`
	Compactions   int               `json:"compactions,omitempty"`
	Turn          int               `json:"turn"`
	Mode          approval.Mode     `json:"mode"`
	Settings      approval.Settings `json:"settings"`
	Env           approval.Env      `json:"env"`
	Sources       []string          `json:"sources,omitempty"`
	// Learned are Always/Never answers, in the order given.
	Learned []LearnedRule `json:"learned,omitempty"`
	// MCPServers name the job's MCP servers; MCPSeen is, by tool, the
	// fingerprint of what a person relies on (description, schema,
	// annotations) as the job first saw it, or as a person last approved
	// a call to it after it changed.
	MCPServers []string          `json:"mcpServers,omitempty"`
	MCPSeen    map[string]string `json:"mcpSeen,omitempty"`
	// PendingCalls are tool calls of the last model answer not yet run.
	PendingCalls []openai.ToolCall `json:"pendingCalls,omitempty"`
	// PendingIDs are their identities in the job (jobCallIDs), given in
	// the run that received them.
	PendingIDs []string `json:"pendingIds,omitempty"`
	Usage      Usage    `json:"usage"`
	LastAnswer string   `json:"lastAnswer,omitempty"`
	// SavedMessages is how many messages the transcript file already holds.
	SavedMessages int `json:"savedMessages"`
	// AuditSeq is the sequence number of the last audit record; AuditSaved the
	// last one written to the file.
	AuditSeq   int                    `json:"auditSeq"`
	AuditSaved int                    `json:"auditSaved"`
	Audit      []approval.AuditRecord `json:"audit,omitempty"`
	EventSeq   int                    `json:"eventSeq"`
	Runs       int                    `json:"runs"`
	// BashQueue is the lane the workspace's commands run on, as the host
	// named it; "" until a Bash call needs it.
	BashQueue string `json:"bashQueue,omitempty"`
	// ModelWait is set while the job waits for the model endpoint to
	// answer (a refused key, garbage); nil otherwise.
	ModelWait *ModelWait `json:"modelWait,omitempty"`
	// Notifiers are the channels (slack, webhook) the worker announced when
	// the job started; none means no notification activities run.
	Notifiers []string `json:"notifiers,omitempty"`
	// Files are where the host keeps the job's transcript and audit, as
	// its LoadSettings named them; empty for jobs that began before they
	// left the workspace (api.JobFiles.Or).
	Files api.JobFiles `json:"files,omitzero"`
	// Instructions are the project instruction files the model was given
	// (their text is in the system prompt, the transcript's first message).
	Instructions []api.InstructionFile `json:"instructions,omitempty"`
	// Grants are the grants this job gave that have not ended (a
	// workspace-scoped one also lives on the workspace's host, where
	// every job of the workspace reads it); GrantSeq numbers them.
	Grants   []Grant `json:"grants,omitempty"`
	GrantSeq int     `json:"grantSeq,omitempty"`

	// Waiting is set when the model has answered and the job waits for
	// the next message, since WaitSince.
	Waiting   bool      `json:"waiting,omitempty"`
	WaitSince time.Time `json:"waitSince,omitzero"`
	// Queue are people's messages the model has not seen yet, in order;
	// MessageSeq numbers the messages (the task is 1); MessageIDs are the
	// last IDs seen, so a message sent twice counts once.
	Queue      []QueuedMessage `json:"queue,omitempty"`
	MessageSeq int             `json:"messageSeq,omitempty"`
	MessageIDs []string        `json:"messageIds,omitempty"`
	// MessageTurn and MessageTokens are the turn and the tokens used when
	// the model got the latest message: the turn limit and the
	// per-message budget count from them.
	MessageTurn   int `json:"messageTurn,omitempty"`
	MessageTokens int `json:"messageTokens,omitempty"`
	// Budget is the job's token caps once a person set them, and the cap
	// it waits on.
	Budget Budget `json:"budget,omitzero"`
	// UserCalls numbers the people's own calls; Notes are their results,
	// told to the model with its next call.
	UserCalls int      `json:"userCalls,omitempty"`
	Notes     []string `json:"notes,omitempty"`
	// Epoch is set when the job goes on from an ended one's transcript: its
	// calls' IDs carry it (call_1_e42), so none answers to an ID of the
	// ended job's.
	Epoch int `json:"epoch,omitempty"`
	// TurnSeqs are where each turn's answer is in the conversation, so
	// a rewind can cut the conversation at a turn (rewind.go).
	TurnSeqs []TurnSeq `json:"turnSeqs,omitempty"`
	// Agents are the subagents the job's Task calls may name; Changed
	// and Commands what a subagent changed, for its parent (children.go).
	Agents   []api.Subagent `json:"agents,omitempty"`
	Changed  []string       `json:"changed,omitempty"`
	Commands int            `json:"commands,omitempty"`
}

// ForkOf is where a forked job comes from.
type ForkOf struct {
	Job  string `json:"job"`
	Turn int    `json:"turn"`
}

// TurnSeq is the seq of turn Turn's answer in the transcript.
type TurnSeq struct {
	Turn int `json:"turn"`
	Seq  int `json:"seq"`
}

// EpochID is id with the job's epoch, when it has one.
func (s *State) EpochID(id string) string {
	if s.Epoch == 0 {
		return id
	}
	return fmt.Sprintf("%s_e%d", id, s.Epoch)
}

// JobFiles are where the job's transcript and audit are.
func (s *State) JobFiles(workspace, jobID string) api.JobFiles {
	return s.Files.Or(workspace, jobID)
}

// LearnedRule is a rule added by an Always ("allow") or Never ("deny") answer.
type LearnedRule struct {
	List string `json:"list"`
	Rule string `json:"rule"`
}

// Usage is the token usage of a job.
type Usage struct {
	ModelCalls       int `json:"modelCalls"`
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	TotalTokens      int `json:"totalTokens"`
}

// JobResult is what a finished job returns.
type JobResult struct {
	Answer string `json:"answer"`
	Turns  int    `json:"turns"`
	Usage  Usage  `json:"usage"`
	// Reason is "done" or "max turns" (a job that ends at its first
	// answer), "ended" (the end Update) or "idle" (its idle limit).
	Reason string `json:"reason"`
	// Changed are the files a subagent's Write and Edit calls changed;
	// Commands counts the commands it ran.
	Changed  []string `json:"changed,omitempty"`
	Commands int      `json:"commands,omitempty"`
}

// ApprovalDecision is the payload of the "approval" signal and the "decide"
// Update.
type ApprovalDecision struct {
	CallID string `json:"callId"`
	// Decision is allow, deny, always or never.
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	// By names the person; Channel where the answer came from (cli, slack,
	// web-ui, temporal …; "temporal" when unset).
	By      string `json:"by,omitempty"`
	Channel string `json:"channel,omitempty"`
	// Refused is set by a channel that verified the person and does not let
	// them give this answer (for example a Slack user not in
	// SLACK_APPROVERS). The job records the refusal in its audit and
	// changes nothing; the Update fails with the reason.
	Refused string `json:"refused,omitempty"`
	// Grant, with decision "allow", also allows every later call its rule
	// covers, in its scope, until it ends (a scoped, timed Always).
	Grant *GrantSpec `json:"grant,omitempty"`
	// Verified is the identity a channel of the workers verified and
	// signed (internal/answerkey); only such answers count towards the
	// approvals a call of the settings' "approvals" needs.
	Verified *VerifiedIdentity `json:"verified,omitempty"`
}

// VerifiedIdentity is who a channel says answered: their ID there (a
// Slack user ID), the groups it found them in, and its signature over
// both, the job, the call, the decision and the channel.
type VerifiedIdentity struct {
	ID     string   `json:"id"`
	Groups []string `json:"groups,omitempty"`
	Sig    string   `json:"sig"`
}

// GrantSpec is what a person grants with an "allow" answer: a rule, a
// scope and an end. Exactly one of For and Until is set.
type GrantSpec struct {
	// Rule is the allow rule granted; "" grants the rule Always would
	// save (PendingAsk.Rule). It must cover the call it answers.
	Rule string `json:"rule,omitempty"`
	// Scope is "job" (this job only, the default) or "workspace" (every
	// job of the call's workspace on its host).
	Scope string `json:"scope,omitempty"`
	// For is how long from the answer, a duration such as "30m" or "8h"
	// (a string, so people typing JSON in the Web UI or the CLI can write
	// it); Until is when it ends.
	For   string    `json:"for,omitempty"`
	Until time.Time `json:"until,omitzero"`
}

// DecideResult is what an accepted "decide" Update returns: the call's final
// decision record.
type DecideResult struct {
	CallID  string `json:"callId"`
	Tool    string `json:"tool"`
	Summary string `json:"summary"`
	// Decision is the final one, allow or deny; Answer what was answered
	// (allow, deny, always, never, or timeout/canceled when nobody did).
	Decision approval.Decision `json:"decision"`
	Answer   string            `json:"answer"`
	Layer    approval.Layer    `json:"layer"`
	By       string            `json:"by,omitempty"`
	Channel  string            `json:"channel,omitempty"`
	// Rule is the rule an Always/Never answer added.
	Rule   string    `json:"rule,omitempty"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
	// Votes are the people whose approvals counted towards a call that
	// needs several; Needed what is still missing (Answer "vote" while
	// the call still waits for it).
	Votes  []string `json:"votes,omitempty"`
	Needed string   `json:"needed,omitempty"`
	// Grant is the grant an allow answer with a GrantSpec gave.
	Grant *Grant `json:"grant,omitempty"`
	// Timeout is the deadline that denied the call (answer timeout), for
	// late answers' messages in this run: never sent (the field was
	// unexported before the type moved here).
	Timeout time.Duration `json:"-"`
}

// Grant is a GrantSpec a person gave, as the job keeps it: the status
// query lists the job's live ones (Status.Grants), the audit every call
// it allowed.
type Grant struct {
	ID      string `json:"id"`
	Rule    string `json:"rule"`
	Scope   string `json:"scope"` // job or workspace
	By      string `json:"by,omitempty"`
	Channel string `json:"channel,omitempty"`
	// CallID is the call whose answer gave it.
	CallID string    `json:"callId"`
	At     time.Time `json:"at"`
	Until  time.Time `json:"until"`
	// Uses counts the calls it allowed in this job.
	Uses int `json:"uses,omitempty"`
}

// Info is the grant as the approval layer reads it.
func (g Grant) Info() approval.GrantInfo {
	return approval.GrantInfo{ID: g.ID, Rule: g.Rule, Scope: g.Scope, By: g.By, Channel: g.Channel, At: g.At, Until: g.Until}
}

// Revoke is the payload of the revoke Update.
type Revoke struct {
	GrantID string `json:"grantId"`
	By      string `json:"by,omitempty"`
	Channel string `json:"channel,omitempty"`
}

// ModeChange is the payload of the "mode" signal and Update.
type ModeChange struct {
	Mode    string `json:"mode"`
	By      string `json:"by,omitempty"`
	Channel string `json:"channel,omitempty"`
	// Refused: as in ApprovalDecision.
	Refused string `json:"refused,omitempty"`
}

// ModeResult is what an accepted "mode" Update returns.
type ModeResult struct {
	Old approval.Mode `json:"old"`
	New approval.Mode `json:"new"`
	By  string        `json:"by,omitempty"`
}

// Status is what the "status" query returns.
type Status struct {
	JobID     string `json:"jobId"`
	Task      string `json:"task"`
	Workspace string `json:"workspace"`
	Host      string `json:"host,omitempty"`
	Turn      int    `json:"turn"`
	// Turns are where each turn's answer is in the transcript.
	Turns      []TurnSeq     `json:"turns,omitempty"`
	Mode       approval.Mode `json:"mode"`
	State      string        `json:"state"` // starting, thinking, deciding, running, waiting, waiting for the model endpoint, done
	Pending    []PendingAsk  `json:"pending"`
	LastAnswer string        `json:"lastAnswer,omitempty"`
	Usage      Usage         `json:"usage"`
	Learned    []LearnedRule `json:"learned,omitempty"`
	Sources    []string      `json:"settingsSources,omitempty"`
	// Runs counts continue-as-new: 0 in a job's first run.
	Runs int `json:"runs"`
	// Files are the job's transcript and audit on its host; Instructions
	// the project instruction files its model was given.
	Files        api.JobFiles          `json:"files,omitzero"`
	Instructions []api.InstructionFile `json:"instructions,omitempty"`
	// ModelWait says why the job waits for the model endpoint, and what
	// to fix; nil when it does not.
	ModelWait *ModelWait `json:"modelWait,omitempty"`
	// Grants are the live grants that apply to the job's calls.
	Grants []Grant `json:"grants,omitempty"`
	// Conversation: Queued counts the messages waiting for the model;
	// WaitingSince and IdleUntil are set while the job waits for a
	// message (it ends by itself at IdleUntil).
	Queued       int       `json:"queued,omitempty"`
	WaitingSince time.Time `json:"waitingSince,omitzero"`
	IdleUntil    time.Time `json:"idleUntil,omitzero"`
	// Messages counts the people's messages (the task is 1).
	Messages int `json:"messages,omitempty"`
	// Budget is the job's token usage against its caps.
	Budget BudgetStatus `json:"budget"`
	// Parent is set on a subagent; Children are the job's running
	// subagents (each a job: starter status CHILD shows its calls).
	Parent   *ParentRef           `json:"parent,omitempty"`
	Children []subagent.ChildInfo `json:"children,omitempty"`
}

// ModelWait is a model call the endpoint keeps refusing or answering with
// something that is not an answer: the job parks and calls again.
type ModelWait struct {
	// Kind is refused (the operator must fix something) or garbage
	// (transient, retried).
	Kind string `json:"kind"`
	// Error is the last error; Fix what to do about it.
	Error string `json:"error"`
	Fix   string `json:"fix"`
	// Attempts counts the calls that failed since Since; NextAt is when
	// the next one is made unless the retry Update comes first.
	Attempts int       `json:"attempts"`
	Since    time.Time `json:"since"`
	NextAt   time.Time `json:"nextAt"`
}

// PendingAsk is a tool call waiting for a human (layer 5).
type PendingAsk struct {
	CallID  string          `json:"callId"`
	Tool    string          `json:"tool"`
	Summary string          `json:"summary"`
	Input   json.RawMessage `json:"input"`
	Reason  string          `json:"reason,omitempty"`
	// Rule is the rule an Always answer would save (a Never answer saves
	// it as a deny rule), and a grant grants unless it names another.
	Rule string `json:"rule,omitempty"`
	// Preview shows what the call would do: a unified diff for Write and
	// Edit (from a dry run), the parsed commands and the sandbox's
	// allowances for Bash.
	Preview  string    `json:"preview,omitempty"`
	AskedAt  time.Time `json:"askedAt"`
	Deadline time.Time `json:"deadline"`
	// Quorum is set when the call needs several people (settings
	// "approvals"): what each entry requires and who approved so far.
	Quorum []QuorumState `json:"quorum,omitempty"`
}

// QuorumState is one approvals entry a waiting call must meet.
type QuorumState struct {
	Rule     string   `json:"rule"`
	Require  int      `json:"require"`
	From     []string `json:"from"`
	Approved []string `json:"approved,omitempty"`
}

// Event is one step of a job, for people following it (the "events" query).
type Event struct {
	Seq      int               `json:"seq"`
	Time     time.Time         `json:"time"`
	Kind     string            `json:"kind"` // model, call, decision, ask, result, answer, signal, mode, error, model-wait (the endpoint refuses or answers garbage), cut (an answer cut at the length limit)
	Turn     int               `json:"turn"`
	CallID   string            `json:"callId,omitempty"`
	Tool     string            `json:"tool,omitempty"`
	Text     string            `json:"text"`
	Decision approval.Decision `json:"decision,omitempty"`
	Layer    approval.Layer    `json:"layer,omitempty"`
	// By is who made a decision ("timeout" when nobody answered in time).
	By string `json:"by,omitempty"`
	// Input is a call's arguments when they are at most MaxEventInput
	// bytes of JSON; InputBytes is their size either way.
	Input      json.RawMessage `json:"input,omitempty"`
	InputBytes int             `json:"inputBytes,omitempty"`
	// Failed marks a result of a call that ran and failed (or could not run).
	Failed bool `json:"failed,omitempty"`
	// Output is an excerpt of a result's output (api.Excerpt: its first and
	// last api.ExcerptKeep bytes); OutputBytes its size. Diff is a Write's
	// or Edit's change. Only the journal's last 64 results keep them.
	Output      string        `json:"output,omitempty"`
	OutputBytes int           `json:"outputBytes,omitempty"`
	Diff        *api.FileDiff `json:"diff,omitempty"`
}

// MaxEventInput bounds the call arguments an event keeps: the journal
// lives in the workflow's memory and answers queries, so a large Write's
// content stays in history and the transcript, not here.
const MaxEventInput = 1 << 10

// Total is how many messages the conversation has.
func (s *State) Total() int { return s.MessageBase + len(s.Messages) }

// Unsaved are the messages the transcript may not hold yet.
func (s *State) Unsaved() []openai.ChatCompletionMessage {
	return s.Messages[max(s.SavedMessages-s.MessageBase, 0):]
}

// Stored records that the transcript holds the first n messages, and lets
// them go from memory (and so from continue-as-new's input): the last
// message is kept, since the loop may still read it.
func (s *State) Stored(n int) {
	s.SavedMessages = n
	if drop := min(n, s.Total()-1) - s.MessageBase; drop > 0 {
		s.Messages = append([]openai.ChatCompletionMessage(nil), s.Messages[drop:]...)
		s.MessageBase += drop
	}
}

// VisibleCount is how many messages the model will be sent.
func (s *State) VisibleCount() int { return s.View.VisibleCount(s.Total()) }

// ParentLink is what a child job gets from its parent (JobInput.Parent):
// who it is, how deep it nests, and the parent's settings, learned rules
// and tools, which the child takes instead of reading its own, so it is
// judged exactly as its parent is, never wider.
type ParentLink struct {
	Job         string `json:"job"`
	CallID      string `json:"callId"`
	Depth       int    `json:"depth"`
	Description string `json:"description,omitempty"`
	// Settings and Learned are the parent's (its rules, hooks, sandbox,
	// budget caps, quorums, and its Always/Never answers).
	Settings approval.Settings `json:"settings"`
	Learned  []LearnedRule     `json:"learned,omitempty"`
	// Agent is the subagent's definition (nil: the general-purpose one).
	Agent *api.Subagent `json:"agent,omitempty"`
	// Restrict offers the child only Tools (custos' and MCP tools by name,
	// Task included when it may start subagents of its own).
	Restrict bool     `json:"restrict,omitempty"`
	Tools    []string `json:"tools,omitempty"`
	// Agents are the subagents its own Task calls may name.
	Agents []api.Subagent `json:"agents,omitempty"`
	// Worktree and Branch are the git worktree and branch it works in
	// (isolation "worktree"; its workspace is in the worktree).
	Worktree string `json:"worktree,omitempty"`
	Branch   string `json:"branch,omitempty"`
}

// ParentRef names a subagent's parent in its status.
type ParentRef struct {
	Job      string `json:"job"`
	CallID   string `json:"callId"`
	Depth    int    `json:"depth"`
	Subagent string `json:"subagent,omitempty"`
}

func (p *ParentLink) Ref() *ParentRef {
	if p == nil {
		return nil
	}
	r := &ParentRef{Job: p.Job, CallID: p.CallID, Depth: p.Depth}
	if p.Agent != nil {
		r.Subagent = p.Agent.Name
	}
	return r
}
