package activities

import "github.com/custos-dev/custos/activities/api"

// The contract's names the end-to-end tests still spell activities.X. They
// are api's, not a second definition; new code names them api.X. Once the
// e2e tests say api.X, this file goes.
const (
	TaskQueue     = api.TaskQueue
	ModelActivity = api.ModelActivity
	ReadActivity  = api.ReadActivity
	WriteActivity = api.WriteActivity
	BashActivity  = api.BashActivity
)

// ToolRequest is api.ToolRequest (see above).
type ToolRequest = api.ToolRequest

// BashLaneQueue is api.BashLaneQueue (see above).
func BashLaneQueue(host, workspace string, lanes int) string {
	return api.BashLaneQueue(host, workspace, lanes)
}
