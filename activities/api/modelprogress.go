package api

// ModelProgress is the model activity's heartbeat details while it streams
// an answer with a stream server (a worker started by Serve): how far the
// answer got, and where a follower on any host reads its text as it is
// written (Stream, a URL of the worker's stream listener) with Token, a
// random token of this activity alone that dies with it. Any client of the
// Temporal server reads it from the pending activity
// (DescribeWorkflowExecution); heartbeat details never enter history when
// the activity succeeds. Without a stream server the details are the
// progress text alone.
type ModelProgress struct {
	Progress string `json:"progress"`
	Stream   string `json:"stream,omitempty"`
	Token    string `json:"token,omitempty"`
}
