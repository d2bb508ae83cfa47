package workflows

import (
	"cmp"
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/workflows/rewinding"
)

// A rewind takes a job back to the end of an earlier turn. Its files are
// put back by the command on the workspace's host, from the checkpoints
// the tools recorded (package checkpoint); the conversation is cut here,
// by the rewind Update, only while the job waits for a message, so no
// tool call runs and none is about to: the job then waits for the next
// message as after that turn's answer. Turn numbers go on from where they
// were, so no call of the job ever has an ID an earlier call had (an old
// Slack button cannot approve a new call).

// rewindChange gates the rewind Update's activity in workflow histories.
const rewindChange = "rewind"

// registerRewind sets the rewind Update.
func (j *job) registerRewind(ctx workflow.Context) error {
	err := workflow.SetUpdateHandlerWithOptions(ctx, RewindUpdate,
		func(ctx workflow.Context, r Rewind) (RewindResult, error) {
			if err := j.awaitStarted(ctx); err != nil {
				return RewindResult{}, err
			}
			if err := j.checkRewind(r); err != nil {
				return RewindResult{}, err
			}
			return j.rewind(ctx, r)
		},
		workflow.UpdateHandlerOptions{
			Validator: func(r Rewind) error {
				if j.st == nil {
					return nil
				}
				return j.checkRewind(r)
			},
			Description: `Take the job back to the end of turn "to": with "conversation": true the conversation is cut there ` +
				`and the job waits for a message (only while it waits for one). Input: {"to": N, "conversation": true, "by": "you"}. ` +
				`The files are put back by starter rewind on the workspace's host.`,
		})
	if err != nil {
		return fmt.Errorf("register %s update: %w", RewindUpdate, err)
	}
	return nil
}

// checkRewind says why r cannot be done now, or nil.
func (j *job) checkRewind(r Rewind) error {
	if err := j.checkStarted(); err != nil {
		return err
	}
	switch {
	case r.To < 0 || r.To > j.st.Turn:
		return notApplied("turn %d: the job has had %d turns", r.To, j.st.Turn)
	case !r.Conversation:
		return nil
	case !j.st.Waiting || j.phase != PhaseWaitingMessage || len(j.st.Queue) > 0 || j.rewinding:
		return notApplied("the job is %s: a rewind waits until it waits for a message (starter interrupt first)", j.phase)
	case r.To > 0 && rewinding.TurnSeq(j.st, r.To) == 0:
		return notApplied("turn %d is older than what this job knows of its turns; the conversation can be cut only at a later one", r.To)
	}
	return nil
}

// rewind cuts the conversation (when asked), audits the rewind and tells
// the channels.
func (j *job) rewind(ctx workflow.Context, r Rewind) (RewindResult, error) {
	r.Channel = cmp.Or(strings.TrimSpace(r.Channel), "temporal")
	var what []string
	if r.Files != "" {
		what = append(what, "files: "+r.Files)
	}
	if r.Conversation {
		j.rewinding = true
		err := j.cutConversation(ctx, r.To)
		j.rewinding = false
		if err != nil {
			return RewindResult{}, err
		}
		what = append(what, fmt.Sprintf("conversation cut at the end of turn %d (%d messages)", r.To, j.st.Total()))
	}
	text := fmt.Sprintf("rewound to turn %d: %s", r.To, strings.Join(what, "; "))
	j.audit(ctx, approval.AuditRecord{Event: "rewind", Approver: r.By, Channel: r.Channel, Reason: text})
	j.emit(ctx, Event{Kind: "rewind", Text: text})
	j.notices().Conversation(ctx, notify.KindRewind, text, r.By, r.Channel)
	j.updateDetails(ctx)
	return RewindResult{Messages: j.st.Total(), Turn: r.To}, nil
}

// cutConversation cuts the transcript after turn to (rewinding.Cut).
func (j *job) cutConversation(ctx workflow.Context, to int) error {
	if workflow.GetVersion(ctx, rewindChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return notApplied("this job's code predates rewinds")
	}
	return rewinding.Cut(ctx, j.onHost, j.conversation(), j.st, to)
}
