package workflows

import (
	"cmp"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/tokens"
)

// A job's token budget: --max-tokens (JobInput.MaxTokens) and the settings'
// conversation.budget cap the tokens of the whole job and of each message's
// work. When a cap is reached the job does not fail: it parks before its
// next model call and asks a person to raise the budget (the budget Update,
// starter budget) or end the job, as a refused key does.

// caps are the job's token caps now.
func (j *job) caps() (perJob, perMessage int) {
	if j.st.Budget.Set {
		return j.st.Budget.TokensPerJob, j.st.Budget.TokensPerMessage
	}
	b := j.st.Settings.Conversation.Budget
	return tokens.Tighter(j.in.MaxTokens, b.TokensPerJob), b.TokensPerMessage
}

// budgetStatus is the usage against the caps.
func (j *job) budgetStatus() BudgetStatus {
	perJob, perMessage := j.caps()
	return BudgetStatus{TokensPerJob: perJob, TokensPerMessage: perMessage, UsedByJob: j.st.Usage.TotalTokens,
		UsedByMessage: j.st.Usage.TotalTokens - j.st.MessageTokens, Reached: j.st.Budget.Reached}
}

// overBudget names the cap the job's usage has reached, or "".
func (j *job) overBudget() string { return tokens.Over(j.budgetStatus()) }

// awaitBudget parks the job while a cap is reached, until a person raises
// it or ends the job; a new message lifts a per-message cap's wait (its
// work has a budget of its own), never the job's. It returns whether the
// run should continue as new first (a long wait grew its history).
func (j *job) awaitBudget(ctx workflow.Context) (continueAsNew bool) {
	reached := j.overBudget()
	if reached == "" {
		j.st.Budget.Reached = ""
		return false
	}
	if j.st.Budget.Reached != reached {
		// Said once per cap reached, not on every run of a long wait.
		j.st.Budget.Reached = reached
		s := j.budgetStatus()
		text := fmt.Sprintf("the token budget of the %s is reached (%s): raise it with: starter budget %s --tokens N (or --per-message N), or end the job: starter end %s",
			reached, tokens.Text(s, reached), j.id, j.id)
		j.audit(ctx, approval.AuditRecord{Event: "budget-reached", Reason: text})
		j.emit(ctx, Event{Kind: "budget", Text: text})
		j.notices().Conversation(ctx, "budget", text, "", "")
	}
	j.phase = PhaseWaitingBudget
	j.updateDetails(ctx)
	info := workflow.GetInfo(ctx)
	lifted := func() bool { return reached == "message" && len(j.st.Queue) > 0 }
	_ = workflow.Await(ctx, func() bool {
		return j.overBudget() == "" || j.endReq != nil || lifted() ||
			info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= maxRunEvents
	})
	if j.overBudget() == "" {
		j.st.Budget.Reached = ""
		j.phase = "thinking"
		return false
	}
	return j.endReq == nil && !lifted() && ctx.Err() == nil
}

// registerBudget sets the budget Update.
func (j *job) registerBudget(ctx workflow.Context) error {
	err := workflow.SetUpdateHandlerWithOptions(ctx, BudgetUpdate,
		func(ctx workflow.Context, b BudgetChange) (BudgetStatus, error) {
			if err := j.awaitStarted(ctx); err != nil {
				return BudgetStatus{}, err
			}
			perJob, perMessage := j.caps()
			if b.TokensPerJob != nil {
				perJob = *b.TokensPerJob
			}
			if b.TokensPerMessage != nil {
				perMessage = *b.TokensPerMessage
			}
			j.st.Budget = Budget{TokensPerJob: perJob, TokensPerMessage: perMessage, Set: true, Reached: j.st.Budget.Reached}
			s := j.budgetStatus()
			text := fmt.Sprintf("budget set by %s: %s per job, %s per message", who(b.By, cmp.Or(b.Channel, "temporal")), tokens.CapText(perJob), tokens.CapText(perMessage))
			j.audit(ctx, approval.AuditRecord{Event: "budget-changed", Approver: b.By, Channel: cmp.Or(b.Channel, "temporal"), Reason: text})
			j.emit(ctx, Event{Kind: "budget", Text: text})
			j.updateDetails(ctx)
			return s, nil
		},
		workflow.UpdateHandlerOptions{
			Validator: func(b BudgetChange) error {
				if err := j.checkStartedOrStarting(); err != nil {
					return err
				}
				if b.TokensPerJob == nil && b.TokensPerMessage == nil {
					return notApplied("say which cap to set: tokensPerJob or tokensPerMessage (0 removes it)")
				}
				for _, v := range []*int{b.TokensPerJob, b.TokensPerMessage} {
					if v != nil && *v < 0 {
						return temporal.NewNonRetryableApplicationError("not applied: a token budget must not be negative", "NotApplied", nil)
					}
				}
				return nil
			},
			Description: `Set the job's token budget (a job that reached it waits): {"tokensPerJob": 500000, "tokensPerMessage": 100000, "by": "you"}; 0 removes a cap, an absent one stays.`,
		})
	if err != nil {
		return fmt.Errorf("register %s update: %w", BudgetUpdate, err)
	}
	return nil
}
