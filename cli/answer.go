package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/workflows"
)

// errNotApplied marks an answer the job did not take (the call was decided
// or expired already, or is unknown, or the person may not give it): the
// command exits non-zero.
var errNotApplied = errors.New("answer not applied")

// notApplied carries the job's own words for a refused answer.
type notApplied struct{ msg string }

func (e notApplied) Error() string        { return e.msg }
func (e notApplied) Is(target error) bool { return target == errNotApplied }

// sendDecision answers a call through the decide Update and waits for the
// call's final decision. An answer that did not count comes back as an
// error wrapping errNotApplied, with the job's own words.
func sendDecision(ctx context.Context, c client.Client, id string, d workflows.ApprovalDecision) (workflows.DecideResult, error) {
	var res workflows.DecideResult
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   id,
		UpdateName:   workflows.DecideUpdate,
		Args:         []any{d},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if err != nil {
		if msg, ok := jobRefusal(err); ok {
			return res, notApplied{msg}
		}
		return res, fmt.Errorf("answer %s in %s: %w", d.CallID, id, err)
	}
	return res, nil
}

// sendMode changes a job's mode through the mode Update.
func sendMode(ctx context.Context, c client.Client, id string, m workflows.ModeChange) (workflows.ModeResult, error) {
	var res workflows.ModeResult
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   id,
		UpdateName:   workflows.ModeUpdate,
		Args:         []any{m},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if err != nil {
		if msg, ok := jobRefusal(err); ok {
			return res, notApplied{msg}
		}
		return res, fmt.Errorf("change the mode of %s: %w", id, err)
	}
	return res, nil
}

// jobRefusal returns the job's message when err is its refusal of an
// answer ("not applied: …", "refused: …").
func jobRefusal(err error) (string, bool) {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && (ae.Type() == "NotApplied" || ae.Type() == "Refused") {
		return ae.Message(), true
	}
	return "", false
}

// outcomeText says what became of an answered call, for the person who
// answered: "allowed Write notes.md, by alice via cli".
func outcomeText(r workflows.DecideResult) string {
	verb := "allowed"
	if r.Decision != "allow" {
		verb = "denied"
	}
	s := fmt.Sprintf("%s %s, by %s", verb, r.Summary, r.By)
	if r.Channel != "" {
		s += " via " + r.Channel
	}
	if r.Rule != "" {
		list := "allow"
		if r.Answer == "never" {
			list = "deny"
		}
		s += fmt.Sprintf("; %s rule %s added", list, r.Rule)
	}
	if r.Decision != "allow" && r.Reason != "" && !strings.HasPrefix(r.Reason, "denied by ") {
		s += " (" + r.Reason + ")"
	}
	return s
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+prefix)
}
