package activities

import (
	"context"
	"runtime"

	"github.com/custos-dev/custos/activities/api"
)

// DefaultBashLanes is the number of Bash lanes a worker serves when not
// configured: one per CPU, since a command is mostly CPU work.
func DefaultBashLanes() int { return runtime.NumCPU() }

// BashLane returns the lane of a workspace under this worker's lane count.
// A job asks again when its recorded lane went unserved (the worker came
// back with another count).
func (s *Settings) BashLane(ctx context.Context, req api.BashLaneRequest) (string, error) {
	return api.BashLaneQueue(s.Host, req.Workspace, s.lanes()), nil
}

func (s *Settings) lanes() int {
	if s.BashLanes > 0 {
		return s.BashLanes
	}
	return DefaultBashLanes()
}
