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
	"github.com/custos-dev/custos/workflows"
)

const commandUsage = "usage: /custos mode JOB default|plan|acceptEdits|dontAsk|bypass, or /custos status JOB"

// command handles "/custos mode JOB MODE" and "/custos status JOB".
func (b *Bot) command(ctx context.Context, cmd slack.SlashCommand) {
	args := strings.Fields(cmd.Text)
	switch {
	case len(args) == 3 && args[0] == "mode":
		b.reply(ctx, cmd.ResponseURL, b.changeMode(ctx, cmd, args[1], args[2]))
	case len(args) == 2 && args[0] == "status":
		b.reply(ctx, cmd.ResponseURL, b.statusText(ctx, args[1]))
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
	change := workflows.ModeChange{Mode: string(m), By: userName(cmd.UserID, cmd.UserName), Channel: "slack"}
	if widens(m) {
		change.Refused = b.refusal(ctx, cmd.UserID)
	}
	h, err := b.temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: job, UpdateName: workflows.ModeUpdate,
		Args: []any{change}, WaitForStage: client.WorkflowUpdateStageCompleted})
	var res workflows.ModeResult
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
