package workflows

import (
	"encoding/json"
	"fmt"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/workflows/calltext"
)

// modelFailed ends the job on a model call the endpoint can never accept
// (a 400 that is not about the context length, or retries used up): the
// error is in the events and the audit.
func (j *job) modelFailed(ctx workflow.Context, err error) error {
	j.emit(ctx, Event{Kind: "error", Text: "model: " + err.Error()})
	if workflow.GetVersion(ctx, "model-error-audit", workflow.DefaultVersion, 1) >= 1 {
		j.audit(ctx, approval.AuditRecord{Event: "model-error", Reason: applicationMessage(err)})
	}
	_ = j.save(ctx)
	return fmt.Errorf("model call on turn %d: %w", j.st.Turn, err)
}

// cutText keeps a text answer cut at the length limit from being taken as
// the final answer: the model is told, and asked to go on. Histories from
// before this take it as the answer.
func (j *job) cutText(ctx workflow.Context, msg openai.ChatCompletionMessage) bool {
	if j.lastFinish != string(openai.FinishReasonLength) {
		return false
	}
	if workflow.GetVersion(ctx, "cut-answer", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return false
	}
	text := fmt.Sprintf("Your last answer was cut at the model's length limit (finish_reason \"length\") after %d bytes of text, "+
		"so custos did not take it as your final answer. Continue from where it stopped; if the task is done, give a short final answer.",
		len(msg.Content))
	note := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: text}
	j.st.Messages = append(j.st.Messages, note)
	j.added(note)
	j.audit(ctx, approval.AuditRecord{Event: "answer-cut", Reason: text})
	j.emit(ctx, Event{Kind: "cut", Text: fmt.Sprintf("the model's answer was cut at the length limit after %d bytes; asking it to continue", len(msg.Content))})
	return true
}

// refusedCall answers a call the model activity refused (cut at the length
// limit, or too large to run): the model is told why, the audit records
// it, nothing runs.
func (j *job) refusedCall(ctx workflow.Context, id, tool string, input json.RawMessage) (string, bool) {
	why, ok := api.RefusedReason(input)
	if !ok {
		return "", false
	}
	var cut struct {
		Cut bool `json:"cut"`
	}
	_ = json.Unmarshal(input, &cut)
	if cut.Cut {
		j.audit(ctx, approval.AuditRecord{Event: "answer-cut", CallID: id, Tool: tool, Reason: why})
	}
	rec := verdictRecord(approval.AuditRecord{JobID: j.id, CallID: id, Tool: tool, Input: input},
		approval.Verdict{Decision: approval.Deny, Layer: approval.LayerRules, Reason: why})
	j.audit(ctx, rec)
	j.emit(ctx, Event{Kind: "decision", CallID: id, Tool: tool, Decision: rec.Decision, Layer: rec.Layer, By: rec.Approver, Text: calltext.Decision(rec)})
	out, _ := json.Marshal(struct {
		Approved bool   `json:"approved"`
		Ran      bool   `json:"ran"`
		Reason   string `json:"reason"`
	}{false, false, why})
	return string(out), true
}
