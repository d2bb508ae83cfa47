package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.temporal.io/sdk/temporal"

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

// HookRequest is the input of RunHooks: the hooks the workflow selected for the
// point and tool (hooks.Config.CommandHooks, in order), what they receive, and
// the workspace they run in.
type HookRequest struct {
	Hooks   []hooks.CommandHook `json:"hooks"`
	Payload hooks.Payload       `json:"payload"`
	Dir     string              `json:"dir"`
}

// HookResponse is the first non-empty result (Decided reports whether there was
// one) and every hook's outcome, for the audit.
type HookResponse struct {
	Result   hooks.Result    `json:"result"`
	Decided  bool            `json:"decided"`
	Outcomes []hooks.Outcome `json:"outcomes"`
}

// RunHooks runs req.Hooks in order via command.RunAll. A failing hook is an
// outcome, not an activity error (it simply does not decide); only a malformed
// request fails the activity, non-retryably. It heartbeats while hooks run, so
// a lost worker is noticed long before a hook's own timeout; when the activity
// is cancelled the running hook's process group is killed.
func (h *Hooks) RunHooks(ctx context.Context, req HookRequest) (HookResponse, error) {
	if err := req.validate(); err != nil {
		return HookResponse{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("RunHooks: %v", err), "BadHookRequest", err)
	}
	if req.Payload.Workspace == "" {
		req.Payload.Workspace = req.Dir
	}
	if len(req.Hooks) == 0 {
		return HookResponse{Outcomes: []hooks.Outcome{}}, nil
	}

	every := h.HeartbeatEvery
	if every <= 0 {
		every = DefaultHookHeartbeat
	}
	stop := heartbeatEvery(ctx, every, func() any { return "running hooks" })
	res, outs := command.RunAll(ctx, req.Hooks, req.Payload, req.Dir)
	stop()

	if err := ctx.Err(); err != nil {
		// Cancelled or timed out: the outcomes are incomplete; let Temporal
		// report the cancellation rather than a partial answer.
		return HookResponse{}, fmt.Errorf("RunHooks: %w", err)
	}
	return HookResponse{Result: res, Decided: !res.Empty(), Outcomes: outs}, nil
}

func (r HookRequest) validate() error {
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
