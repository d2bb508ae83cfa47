package cli

import "github.com/custos-dev/custos/workflows/jobapi"

// A job an editor started (ACP's session/new) has no task: it waits for
// its first message, which is its task in all but name.

// awaitsFirst says the job has no task and no message yet.
func awaitsFirst(st jobapi.Status) bool {
	return st.Task == "" && st.Turn == 0 && st.Messages <= 1
}

// statusTask is the task status shows.
func statusTask(st jobapi.Status) string {
	switch {
	case st.Task != "":
		return taskLine(st.Task, 100)
	case awaitsFirst(st):
		return "(none yet: the job waits for its first message)"
	}
	return "(started without one: its first message began the conversation)"
}

// waitingFor is what a job waiting for a message waits for.
func waitingFor(st jobapi.Status) string {
	if awaitsFirst(st) {
		return "its first message"
	}
	return "your next message"
}

// listedTask is a job's task in the jobs table.
func listedTask(r JobRow) string {
	if r.Task == "" && r.Turn == 0 && r.Status == jobapi.ListWaitingMessage {
		return "(waiting for its first message)"
	}
	return taskLine(r.Task, 60)
}
