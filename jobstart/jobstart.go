// Package jobstart starts custos jobs and continues ended ones: the one path
// from a task to a running AgentWorkflow that `starter run`, `starter say`
// and the GitHub trigger (package ghhooks) share, so a job started from an
// issue comment gets exactly what a job started from the terminal gets (the
// same defaults, task queue, summary and resume rules).
package jobstart

import (
	"context"
	"errors"
	"fmt"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Input is a new job's input with starter run's defaults: the task on the
// (canonical) workspace ws, the default approval timeout and turn limit,
// and no mode of its own (the settings' defaultMode applies).
func Input(task, ws string) jobapi.JobInput {
	return jobapi.JobInput{Task: task, Workspace: ws,
		ApprovalTimeout: jobapi.DefaultApprovalTimeout, MaxTurns: jobapi.DefaultMaxTurns}
}

// Options are what a start may add to the workflow's own options.
type Options struct {
	// Memo is recorded with the run (Describe returns it): the GitHub
	// trigger notes there the delivery that started it.
	Memo map[string]any
	// FailIfRunning makes a start of a job that runs an error
	// (serviceerror.WorkflowExecutionAlreadyStarted) instead of the
	// running job's handle.
	FailIfRunning bool
}

// Start starts job id with in on custos' task queue, Summary(in) as the
// summary the Web UI shows.
func Start(ctx context.Context, c client.Client, id string, in jobapi.JobInput, o Options) (client.WorkflowRun, error) {
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: api.TaskQueue, StaticSummary: Summary(in), Memo: o.Memo,
		WorkflowExecutionErrorWhenAlreadyStarted: o.FailIfRunning,
	}, jobapi.WorkflowName, in)
	if err != nil {
		return nil, fmt.Errorf("start job: %w", err)
	}
	return run, nil
}

// LastInput says whether job id runs and, when it has ended and the server
// still holds its history, the input of its last run (nil when the server
// does not know the job, past its retention).
func LastInput(ctx context.Context, c client.Client, id string) (bool, *jobapi.JobInput, error) {
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("look up job %s: %w", id, err)
	}
	if d.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return true, nil, nil
	}
	in, err := FirstInput(ctx, c, id)
	return false, in, err
}

// FirstInput is the input the last run of job id started with (nil when
// the server has no history of it).
func FirstInput(ctx context.Context, c client.Client, id string) (*jobapi.JobInput, error) {
	it := c.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return nil, nil
	}
	ev, err := it.Next()
	if err != nil {
		return nil, fmt.Errorf("read how job %s started: %w", id, err)
	}
	var in jobapi.JobInput
	attrs := ev.GetWorkflowExecutionStartedEventAttributes()
	if attrs == nil || converter.GetDefaultDataConverter().FromPayloads(attrs.GetInput(), &in) != nil {
		return nil, fmt.Errorf("job %s: its first event is not a custos job's start", id)
	}
	return &in, nil
}

// ResumeInput is the input that continues an ended job with text as its
// next message: the ended run's input (workspace, host, mode, limits) when
// the server still has it (last), else fresh (the workspace and owner a
// caller knows), reading the conversation from the job's transcript.
func ResumeInput(last *jobapi.JobInput, fresh jobapi.JobInput, text string) jobapi.JobInput {
	in := fresh
	if last != nil {
		in = *last
		in.State, in.Once = nil, false
	}
	in.Task, in.Resume = text, true
	return in
}

// Resume starts in (ResumeInput) as a new run of the ended job id, under
// its own name.
func Resume(ctx context.Context, c client.Client, id string, in jobapi.JobInput, o Options) error {
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: api.TaskQueue, StaticSummary: FirstLine(in.Task, 200), Memo: o.Memo,
		WorkflowExecutionErrorWhenAlreadyStarted: o.FailIfRunning,
		WorkflowIDReusePolicy:                    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, jobapi.WorkflowName, in)
	if err != nil {
		return fmt.Errorf("continue job %s: %w", id, err)
	}
	return nil
}

// Summary is the summary the Web UI shows for a job started with in: its
// task's first line, or for a job started without one (an editor's
// session/new, waiting for its first message) what it is and where, so
// that the Web UI's list does not show it blank.
func Summary(in jobapi.JobInput) string {
	if in.Task == "" {
		return FirstLine("an editor's session (ACP) in "+in.Workspace, 200)
	}
	return FirstLine(in.Task, 200)
}

// FirstLine is s up to its first newline, at most n bytes.
func FirstLine(s string, n int) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			s = s[:i]
			break
		}
	}
	if len(s) > n {
		s = s[:n]
	}
	return s
}
