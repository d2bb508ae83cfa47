package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// A person's reply in a job's thread, or `/custos say JOB text`, is the
// job's next message: the message Update, with channel "slack" and the
// Slack user who wrote it. A message is conversation, never authority:
// its text is handed to the job as it is and nothing in it is read as a
// command here (a reply saying "approve everything" is a message, not an
// answer). Who may speak to a job is who may approve its calls
// (SLACK_APPROVERS): anyone else's message still goes to the job, marked
// refused, so the job records it, and is never delivered to the model.

// event handles a verified Events API envelope: a message posted in a
// channel the bot is in.
func (b *Bot) event(ev slackevents.EventsAPIEvent) {
	if ev.Type != slackevents.CallbackEvent {
		return
	}
	m, ok := ev.InnerEvent.Data.(*slackevents.MessageEvent)
	if !ok || m == nil {
		return
	}
	msg := *m
	b.async(func(ctx context.Context) { b.threadMessage(ctx, msg) })
}

// fromPerson reports whether m is a person's new reply in a thread of the
// approvals channel: not a bot's (the bot's own included), not an edit, a
// deletion or a join, not a message outside a thread.
func (b *Bot) fromPerson(m slackevents.MessageEvent) bool {
	return m.Channel == b.cfg.Channel && m.ThreadTimeStamp != "" && m.ThreadTimeStamp != m.TimeStamp &&
		(m.SubType == "" || m.SubType == "thread_broadcast") && m.BotID == "" && validID(m.User, "UW")
}

// threadMessage sends a person's reply in a job's thread to the job and
// replies in the thread with what became of it.
func (b *Bot) threadMessage(ctx context.Context, m slackevents.MessageEvent) {
	if !b.fromPerson(m) {
		return
	}
	bot, err := b.botUser(ctx)
	if err != nil {
		b.logger.Warn("slack message not handled: who is the bot?", "err", err)
		return
	}
	if m.User == bot {
		return
	}
	job, err := b.threads.threadJob(ctx, m.ThreadTimeStamp, bot)
	if err != nil {
		b.logger.Warn("slack message not handled", "thread", m.ThreadTimeStamp, "err", err)
		return
	}
	if job == "" {
		return // not a custos job's thread
	}
	msg := jobapi.Message{Text: slackText(m.Text), ID: "slack:" + m.Channel + ":" + m.TimeStamp, By: m.User, Channel: "slack",
		Refused: b.refusal(ctx, m.User)}
	text := fmt.Sprintf("<@%s> %s", m.User, escape(b.deliver(ctx, job, msg)))
	_, _, err = b.api.PostMessageContext(ctx, m.Channel, slack.MsgOptionText(text, false), slack.MsgOptionTS(m.ThreadTimeStamp))
	if err != nil {
		b.logger.Warn("slack: could not reply in the job's thread", "job", job, "err", err)
	}
}

// say is `/custos say JOB text`: the message goes to the job, and, when it
// was taken, into the job's thread for everyone there to read.
func (b *Bot) say(ctx context.Context, cmd slack.SlashCommand, job, text string) string {
	if strings.TrimSpace(text) == "" {
		return "usage: /custos say JOB text"
	}
	msg := jobapi.Message{Text: text, ID: "slack:say:" + cmd.TriggerID, By: userName(cmd.UserID, cmd.UserName), Channel: "slack",
		Refused: b.refusal(ctx, cmd.UserID)}
	if cmd.TriggerID == "" {
		msg.ID = "" // the job gives it one
	}
	outcome, taken := b.sendMessage(ctx, job, msg)
	if taken {
		line := fmt.Sprintf(":bust_in_silhouette: <@%s> via `/custos say`:\n%s", cmd.UserID, conversationText(text))
		err := b.threads.post(ctx, job, func(thread string) (string, error) {
			opts := []slack.MsgOption{slack.MsgOptionText(line, false), slack.MsgOptionMetadata(metadata(job, "say "+msg.ID))}
			if thread != "" {
				opts = append(opts, slack.MsgOptionTS(thread))
			}
			_, ts, err := b.api.PostMessageContext(ctx, b.cfg.Channel, opts...)
			return ts, err
		})
		if err != nil {
			b.logger.Warn("slack: could not post the message in the job's thread", "job", job, "err", err)
		}
	}
	return outcome
}

// deliver sends msg and says what became of it.
func (b *Bot) deliver(ctx context.Context, job string, msg jobapi.Message) string {
	text, _ := b.sendMessage(ctx, job, msg)
	return text
}

// sendMessage is the message Update, waited for: what became of the message, in
// the person's words, and whether the job took it (refused or not
// delivered: false). The Update's ID is the message's, so a redelivered
// event is one Update.
func (b *Bot) sendMessage(ctx context.Context, job string, msg jobapi.Message) (string, bool) {
	var res jobapi.MessageResult
	h, err := b.temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: job, UpdateName: jobapi.MessageUpdate,
		UpdateID: msg.ID, Args: []any{msg}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if err != nil {
		b.logger.Info("slack message not delivered", "job", job, "by", msg.By, "err", err)
	}
	return messageOutcome(res, err, job, msg.Refused), err == nil && msg.Refused == ""
}

// messageOutcome says what became of a message.
func messageOutcome(res jobapi.MessageResult, err error, job, refused string) string {
	shown := display.Line(job, 200)
	switch {
	case refused == NotApprover:
		return "refused: you are not in " + EnvApprovers + ": only approvers may send a job messages. The job recorded your message and did not read it."
	case refused != "":
		return "refused: " + display.Line(refused, 400) + ". The job recorded your message and did not read it."
	case err != nil:
		return messageError(err, shown)
	}
	switch res.Delivery {
	case "next":
		return fmt.Sprintf("delivered to job %s: it works on it now (message %d)", shown, res.Seq)
	case "queued":
		return fmt.Sprintf("queued for job %s: it reads it after what it runs now (message %d; %d waiting)", shown, res.Seq, res.Queued)
	case "duplicate":
		return fmt.Sprintf("already received by job %s (message %d): counted once", shown, res.Seq)
	}
	return fmt.Sprintf("sent to job %s (message %d)", shown, res.Seq)
}

// messageError says why a message was not delivered.
func messageError(err error, job string) string {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) || strings.Contains(err.Error(), "workflow execution already completed") {
		return fmt.Sprintf("not delivered: job %s has ended (or never existed)", job)
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		msg := display.Line(ae.Message(), 400)
		if strings.HasPrefix(msg, "refused:") || strings.HasPrefix(msg, "not applied:") || strings.HasPrefix(msg, "not delivered:") {
			return msg
		}
		return "not delivered: " + msg
	}
	return "not delivered: could not reach the job: " + display.Line(err.Error(), 400)
}

// slackText is a message's text as the person typed it: Slack sends &, <
// and > escaped.
func slackText(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

// botUser is the bot's own user ID (auth.test), asked once.
func (b *Bot) botUser(ctx context.Context) (string, error) {
	b.botMu.Lock()
	defer b.botMu.Unlock()
	if b.botID != "" {
		return b.botID, nil
	}
	res, err := b.api.AuthTestContext(ctx)
	if err != nil {
		return "", fmt.Errorf("slack auth.test: %w", err)
	}
	b.botID = res.UserID
	return b.botID, nil
}
