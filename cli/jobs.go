package cli

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	enums "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// JobRow is one job of `starter jobs --json`, a documented shape
// (docs/automation.md#jobs): fields are added, never renamed or removed.
type JobRow struct {
	Job       string `json:"job"`
	RunID     string `json:"runId"`
	Task      string `json:"task"`
	Workspace string `json:"workspace"`
	Host      string `json:"host,omitempty"`
	// Status is working, waiting-for-person, waiting-for-message, parked
	// or ended; Why says why it is parked or how it ended.
	Status       string              `json:"status"`
	Why          string              `json:"why,omitempty"`
	Phase        string              `json:"phase,omitempty"`
	Mode         string              `json:"mode,omitempty"`
	Turn         int                 `json:"turn"`
	Started      time.Time           `json:"started"`
	LastActivity time.Time           `json:"lastActivity"`
	Ended        *time.Time          `json:"ended,omitempty"`
	Waiting      []jobapi.ListedCall `json:"waiting"`
	Schedule     string              `json:"schedule,omitempty"`
}

// jobsStatuses are what --status accepts: a status, or open (not ended).
var jobsStatuses = []string{jobapi.ListWorking, jobapi.ListWaitingPerson, jobapi.ListWaitingMessage,
	jobapi.ListParked, jobapi.ListEnded, "open"}

// jobs is `starter jobs`: every job the server's visibility has, from one
// listing (each job keeps its status in its memo), newest first.
func (a *App) jobs(ctx context.Context, args []string) error {
	fs := newFlagSet("jobs", a.Stderr)
	asJSON := fs.Bool("json", false, `as JSON: {"jobs": [...]} (docs/automation.md)`)
	status := fs.String("status", "", "only jobs with this status: "+strings.Join(jobsStatuses, ", "))
	workspace := fs.String("workspace", "", "only jobs on this workspace")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("jobs: unexpected %q (filters are --status and --workspace)", pos[0])
	}
	if *status != "" && !slices.Contains(jobsStatuses, *status) {
		return usagef("jobs: --status %q: want one of %s", *status, strings.Join(jobsStatuses, ", "))
	}
	ws := ""
	if *workspace != "" {
		if ws, err = filepath.Abs(*workspace); err != nil {
			return usagef("jobs: --workspace: %v", err)
		}
	}
	c, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	rows, err := ListJobs(ctx, c, *status)
	if err != nil {
		return err
	}
	if ws != "" {
		rows = slices.DeleteFunc(rows, func(r JobRow) bool { return !sameWorkspace(r.Workspace, ws) })
	}
	if *asJSON {
		return writeJSON(a, struct {
			Jobs []JobRow `json:"jobs"`
		}{rows})
	}
	a.writeJobs(rows)
	return nil
}

// sameWorkspace compares a job's (canonical) workspace with one named on
// this host, through symbolic links when the path exists here.
func sameWorkspace(job, named string) bool {
	if job == named {
		return true
	}
	real, err := filepath.EvalSymlinks(named)
	return err == nil && job == real
}

// ListJobs lists every custos job (the latest run of each workflow ID)
// from the server's visibility, newest first; status filters as --status.
func ListJobs(ctx context.Context, c client.Client, status string) ([]JobRow, error) {
	q := fmt.Sprintf("WorkflowType = '%s'", jobapi.WorkflowName)
	switch status {
	case "":
	case jobapi.ListEnded:
		q += " AND ExecutionStatus != 'Running'"
	default:
		q += " AND ExecutionStatus = 'Running'"
	}
	byID := map[string]*JobRow{}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, PageSize: 1000, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			mergeRun(byID, jobRow(e))
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	rows := make([]JobRow, 0, len(byID))
	for _, r := range byID {
		if status == "" || r.Status == status || (status == "open" && r.Status != jobapi.ListEnded) {
			rows = append(rows, *r)
		}
	}
	slices.SortFunc(rows, func(x, y JobRow) int {
		return cmp.Or(y.Started.Compare(x.Started), strings.Compare(x.Job, y.Job))
	})
	return rows, nil
}

// mergeRun keeps the latest run of a job, started when its first run
// began (a job that continued as new, or went on after it ended, is one
// job of several runs).
func mergeRun(byID map[string]*JobRow, r JobRow) {
	have, ok := byID[r.Job]
	if !ok {
		byID[r.Job] = &r
		return
	}
	first := have.Started
	if r.Started.Before(first) {
		first = r.Started
	}
	if r.LastActivity.After(have.LastActivity) || (r.Status != jobapi.ListEnded && have.Status == jobapi.ListEnded) {
		*have = r
	}
	have.Started = first
}

// jobRow is one run as listed: its memo's listing, what visibility says
// of the run (started, ended, how), and the schedule that started it.
func jobRow(e *workflowpb.WorkflowExecutionInfo) JobRow {
	r := JobRow{Job: e.GetExecution().GetWorkflowId(), RunID: e.GetExecution().GetRunId(),
		Started: e.GetStartTime().AsTime().UTC(), Waiting: []jobapi.ListedCall{}}
	var l jobapi.Listing
	if p := e.GetMemo().GetFields()[jobapi.ListingMemo]; p != nil && converter.GetDefaultDataConverter().FromPayload(p, &l) == nil {
		r.Task, r.Workspace, r.Host, r.Status, r.Why, r.Phase, r.Mode, r.Turn = l.Task, l.Workspace, l.Host, l.Status, l.Why, l.Phase, l.Mode, l.Turn
		r.LastActivity = l.Since.UTC()
		if l.Waiting != nil {
			r.Waiting = l.Waiting
		}
	} else {
		// A run from before job listings: what visibility alone says.
		r.Status, r.Phase = jobapi.ListWorking, "unknown (the job started before job listings; see: starter status "+r.Job+")"
		r.LastActivity = r.Started
	}
	if r.Status == "" {
		r.Status = jobapi.ListWorking
	}
	if s := e.GetStatus(); s != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		end := e.GetCloseTime().AsTime().UTC()
		r.Ended, r.LastActivity = &end, end
		r.Status, r.Waiting = jobapi.ListEnded, []jobapi.ListedCall{}
		if s != enums.WORKFLOW_EXECUTION_STATUS_COMPLETED || r.Why == "" {
			r.Why = endedHow(s)
		}
	}
	if v := e.GetSearchAttributes().GetIndexedFields()["TemporalScheduledById"]; v != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(v, &r.Schedule)
	}
	return r
}

// endedHow is how a run ended, as visibility says.
func endedHow(s enums.WorkflowExecutionStatus) string {
	switch s {
	case enums.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return "completed"
	case enums.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return "timed out"
	case enums.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return "continued as new"
	}
	return strings.ToLower(strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_"))
}

// writeJobs prints the jobs as a table, what the jobs wrote escaped.
func (a *App) writeJobs(rows []JobRow) {
	if len(rows) == 0 {
		fmt.Fprintln(a.Stdout, "no jobs")
		return
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSTATUS\tWORKSPACE\tSTARTED\tLAST ACTIVITY\tWAITING\tTASK")
	for _, r := range rows {
		st := r.Status
		if r.Why != "" {
			st += " (" + r.Why + ")"
		}
		var calls []string
		for _, w := range r.Waiting {
			calls = append(calls, shownID(w.Call)+" "+display.Line(w.Summary, 60))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", display.Line(r.Job, maxID), display.Line(st, 60), display.Line(r.Workspace, 60),
			r.Started.Local().Format("2006-01-02 15:04"), r.LastActivity.Local().Format("2006-01-02 15:04"),
			cmp.Or(strings.Join(calls, "; "), "-"), listedTask(r))
	}
	_ = tw.Flush()
}
