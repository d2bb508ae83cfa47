package ghhooks

import (
	"context"
	"errors"
	"fmt"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/jobstart"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Comment is an issue comment that calls on custos, as the webhook said it.
type Comment struct {
	// Delivery is GitHub's X-GitHub-Delivery: a redelivery has the same.
	Delivery string
	// Repo is owner/name as GitHub spells it; Workspace the configured
	// workspace of it.
	Repo, Workspace string
	Issue           int
	Title, Body     string
	IssueAuthor     string
	IssueURL        string
	PullRequest     bool
	// Author is the comment's author's login, Text its body.
	Author, Text string
	// Association is the author's author_association with the repository.
	Association string
}

// What Dispatch did.
const (
	Started   = "started"   // a new job for the issue
	Messaged  = "message"   // a message to the issue's running job
	Resumed   = "resumed"   // the issue's ended job goes on with the comment
	Duplicate = "duplicate" // this delivery was counted already
	Refused   = "refused"   // the job refused the message (it says why)
	Busy      = "busy"      // maxRunning GitHub jobs are open: nothing started
)

// BusyError is what admit returns when a comment would start a run while
// Max GitHub-started jobs are open.
type BusyError struct{ Open, Max int }

func (e *BusyError) Error() string {
	return fmt.Sprintf("%d GitHub-started jobs are open (triggers.github.maxRunning %d): no new one starts until one ends", e.Open, e.Max)
}

// Outcome is what became of a comment.
type Outcome struct {
	Job    string `json:"job"`
	Action string `json:"action"`
	Detail string `json:"detail,omitempty"`
}

// memoDelivery is the memo that records which delivery started (or
// resumed) a run: its redelivery finds it there and counts once.
const memoDelivery = "githubDelivery"

// Channel is the channel GitHub's messages carry.
const Channel = "github"

// Jobs starts and continues the issues' jobs on Temporal.
type Jobs struct {
	Client client.Client
	// Route names the worker host that holds a workspace ("" for none),
	// as starter run routes its jobs (app.RouteJob).
	Route func(ctx context.Context, ws string) (string, error)
}

// Dispatch starts the issue's job, or gives its job the comment: as a
// message when it runs, as the next message of a new run when it ended.
// Before it starts a run (a new job, or an ended job's next run) it asks
// admit, and returns admit's error without starting.
func (j *Jobs) Dispatch(ctx context.Context, c Comment, admit Admit) (Outcome, error) {
	id := JobID(c.Repo, c.Issue)
	d, err := j.Client.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		if err := admit(ctx, id); err != nil {
			return Outcome{}, err
		}
		return j.start(ctx, id, c)
	case err != nil:
		return Outcome{}, fmt.Errorf("look up job %s: %w", id, err)
	case startedBy(d) == c.Delivery:
		return Outcome{Job: id, Action: Duplicate, Detail: "this delivery started the job's run"}, nil
	case d.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return j.message(ctx, id, c)
	}
	if err := admit(ctx, id); err != nil {
		return Outcome{}, err
	}
	return j.resume(ctx, id, c)
}

// Admit lets job start a run, or says why not (a *BusyError).
type Admit func(ctx context.Context, job string) error

// Running lists the GitHub-started jobs that are open (running) now:
// custos jobs named github-…, from one visibility listing (the latest page
// holds MaxMaxRunning; past it the count is at least that).
func (j *Jobs) Running(ctx context.Context) ([]string, error) {
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND WorkflowId STARTS_WITH '%s'", jobapi.WorkflowName, jobPrefixAll)
	resp, err := j.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, PageSize: MaxMaxRunning})
	if err != nil {
		return nil, fmt.Errorf("list open GitHub jobs: %w", err)
	}
	var ids []string
	for _, e := range resp.GetExecutions() {
		ids = append(ids, e.GetExecution().GetWorkflowId())
	}
	return ids, nil
}

// startedBy is the delivery that started the described run ("" for none).
func startedBy(d *workflowservice.DescribeWorkflowExecutionResponse) string {
	p := d.GetWorkflowExecutionInfo().GetMemo().GetFields()[memoDelivery]
	var s string
	if p == nil || converter.GetDefaultDataConverter().FromPayload(p, &s) != nil {
		return ""
	}
	return s
}

func (j *Jobs) start(ctx context.Context, id string, c Comment) (Outcome, error) {
	in := jobstart.Input(Task(c), c.Workspace)
	in.Owner = []string{"github:" + c.Author}
	var err error
	if in.Host, err = j.route(ctx, c.Workspace); err != nil {
		return Outcome{}, err
	}
	_, err = jobstart.Start(ctx, j.Client, id, in, jobstart.Options{Memo: map[string]any{memoDelivery: c.Delivery}, FailIfRunning: true})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		// Another comment started it a moment ago: this one is its message.
		return j.message(ctx, id, c)
	}
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{Job: id, Action: Started}, nil
}

// message sends the comment through the message Update, as starter say
// does; the delivery is the Update's and the message's ID, so Temporal and
// the job count a redelivery once.
func (j *Jobs) message(ctx context.Context, id string, c Comment) (Outcome, error) {
	m := jobapi.Message{ID: "github-" + c.Delivery, Text: Message(c), By: "github:" + c.Author, Channel: Channel}
	h, err := j.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateID: m.ID,
		UpdateName: jobapi.MessageUpdate, Args: []any{m}, WaitForStage: client.WorkflowUpdateStageCompleted})
	var res jobapi.MessageResult
	if err == nil {
		err = h.Get(ctx, &res)
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && (ae.Type() == "NotApplied" || ae.Type() == "Refused") {
		return Outcome{Job: id, Action: Refused, Detail: ae.Message()}, nil
	}
	if err != nil {
		return Outcome{}, fmt.Errorf("send the comment to job %s: %w", id, err)
	}
	if res.Delivery == "duplicate" {
		return Outcome{Job: id, Action: Duplicate, Detail: "the job has this message"}, nil
	}
	return Outcome{Job: id, Action: Messaged, Detail: fmt.Sprintf("message %d (%s)", res.Seq, res.Delivery)}, nil
}

// resume continues the ended job with the comment, as starter say does.
func (j *Jobs) resume(ctx context.Context, id string, c Comment) (Outcome, error) {
	last, err := jobstart.FirstInput(ctx, j.Client, id)
	if err != nil {
		return Outcome{}, err
	}
	in := jobstart.ResumeInput(last, jobapi.JobInput{Owner: []string{"github:" + c.Author}}, Message(c))
	// The configured workspace, on the host that holds it now.
	in.Workspace = c.Workspace
	if in.Host, err = j.route(ctx, c.Workspace); err != nil {
		return Outcome{}, err
	}
	err = jobstart.Resume(ctx, j.Client, id, in, jobstart.Options{Memo: map[string]any{memoDelivery: c.Delivery}, FailIfRunning: true})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return j.message(ctx, id, c)
	}
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{Job: id, Action: Resumed}, nil
}

func (j *Jobs) route(ctx context.Context, ws string) (string, error) {
	if j.Route == nil {
		return "", nil
	}
	return j.Route(ctx, ws)
}
