package toolkit

import (
	"fmt"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/checkpoint"
	"github.com/custos-dev/custos/display"
)

// StartCheckpoint begins the checkpoint of req's call in the canonical
// workspace ws; nil when the job records none (api.ToolRequest.Checkpoints
// unset: a job whose files are in its workspace, or a test's call).
func StartCheckpoint(req api.ToolRequest, tool, what, ws string) (*checkpoint.Recording, error) {
	if req.Checkpoints == "" {
		return nil, nil
	}
	s := checkpoint.Store{Dir: req.Checkpoints}
	r, err := s.Start(checkpoint.Call{Job: req.JobID, Turn: req.Turn, Call: req.CallID, Tool: tool,
		What: display.Line(what, 200)}, ws)
	if err != nil {
		return nil, fmt.Errorf("record a checkpoint: %w", err)
	}
	return r, nil
}
