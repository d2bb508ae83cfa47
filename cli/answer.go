package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/cli/cmdline"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/workflows/jobapi"
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
// call's final decision. An answer that did not count comes back as a
// notApplied error (errors.Is errNotApplied), with the job's own words.
func sendDecision(ctx context.Context, c client.Client, id string, d jobapi.ApprovalDecision) (jobapi.DecideResult, error) {
	res, err := update[jobapi.DecideResult](ctx, c, id, jobapi.DecideUpdate, d)
	if err != nil && !errors.Is(err, errNotApplied) {
		err = fmt.Errorf("answer %s in %s: %w", d.CallID, id, err)
	}
	return res, err
}

// sendMode changes a job's mode through the mode Update.
func sendMode(ctx context.Context, c client.Client, id string, m jobapi.ModeChange) (jobapi.ModeResult, error) {
	res, err := update[jobapi.ModeResult](ctx, c, id, jobapi.ModeUpdate, m)
	if err != nil && !errors.Is(err, errNotApplied) {
		err = fmt.Errorf("change the mode of %s: %w", id, err)
	}
	return res, err
}

// retry makes a job waiting for the model endpoint call it again now.
func (a *App) retry(ctx context.Context, c client.Client, id string) error {
	if err := ensureRunning(ctx, c, id, "retry"); err != nil {
		return err
	}
	res, err := update[jobapi.RetryResult](ctx, c, id, jobapi.RetryUpdate, jobapi.RetryRequest{By: app.OSUser()})
	if err != nil {
		if !errors.Is(err, errNotApplied) {
			err = fmt.Errorf("retry %s: %w", id, err)
		}
		return err
	}
	fmt.Fprintf(a.Stdout, "%s: calling the model endpoint again now (failed attempts so far: %d; last error: %s)\n",
		id, res.Attempts, display.Line(res.Error, maxReason))
	return nil
}

// update sends an Update and waits for its result; the job's refusal comes
// back as notApplied.
func update[T any](ctx context.Context, c client.Client, id, name string, arg any) (T, error) {
	var res T
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: name, Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if msg, ok := jobRefusal(err); ok {
		return res, notApplied{msg}
	}
	return res, err
}

// jobRefusal returns the job's message when err is its refusal of an
// answer ("not applied: …", "refused: …").
func jobRefusal(err error) (string, bool) {
	var ae *temporal.ApplicationError
	if err != nil && errors.As(err, &ae) && (ae.Type() == "NotApplied" || ae.Type() == "Refused") {
		return ae.Message(), true
	}
	return "", false
}

// outcomeText says what became of an answered call, for the person who
// answered: "allowed Write notes.md, by alice via cli".
func outcomeText(r jobapi.DecideResult) string {
	verb := "allowed"
	if r.Decision != "allow" {
		verb = "denied"
	}
	s := fmt.Sprintf("%s %s, by %s", verb, display.SafeLine(r.Summary), display.Line(r.By, maxID))
	if r.Channel != "" {
		s += " via " + display.Line(r.Channel, maxID)
	}
	if r.Rule != "" {
		list := "allow"
		if r.Answer == "never" {
			list = "deny"
		}
		s += fmt.Sprintf("; %s rule %s added", list, display.Line(r.Rule, maxReason))
	}
	if r.Decision != "allow" && r.Reason != "" && !strings.HasPrefix(r.Reason, "denied by ") {
		s += " (" + display.Line(r.Reason, maxReason) + ")"
	}
	return s
}

// Limits of what the terminal shows of a name and of a reason (cmdline's).
const (
	maxID     = cmdline.MaxID
	maxReason = cmdline.MaxReason
)

// shownID is a call ID as the terminal shows it: the model chose it.
func shownID(id string) string { return cmdline.ShownID(id) }

// taskLine is the first line of a text, escaped, at most max characters
// of it shown.
func taskLine(s string, max int) string {
	first, _, _ := strings.Cut(s, "\n")
	return display.Line(first, max)
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+prefix)
}
