package api

import (
	"fmt"
	"hash/fnv"
)

// BashLaneQueue is the lane (a single-concurrency task queue) of workspace
// among lanes. A workspace always hashes to the same lane, so its commands
// never overlap, across jobs too; different workspaces spread over the lanes
// and run in parallel. Every worker of a host must serve the same lane count.
func BashLaneQueue(host, workspace string, lanes int) string {
	if lanes < 1 {
		lanes = 1
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(workspace))
	return LaneQueue(host, int(h.Sum32()%uint32(lanes)))
}

// LaneQueue names lane i of a host ("" for a worker without a host).
func LaneQueue(host string, i int) string {
	if host == "" {
		return fmt.Sprintf("%s-%d", BashTaskQueue, i)
	}
	return fmt.Sprintf("%s-%s-%d", BashTaskQueue, host, i)
}

// HostQueue is the task queue of a host's workspace activities.
func HostQueue(host string) string { return TaskQueue + "-host-" + host }

// BashLaneRequest names a job's canonical workspace.
type BashLaneRequest struct {
	Workspace string `json:"workspace"`
}
