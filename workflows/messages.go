package workflows

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/workflows/calltext"
)

// A job is a conversation. After its answer it waits for the next message
// (the message Update or signal) instead of ending; a message sent while it
// works is queued and reaches the model with its next call, after the
// running tools' results, so it never cuts a tool off half-way. An
// interrupt stops what runs now: the model call is abandoned, the running
// tools are canceled (Bash's process tree is killed), the calls waiting
// for approval are denied as interrupted, and the model gets the
// interrupt's text at once. A message is conversation, never authority:
// nothing in it changes a mode, a rule or a pending call.

// conversationChange gates the conversation in histories recorded before
// it: those jobs end at their first answer, as they did.
const conversationChange = "conversation"

// registerConversation sets the message, interrupt and end Updates.
func (j *job) registerConversation(ctx workflow.Context) error {
	err := workflow.SetUpdateHandlerWithOptions(ctx, MessageUpdate,
		func(ctx workflow.Context, m Message) (MessageResult, error) {
			if err := j.awaitStarted(ctx); err != nil {
				return MessageResult{}, err
			}
			m = normalizeMessage(m, updateID(ctx))
			if m.Refused != "" {
				j.refuseMessage(ctx, m)
				return MessageResult{}, temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("refused: %s may not speak to this job: %s", who(m.By, m.Channel), m.Refused), "Refused", nil)
			}
			return j.enqueue(ctx, m, false), nil
		},
		workflow.UpdateHandlerOptions{
			Validator: func(m Message) error { return j.checkMessage(m, j.st != nil) },
			Description: `Send the job a message: the next turn of the conversation, or steering while it works ` +
				`(it reaches the model with its next call). Input: {"text": "…", "id": "optional, counts once", "by": "you"}. ` +
				`A message changes no mode, rule or pending call.`,
		})
	if err != nil {
		return fmt.Errorf("register %s update: %w", MessageUpdate, err)
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, InterruptUpdate,
		func(ctx workflow.Context, in Interrupt) (InterruptResult, error) {
			if err := j.awaitStarted(ctx); err != nil {
				return InterruptResult{}, err
			}
			in.Channel = cmp.Or(strings.TrimSpace(in.Channel), "temporal")
			res := j.interruptWork(ctx, in.By, in.Channel)
			if strings.TrimSpace(in.Text) != "" {
				m := normalizeMessage(Message{Text: in.Text, ID: in.ID, By: in.By, Channel: in.Channel}, updateID(ctx))
				r := j.enqueue(ctx, m, true)
				res.Message = &r
			}
			return res, nil
		},
		workflow.UpdateHandlerOptions{
			Validator: func(in Interrupt) error {
				if strings.TrimSpace(in.Text) == "" {
					return j.checkStartedOrStarting()
				}
				return j.checkMessage(Message{Text: in.Text}, j.st != nil)
			},
			Description: `Stop what the job runs now (the model call, the running tools; calls waiting for approval are denied) ` +
				`and give the model the text at once: {"text": "optional", "by": "you"}.`,
		})
	if err != nil {
		return fmt.Errorf("register %s update: %w", InterruptUpdate, err)
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, EndUpdate,
		func(ctx workflow.Context, e End) (EndResult, error) {
			if err := j.awaitStarted(ctx); err != nil {
				return EndResult{}, err
			}
			e.Channel = cmp.Or(strings.TrimSpace(e.Channel), "temporal")
			if j.endReq == nil {
				j.endReq = &e
				j.audit(ctx, approval.AuditRecord{Event: "end-asked", Approver: e.By, Channel: e.Channel, Reason: e.Reason})
				j.interruptWork(ctx, e.By, e.Channel)
			}
			return EndResult{Turns: j.st.Turn, LastAnswer: j.st.LastAnswer}, nil
		},
		workflow.UpdateHandlerOptions{
			Validator: func(End) error { return j.checkStartedOrStarting() },
			Description: `End the job: what runs is interrupted, the transcript saved, and the job completes. ` +
				`Input: {"by": "you", "reason": "optional"}.`,
		})
	if err != nil {
		return fmt.Errorf("register %s update: %w", EndUpdate, err)
	}
	return nil
}

// updateID is the running Update's ID ("" outside one): a message without
// its own ID is known by it, so the server's and the job's deduplication
// agree.
func updateID(ctx workflow.Context) string {
	if info := workflow.GetCurrentUpdateInfo(ctx); info != nil {
		return info.ID
	}
	return ""
}

func normalizeMessage(m Message, id string) Message {
	m.Channel = cmp.Or(strings.TrimSpace(m.Channel), "temporal")
	m.ID = cmp.Or(strings.TrimSpace(m.ID), id)
	m.By = strings.TrimSpace(m.By)
	return m
}

// checkStartedOrStarting is checkStarted for a validator, which may run
// before the job has its state (the settings are still being read): then
// the handler waits for it (awaitStarted).
func (j *job) checkStartedOrStarting() error {
	if j.st == nil {
		return nil
	}
	return j.checkStarted()
}

// awaitStarted waits, in an Update's handler, until the job has its state
// and policy, and refuses if it has ended meanwhile.
func (j *job) awaitStarted(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return j.st != nil && j.policy != nil }); err != nil {
		return err
	}
	return j.checkStarted()
}

// checkStarted refuses what needs the job's state before it has one.
func (j *job) checkStarted() error {
	if j.st == nil {
		return notApplied("the job is still starting; try again in a moment")
	}
	if j.phase == PhaseDone || j.phase == PhaseEnded || j.endReq != nil {
		return notApplied("the job has ended")
	}
	return nil
}

// checkMessage says why a message would not count, or nil. It only reads
// state: it is the message Update's validator.
func (j *job) checkMessage(m Message, started bool) error {
	if started {
		if err := j.checkStarted(); err != nil {
			return err
		}
	}
	text := strings.TrimSpace(m.Text)
	switch {
	case text == "":
		return notApplied("the message has no text")
	case len(m.Text) > MaxMessageBytes:
		return notApplied("the message is %d bytes; at most %d fit in one message", len(m.Text), MaxMessageBytes)
	case !utf8.ValidString(m.Text):
		return notApplied("the message is not valid UTF-8")
	case len(m.ID) > 200 || len(m.By) > 200 || len(m.Channel) > 100:
		return notApplied("the message's id, by or channel is too long")
	}
	return nil
}

// enqueue adds a message for the model: it is audited with who and where,
// announced, and delivered before the next model call. A message whose ID
// the job has seen counts once.
func (j *job) enqueue(ctx workflow.Context, m Message, interrupt bool) MessageResult {
	if m.ID != "" {
		for _, id := range j.st.MessageIDs {
			if id == m.ID {
				return MessageResult{ID: m.ID, Delivery: "duplicate", Queued: len(j.st.Queue)}
			}
		}
		j.st.MessageIDs = append(j.st.MessageIDs, m.ID)
		if extra := len(j.st.MessageIDs) - maxMessageIDs; extra > 0 {
			j.st.MessageIDs = append([]string(nil), j.st.MessageIDs[extra:]...)
		}
	}
	j.st.MessageSeq = max(j.st.MessageSeq, 1) + 1
	q := QueuedMessage{Message: m, Seq: j.st.MessageSeq, At: workflow.Now(ctx), Interrupt: interrupt}
	if q.ID == "" {
		q.ID = fmt.Sprintf("m%d", q.Seq)
	}
	j.st.Queue = append(j.st.Queue, q)
	delivery := "queued"
	if j.st.Waiting {
		delivery = "next"
	}
	j.audit(ctx, approval.AuditRecord{Event: "message", Approver: m.By, Channel: m.Channel, Reason: calltext.FirstLine(m.Text, 200)})
	j.emit(ctx, Event{Kind: "message", Text: fmt.Sprintf("%s: %s", who(m.By, m.Channel), m.Text)})
	j.notices().Conversation(ctx, "message", m.Text, m.By, m.Channel)
	j.updateDetails(ctx)
	return MessageResult{ID: q.ID, Seq: q.Seq, Delivery: delivery, Queued: len(j.st.Queue)}
}

// refuseMessage records a message its channel refused: nothing reaches the
// model.
func (j *job) refuseMessage(ctx workflow.Context, m Message) {
	j.audit(ctx, approval.AuditRecord{Event: "message-refused", Approver: m.By, Channel: m.Channel, Reason: m.Refused})
	j.emit(ctx, Event{Kind: "message", Text: fmt.Sprintf("message from %s refused: %s", who(m.By, m.Channel), m.Refused)})
}

// routeMessage is the message signal's way in: a JSON object or a bare
// string; what would not count is recorded and otherwise ignored.
func (j *job) routeMessage(ctx workflow.Context, raw json.RawMessage) {
	var m Message
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		if err2 := json.Unmarshal(raw, &m.Text); err2 != nil {
			j.emit(ctx, Event{Kind: "signal", Text: fmt.Sprintf("message signal ignored: %v", err)})
			return
		}
	}
	m = normalizeMessage(m, "")
	if err := j.checkMessage(m, true); err != nil {
		j.emit(ctx, Event{Kind: "signal", Text: "message signal ignored: " + strings.TrimPrefix(applicationMessage(err), "not applied: ")})
		return
	}
	if m.Refused != "" {
		j.refuseMessage(ctx, m)
		return
	}
	j.enqueue(ctx, m, false)
}

// deliverMessages hands the queued messages to the model, in order, as the
// user's turns: after the tool results of the answer that was running.
func (j *job) deliverMessages(ctx workflow.Context) {
	if len(j.st.Notes) > 0 {
		msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: strings.Join(j.st.Notes, "\n\n")}
		j.st.Messages = append(j.st.Messages, msg)
		j.added(msg)
		j.st.Notes = nil
	}
	if len(j.st.Queue) == 0 {
		return
	}
	for _, q := range j.st.Queue {
		msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: q.Text}
		j.st.Messages = append(j.st.Messages, msg)
		j.added(msg)
	}
	j.st.Queue = nil
	j.st.Waiting = false
	j.st.MessageTurn = j.st.Turn
	j.st.MessageTokens = j.st.Usage.TotalTokens
}

// resume continues an ended job of the same name: the conversation is the
// transcript it left (the model reads it from there), and the task is the
// next message. Calls the ended job never ran get a result that says so.
func (j *job) resume(ctx workflow.Context, r *api.Resumed) {
	j.st.MessageBase, j.st.SavedMessages = r.Messages, r.Messages
	j.st.AuditSeq, j.st.AuditSaved = r.AuditSeq, r.AuditSeq
	// The ended job's calls had IDs of their own; a stale answer to one of
	// them (a Slack button) must never name a call of this job.
	j.st.Epoch = r.AuditSeq + 1
	j.st.LastAnswer, j.st.Pending = r.LastAnswer, r.Tokens
	for _, tc := range r.Unanswered {
		j.st.Messages = append(j.st.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: tc.ID,
			Name: tc.Function.Name, Content: "Error: not run: the job ended before this call ran"})
	}
	j.st.Messages = append(j.st.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: j.in.Task})
	j.added(j.st.Messages...)
	text := fmt.Sprintf("continued from the transcript of the ended job (%d messages)", r.Messages)
	event := "job-resumed"
	if f := j.in.ForkOf; f != nil {
		event, text = "fork", fmt.Sprintf("forked from job %s at turn %d (%d messages)", f.Job, f.Turn, r.Messages)
		j.notices().Conversation(ctx, notify.KindFork, text, "", "")
	}
	j.audit(ctx, approval.AuditRecord{Event: event, Reason: text})
	j.emit(ctx, Event{Kind: "message", Text: text})
}

// answerTurn ends a turn of the conversation: the answer is announced and
// saved, and the job waits for the next message.
func (j *job) answerTurn(ctx workflow.Context) {
	j.emit(ctx, Event{Kind: "answer", Text: j.st.LastAnswer})
	j.notices().Conversation(ctx, "answer", j.st.LastAnswer, "", "")
	if err := j.save(ctx); err != nil {
		j.logger.Warn("saving session failed", "error", err)
	}
	j.waitForMessage(ctx)
}

// waitForMessage puts the job in wait for the next message (an interrupt
// with no text, or an answer).
func (j *job) waitForMessage(ctx workflow.Context) {
	j.st.Waiting = true
	j.st.WaitSince = workflow.Now(ctx)
}

// awaitMessage waits for a message, the end Update or the idle limit; it
// returns the reason to end ("" to go on) and whether the run should
// continue as new first (its history is long).
func (j *job) awaitMessage(ctx workflow.Context) (end string, continueAsNew bool) {
	j.phase = PhaseWaitingMessage
	j.updateDetails(ctx)
	deadline := j.st.WaitSince.Add(j.idleLimit())
	remaining := deadline.Sub(workflow.Now(ctx))
	if remaining > 0 {
		info := workflow.GetInfo(ctx)
		ok, err := workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{Timeout: remaining,
			TimerOptions: workflow.TimerOptions{Summary: "idle limit: the job ends unless a message comes"}},
			func() bool {
				return !j.rewinding && (len(j.st.Queue) > 0 || j.endReq != nil ||
					info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= maxRunEvents)
			})
		if err != nil {
			return "", false // canceled: the loop says so
		}
		if ok {
			if j.endReq != nil {
				return "ended", false
			}
			if len(j.st.Queue) == 0 {
				return "", true
			}
			j.phase = "thinking"
			return "", false
		}
	}
	j.audit(ctx, approval.AuditRecord{Event: "idle-ended", Reason: fmt.Sprintf("no message for %s", j.idleLimit())})
	return "idle", false
}

// idleLimit is how long the job waits for a message.
func (j *job) idleLimit() time.Duration {
	if j.in.IdleLimit > 0 {
		return j.in.IdleLimit
	}
	if d := time.Duration(j.st.Settings.Conversation.IdleLimit); d > 0 {
		return d
	}
	return DefaultIdleLimit
}

// workContext is the context of one model call and the tools it asks
// for: an interrupt cancels it, the job goes on.
func (j *job) workContext(ctx workflow.Context) workflow.Context {
	wctx, cancel := workflow.WithCancel(ctx)
	j.stopWork = cancel
	j.interruptedBy = nil
	return wctx
}

// doneWork forgets the work context once its work has ended (it is not
// canceled: what a call began that outlives it, a grant's timer, runs on).
func (j *job) doneWork() {
	j.stopWork = nil
}

// interrupted says whether the work of wctx was interrupted (and the job
// was not canceled as a whole).
func (j *job) interrupted(ctx, wctx workflow.Context) bool {
	return ctx.Err() == nil && wctx.Err() != nil && j.interruptedBy != nil
}

// interruptWork stops the running work, if any, and says what it stopped.
func (j *job) interruptWork(ctx workflow.Context, by, channel string) InterruptResult {
	var res InterruptResult
	if j.stopWork == nil || j.interruptedBy != nil {
		return res
	}
	if j.phase == "thinking" || j.st.ModelWait != nil {
		res.Stopped = append(res.Stopped, "the model call")
	}
	for _, id := range j.runningOrder {
		res.Stopped = append(res.Stopped, j.running[id]+" "+id)
	}
	res.Denied = append(res.Denied, j.order...)
	j.interruptedBy = &Interrupt{By: by, Channel: channel}
	stopped := strings.Join(res.Stopped, ", ")
	if stopped == "" {
		stopped = "nothing was running"
	}
	j.audit(ctx, approval.AuditRecord{Event: "interrupted", Approver: by, Channel: channel,
		Reason: fmt.Sprintf("stopped: %s; denied: %s", stopped, cmp.Or(strings.Join(res.Denied, ", "), "none"))})
	j.emit(ctx, Event{Kind: "interrupt", Text: fmt.Sprintf("interrupted by %s: stopped %s", who(by, channel), stopped)})
	j.stopWork()
	return res
}

// stopWords say how a call that could not go on was stopped: by an
// interrupt (who) or by the job's cancellation.
func (j *job) stopWords() (word, reason string) {
	if i := j.interruptedBy; i != nil {
		return answerInterrupted, "interrupted by " + who(i.By, i.Channel)
	}
	return answerCanceled, "job canceled"
}

// markRunning tracks the tools that run, for what an interrupt names.
func (j *job) markRunning(id, tool string) {
	j.running[id] = tool
	j.runningOrder = append(j.runningOrder, id)
}

func (j *job) markDone(id string) {
	delete(j.running, id)
	j.runningOrder = calltext.Remove(j.runningOrder, id)
}

// ended ends the job on the end Update or its idle limit.
func (j *job) ended(ctx workflow.Context, why string) (JobResult, error) {
	reason := "ended"
	text := "the job ended"
	if why == "idle" {
		reason = "idle"
		text = fmt.Sprintf("the job ended: no message for %s (its idle limit)", j.idleLimit())
	} else if e := j.endReq; e != nil {
		text = "the job was ended by " + who(e.By, e.Channel)
		if e.Reason != "" {
			text += ": " + e.Reason
		}
	}
	j.phase, j.endHow = PhaseEnded, reason
	j.audit(ctx, approval.AuditRecord{Event: "job-ended", Reason: text})
	j.emit(ctx, Event{Kind: "ended", Text: text})
	j.notices().Conversation(ctx, "ended", text, "", "")
	j.bg.Await(ctx)
	// An Update still being handled (an end, a message just queued) gets
	// its answer before the job completes.
	_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
	if err := j.save(ctx); err != nil {
		j.logger.Warn("saving session failed", "error", err)
	}
	j.updateDetails(ctx)
	j.answerBeforeCompleting(ctx)
	return JobResult{Answer: j.st.LastAnswer, Turns: j.st.Turn, Usage: j.st.Usage, Reason: reason}, nil
}

// endAnswerChange puts the answers to the job's last Updates (the end
// Update itself) in a workflow task before the one that completes it.
const endAnswerChange = "end-answer-task"

// answerBeforeCompleting ends the workflow task that answered the end
// Update (and any Update handled with it) before the job completes. The
// server refuses a completion that events raced (an activity finishing, a
// signal: UnhandledCommand), and with it every Update answered in that
// task ("unexpected workflow task failure"): the end's sender got an error
// and the job, the end forgotten, worked on. A short timer makes the
// boundary; a refused completion then costs only a retried task.
func (j *job) answerBeforeCompleting(ctx workflow.Context) {
	if workflow.GetVersion(ctx, endAnswerChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	_ = workflow.NewTimerWithOptions(ctx, time.Millisecond,
		workflow.TimerOptions{Summary: "the end is answered before the job completes"}).Get(ctx, nil)
	_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
}
