// Package workflows holds AgentWorkflow, custos' ReAct loop, and its
// deterministic helpers: the approval orchestration, signals, queries and
// continue-as-new.
package workflows

import (
	"encoding/json"

	"github.com/custos-dev/custos/workflows/jobapi"
)

// The job's client-facing names and types are jobapi's (clients import
// it, not the workflow); the workflow's code calls them by these names.
type (
	ApprovalDecision = jobapi.ApprovalDecision
	Budget           = jobapi.Budget
	BudgetChange     = jobapi.BudgetChange
	BudgetStatus     = jobapi.BudgetStatus
	DecideResult     = jobapi.DecideResult
	End              = jobapi.End
	EndResult        = jobapi.EndResult
	Event            = jobapi.Event
	ForkOf           = jobapi.ForkOf
	Grant            = jobapi.Grant
	GrantSpec        = jobapi.GrantSpec
	Interrupt        = jobapi.Interrupt
	InterruptResult  = jobapi.InterruptResult
	JobInput         = jobapi.JobInput
	JobResult        = jobapi.JobResult
	LearnedRule      = jobapi.LearnedRule
	ListedCall       = jobapi.ListedCall
	Listing          = jobapi.Listing
	Message          = jobapi.Message
	MessageResult    = jobapi.MessageResult
	ModeChange       = jobapi.ModeChange
	ModeResult       = jobapi.ModeResult
	ModelWait        = jobapi.ModelWait
	ParentLink       = jobapi.ParentLink
	PendingAsk       = jobapi.PendingAsk
	QueuedMessage    = jobapi.QueuedMessage
	QuorumState      = jobapi.QuorumState
	RetryRequest     = jobapi.RetryRequest
	RetryResult      = jobapi.RetryResult
	Revoke           = jobapi.Revoke
	Rewind           = jobapi.Rewind
	RewindResult     = jobapi.RewindResult
	State            = jobapi.State
	Status           = jobapi.Status
	TurnSeq          = jobapi.TurnSeq
	Usage            = jobapi.Usage
	UserCall         = jobapi.UserCall
	UserCallResult   = jobapi.UserCallResult
	VerifiedIdentity = jobapi.VerifiedIdentity
)

const (
	ApprovalSignal         = jobapi.ApprovalSignal
	AuditQuery             = jobapi.AuditQuery
	BudgetUpdate           = jobapi.BudgetUpdate
	DecideUpdate           = jobapi.DecideUpdate
	DefaultApprovalTimeout = jobapi.DefaultApprovalTimeout
	DefaultIdleLimit       = jobapi.DefaultIdleLimit
	DefaultMaxTurns        = jobapi.DefaultMaxTurns
	EndUpdate              = jobapi.EndUpdate
	EventsQuery            = jobapi.EventsQuery
	InterruptUpdate        = jobapi.InterruptUpdate
	ListEnded              = jobapi.ListEnded
	ListParked             = jobapi.ListParked
	ListWaitingMessage     = jobapi.ListWaitingMessage
	ListWaitingPerson      = jobapi.ListWaitingPerson
	ListWorking            = jobapi.ListWorking
	ListingMemo            = jobapi.ListingMemo
	MaxMessageBytes        = jobapi.MaxMessageBytes
	MessageSignal          = jobapi.MessageSignal
	MessageUpdate          = jobapi.MessageUpdate
	ModeSignal             = jobapi.ModeSignal
	ModeUpdate             = jobapi.ModeUpdate
	PhaseDone              = jobapi.PhaseDone
	PhaseEnded             = jobapi.PhaseEnded
	PhaseWaitingBudget     = jobapi.PhaseWaitingBudget
	PhaseWaitingMessage    = jobapi.PhaseWaitingMessage
	RetryUpdate            = jobapi.RetryUpdate
	RevokeUpdate           = jobapi.RevokeUpdate
	RewindUpdate           = jobapi.RewindUpdate
	ScopeJob               = jobapi.ScopeJob
	ScopeWorkspace         = jobapi.ScopeWorkspace
	StatusQuery            = jobapi.StatusQuery
	ToolUpdate             = jobapi.ToolUpdate
	WorkflowName           = jobapi.WorkflowName
)

// Bounds of what a job keeps.
const (
	// maxAuditInMemory bounds the audit kept in workflow state; the full trail
	// is in the job's audit file.
	maxAuditInMemory = 1000
	// maxAuditCarried bounds the saved records continue-as-new carries
	// (the audit query shows them after it).
	maxAuditCarried   = 50
	maxEventsInMemory = 2000
	// maxRunEvents bounds a run's history: the job continues as new past it.
	maxRunEvents = 2000
	// maxRecentInDetails is how many decided calls the Web UI lists.
	maxRecentInDetails = 5
	// maxMessageIDs is how many message IDs a job remembers to count a
	// message sent twice once.
	maxMessageIDs = 500
)

// eventInput is what a call event keeps of its input.
func eventInput(input json.RawMessage) json.RawMessage {
	if len(input) > jobapi.MaxEventInput {
		return nil
	}
	return input
}
