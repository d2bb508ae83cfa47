package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/model"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/hooks/command"
)

// DefaultHookHeartbeat is how often RunHooks heartbeats while a hook runs. The
// workflow's heartbeat timeout for RunHooks must be comfortably longer.
const DefaultHookHeartbeat = 5 * time.Second

// Hooks runs configured command hooks (PreToolUse and friends) as an activity:
// they are processes, so they cannot run in workflow code.
type Hooks struct {
	// HeartbeatEvery overrides DefaultHookHeartbeat (tests use a short one).
	HeartbeatEvery time.Duration
}

// RunHooks runs req.Hooks in order via command.RunAll. A failing hook is an
// outcome, not an activity error (it simply does not decide); only a malformed
// request fails the activity, non-retryably. It heartbeats while hooks run, so
// a lost worker is noticed long before a hook's own timeout; when the activity
// is cancelled the running hook's process group is killed.
func (h *Hooks) RunHooks(ctx context.Context, req api.HookRequest) (api.HookResponse, error) {
	if err := validateHookRequest(req); err != nil {
		return api.HookResponse{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("RunHooks: %v", err), "BadHookRequest", err)
	}
	if req.Payload.Workspace == "" {
		req.Payload.Workspace = req.Dir
	}
	// Hooks judge the whole call: contents the model activity kept out of
	// history are read back for them.
	bs := toolkit.JobBlobs(req.Blobs, req.Payload.Workspace, req.Payload.JobID)
	if in, err := toolkit.ExpandInput(bs, req.Payload.Input); err == nil {
		req.Payload.Input = in
	}
	if len(req.Hooks) == 0 {
		return api.HookResponse{Outcomes: []hooks.Outcome{}}, nil
	}

	every := h.HeartbeatEvery
	if every <= 0 {
		every = DefaultHookHeartbeat
	}
	stop := toolkit.HeartbeatEvery(ctx, every, func() any { return "running hooks" })
	res, outs := command.RunAll(ctx, req.Hooks, req.Payload, req.Dir)
	stop()

	if err := ctx.Err(); err != nil {
		// Cancelled or timed out: the outcomes are incomplete; let Temporal
		// report the cancellation rather than a partial answer.
		return api.HookResponse{}, fmt.Errorf("RunHooks: %w", err)
	}
	resp := api.HookResponse{Result: res, Decided: !res.Empty(), Outcomes: outs}
	if err := reduceHookInputs(bs, req.Payload, &resp); err != nil {
		return api.HookResponse{}, fmt.Errorf("RunHooks: %w", err)
	}
	return resp, nil
}

// reduceHookInputs keeps an input a hook rewrote as small in history as the
// model's own (see api.BlobDir): its large contents become blobs again.
func reduceHookInputs(bs toolkit.Blobs, p hooks.Payload, resp *api.HookResponse) error {
	if p.JobID == "" {
		return nil
	}
	reduce := func(in json.RawMessage) (json.RawMessage, error) {
		if len(in) <= api.BlobFieldMin {
			return in, nil
		}
		tc := openai.ToolCall{Function: openai.FunctionCall{Name: p.Tool, Arguments: string(in)}}
		err := model.ReduceCall(bs, &tc)
		return json.RawMessage(tc.Function.Arguments), err
	}
	var err error
	if resp.Result.ModifiedInput, err = reduce(resp.Result.ModifiedInput); err != nil {
		return err
	}
	for i := range resp.Outcomes {
		if resp.Outcomes[i].Result.ModifiedInput, err = reduce(resp.Outcomes[i].Result.ModifiedInput); err != nil {
			return err
		}
	}
	return nil
}

// validateHookRequest refuses a request the hooks cannot run on.
func validateHookRequest(r api.HookRequest) error {
	if r.Dir == "" {
		return errors.New("dir (the workspace) is empty")
	}
	fi, err := os.Stat(r.Dir)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("workspace %s is not a directory", r.Dir)
	}
	for i, h := range r.Hooks {
		if h.Command == "" {
			return fmt.Errorf("hooks[%d] (%s): empty command", i, h.Name)
		}
	}
	return nil
}
