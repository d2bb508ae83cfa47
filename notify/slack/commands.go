package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/slack-go/slack"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/workflows/jobapi"
)

const commandUsage = "usage: /custos mode JOB default|plan|acceptEdits|dontAsk|bypass, /custos status JOB, /custos grants JOB, /custos revoke JOB GRANT or /custos say JOB text"

// command handles "/custos mode JOB MODE" and "/custos status JOB".
func (b *Bot) command(ctx context.Context, cmd slack.SlashCommand) {
	args := strings.Fields(cmd.Text)
	switch {
	case len(args) == 3 && args[0] == "mode":
		b.reply(ctx, cmd.ResponseURL, b.changeMode(ctx, cmd, args[1], args[2]))
	case len(args) == 2 && args[0] == "status":
		b.reply(ctx, cmd.ResponseURL, b.statusText(ctx, args[1]))
	case len(args) == 2 && args[0] == "grants":
		b.reply(ctx, cmd.ResponseURL, b.grantsText(ctx, args[1]))
	case len(args) == 3 && args[0] == "revoke":
		b.reply(ctx, cmd.ResponseURL, b.revoke(ctx, cmd, args[1], args[2]))
	case len(args) >= 2 && args[0] == "say":
		// The text as typed, spaces and lines kept: everything after the job.
		rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(cmd.Text), "say"))
		b.reply(ctx, cmd.ResponseURL, b.say(ctx, cmd, args[1], strings.TrimSpace(rest[len(args[1]):])))
	default:
		b.reply(ctx, cmd.ResponseURL, commandUsage)
	}
}

// widens reports whether a mode lets more through without asking than
// default does; narrowing (default, plan) is open to everyone.
func widens(m approval.Mode) bool {
	return m != approval.ModeDefault && m != approval.ModePlan
}

func (b *Bot) changeMode(ctx context.Context, cmd slack.SlashCommand, job, mode string) string {
	m, err := approval.ParseMode(mode)
	if err != nil {
		return "not applied: " + err.Error()
	}
	change := jobapi.ModeChange{Mode: string(m), By: userName(cmd.UserID, cmd.UserName), Channel: "slack"}
	if widens(m) {
		change.Refused = b.refusal(ctx, cmd.UserID)
	}
	h, err := b.temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: job, UpdateName: jobapi.ModeUpdate,
		Args: []any{change}, WaitForStage: client.WorkflowUpdateStageCompleted})
	var res jobapi.ModeResult
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if err != nil {
		var ae *temporal.ApplicationError
		if errors.As(err, &ae) && strings.HasPrefix(ae.Message(), "refused:") && change.Refused == NotApprover {
			return fmt.Sprintf("refused: you are not in %s: only approvers may switch a job to %s (anyone may switch to default or plan)", EnvApprovers, m)
		}
		return answerError(err, job, change.Refused)
	}
	return fmt.Sprintf("job %s: mode %s → %s", job, res.Old, res.New)
}

func (b *Bot) statusText(ctx context.Context, job string) string {
	st, err := b.status(ctx, job)
	if err != nil {
		return err.Error()
	}
	s := fmt.Sprintf("job %s: %s, turn %d, mode %s, %d call(s) waiting", job, st.State, st.Turn, st.Mode, len(st.Pending))
	for _, p := range st.Pending {
		s += fmt.Sprintf("\n• %s %s (call %s)", escape(display.Line(p.Tool, 100)), escape(oneLine(display.SafeLine(p.Summary), 200)), escape(display.Line(p.CallID, 200)))
	}
	return s
}

// grantsText lists a job's live grants.
func (b *Bot) grantsText(ctx context.Context, job string) string {
	st, err := b.status(ctx, job)
	if err != nil {
		return err.Error()
	}
	// Plain text: the reply is escaped whole.
	if len(st.Grants) == 0 {
		return fmt.Sprintf("job %s: no live grants", display.Line(job, 200))
	}
	s := fmt.Sprintf("job %s: %d live grant(s)", display.Line(job, 200), len(st.Grants))
	for _, g := range st.Grants {
		s += fmt.Sprintf("\n• %s `%s` in this %s until %s, given by %s, used %d times", display.Line(g.ID, 200), display.Line(g.Rule, 400),
			g.Scope, g.Until.UTC().Format("2006-01-02 15:04 UTC"), replyWho(g), g.Uses)
	}
	return s
}

// revoke ends a grant. Anyone in the channel may: like a denial, it can
// only stop calls.
func (b *Bot) revoke(ctx context.Context, cmd slack.SlashCommand, job, grant string) string {
	r := jobapi.Revoke{GrantID: grant, By: userName(cmd.UserID, cmd.UserName), Channel: "slack"}
	h, err := b.temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: job, UpdateName: jobapi.RevokeUpdate,
		Args: []any{r}, WaitForStage: client.WorkflowUpdateStageCompleted})
	var g jobapi.Grant
	if err == nil {
		err = h.Get(ctx, &g)
	}
	if err != nil {
		return answerError(err, job, "")
	}
	return fmt.Sprintf("revoked %s: it allowed `%s` (given by %s)", display.Line(g.ID, 200), display.Line(g.Rule, 400), replyWho(g))
}

// replyWho names who gave a grant in a reply (replies are escaped whole:
// no mention in them works, so none is written).
func replyWho(g jobapi.Grant) string {
	s := display.Line(cmpOr(g.By, "someone"), 200)
	if g.Channel != "" {
		s += " via " + display.Line(g.Channel, 100)
	}
	return s
}
