// Package frontendtest is a Temporal frontend on the wire, for the tests of
// channels that send jobs Updates and queries (Slack, the inbox): a gRPC
// server on a loopback port speaking the WorkflowService protocol for the
// few methods a channel uses, answered by the test's functions, and a real
// SDK client dialled to it. What a channel sends is recorded exactly as the
// SDK encoded it. A test that needs a real job uses internal/testenv (the
// embedded server) instead: this package costs a fraction of its build.
package frontendtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	updatepb "go.temporal.io/api/update/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc"
)

// Call is one Update or query as the frontend received it.
type Call struct {
	Workflow string
	// Name is the Update's or the query's name.
	Name string
	// Arg is the first argument's JSON ("" without one).
	Arg json.RawMessage
	// UpdateID is the Update's ID ("" for a query).
	UpdateID string
}

// Handler answers a call: the result (encoded as the SDK's default data
// converter does) or an error. A *temporal.ApplicationError is the
// Update's failure, as a workflow's handler or validator returns it; a
// serviceerror (NotFound: no such running job) is the RPC's error.
type Handler func(c Call) (any, error)

// Frontend is the fake frontend. Updates and Queries answer; the zero
// Handler answers every call with an error.
type Frontend struct {
	workflowservice.UnimplementedWorkflowServiceServer

	// Client is an SDK client dialled to the frontend.
	Client client.Client

	mu      sync.Mutex
	update  Handler
	query   Handler
	updates []Call
	queries []Call
}

// Start serves a frontend on a free loopback port until the test ends.
func Start(t testing.TB, update, query Handler) *Frontend {
	t.Helper()
	f := &Frontend{update: update, query: query}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("frontendtest: listen: %v", err)
	}
	srv := grpc.NewServer()
	workflowservice.RegisterWorkflowServiceServer(srv, f)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	c, err := client.NewLazyClient(client.Options{HostPort: ln.Addr().String(), Namespace: "default"})
	if err != nil {
		t.Fatalf("frontendtest: client: %v", err)
	}
	t.Cleanup(c.Close)
	f.Client = c
	return f
}

// Updates are the Updates received, in order.
func (f *Frontend) Updates() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.updates...)
}

// Queries are the queries received, in order.
func (f *Frontend) Queries() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.queries...)
}

// GetSystemInfo says the server has no optional capabilities.
func (f *Frontend) GetSystemInfo(context.Context, *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	return &workflowservice.GetSystemInfoResponse{Capabilities: &workflowservice.GetSystemInfoResponse_Capabilities{}}, nil
}

// UpdateWorkflowExecution answers an Update at once, completed.
func (f *Frontend) UpdateWorkflowExecution(_ context.Context, req *workflowservice.UpdateWorkflowExecutionRequest) (*workflowservice.UpdateWorkflowExecutionResponse, error) {
	in := req.GetRequest().GetInput()
	c := Call{Workflow: req.GetWorkflowExecution().GetWorkflowId(), Name: in.GetName(), Arg: firstArg(in.GetArgs()),
		UpdateID: req.GetRequest().GetMeta().GetUpdateId()}
	f.mu.Lock()
	f.updates = append(f.updates, c)
	h := f.update
	f.mu.Unlock()
	res, err := answer(h, c)
	var ae *temporal.ApplicationError
	if err != nil && !errors.As(err, &ae) {
		return nil, serviceerror.ToStatus(err).Err()
	}
	outcome := &updatepb.Outcome{}
	if err != nil {
		outcome.Value = &updatepb.Outcome_Failure{Failure: temporal.GetDefaultFailureConverter().ErrorToFailure(err)}
	} else {
		p, err := converter.GetDefaultDataConverter().ToPayloads(res)
		if err != nil {
			return nil, fmt.Errorf("frontendtest: encode the result: %w", err)
		}
		outcome.Value = &updatepb.Outcome_Success{Success: p}
	}
	return &workflowservice.UpdateWorkflowExecutionResponse{
		UpdateRef: &updatepb.UpdateRef{WorkflowExecution: req.GetWorkflowExecution(), UpdateId: c.UpdateID},
		Outcome:   outcome, Stage: enumspb.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED,
	}, nil
}

// QueryWorkflow answers a query.
func (f *Frontend) QueryWorkflow(_ context.Context, req *workflowservice.QueryWorkflowRequest) (*workflowservice.QueryWorkflowResponse, error) {
	c := Call{Workflow: req.GetExecution().GetWorkflowId(), Name: req.GetQuery().GetQueryType(), Arg: firstArg(req.GetQuery().GetQueryArgs())}
	f.mu.Lock()
	f.queries = append(f.queries, c)
	h := f.query
	f.mu.Unlock()
	res, err := answer(h, c)
	if err != nil {
		return nil, serviceerror.ToStatus(err).Err()
	}
	p, err := converter.GetDefaultDataConverter().ToPayloads(res)
	if err != nil {
		return nil, fmt.Errorf("frontendtest: encode the result: %w", err)
	}
	return &workflowservice.QueryWorkflowResponse{QueryResult: p}, nil
}

func answer(h Handler, c Call) (any, error) {
	if h == nil {
		return nil, serviceerror.NewUnimplemented("frontendtest: no handler for " + c.Name)
	}
	return h(c)
}

func firstArg(p *commonpb.Payloads) json.RawMessage {
	if p == nil || len(p.GetPayloads()) == 0 {
		return nil
	}
	return json.RawMessage(p.GetPayloads()[0].GetData())
}
