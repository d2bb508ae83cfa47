package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// budget sets a job's token caps through the budget Update: a job that
// reached its budget goes on once it is raised.
func (a *App) budget(ctx context.Context, c client.Client, id string, args []string) error {
	fs := newFlagSet("budget", a.Stderr)
	perJob := fs.Int("tokens", -1, "tokens the whole job may spend (0: no cap)")
	perMessage := fs.Int("per-message", -1, "tokens the work on one message may spend (0: no cap)")
	by := fs.String("by", app.OSUser(), "who sets it (recorded in the audit)")
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	change := jobapi.BudgetChange{By: *by, Channel: "cli"}
	if *perJob >= 0 {
		change.TokensPerJob = perJob
	}
	if *perMessage >= 0 {
		change.TokensPerMessage = perMessage
	}
	if change.TokensPerJob == nil && change.TokensPerMessage == nil {
		st, err := queryStatus(ctx, c, id)
		if err != nil {
			return fmt.Errorf("budget of %s: %w", id, err)
		}
		fmt.Fprintf(a.Stdout, "%s: %d tokens used%s\n", id, st.Budget.UsedByJob, budgetLine(st.Budget))
		return nil
	}
	res, err := update[jobapi.BudgetStatus](ctx, c, id, jobapi.BudgetUpdate, change)
	if err != nil {
		if !errors.Is(err, errNotApplied) {
			err = fmt.Errorf("set the budget of %s: %w", id, err)
		}
		return err
	}
	fmt.Fprintf(a.Stdout, "%s: budget set; %d tokens used%s\n", id, res.UsedByJob, budgetLine(res))
	return nil
}

// budgetLine is the usage against the caps, for status: "" without caps.
func budgetLine(b jobapi.BudgetStatus) string {
	var parts []string
	if b.TokensPerJob > 0 {
		parts = append(parts, fmt.Sprintf("of %d for the job", b.TokensPerJob))
	}
	if b.TokensPerMessage > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d for this message", b.UsedByMessage, b.TokensPerMessage))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}
