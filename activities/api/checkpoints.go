package api

import (
	"path/filepath"

	openai "github.com/sashabaranov/go-openai"
)

// CheckpointDir is where the checkpoints of a job whose files are files
// are kept: beside its transcript's directory in the workspace's state
// directory (<ws-state>/checkpoints), shared by the workspace's jobs so
// that a content two turns or two jobs saw is stored once. It is "" for a
// job whose files are in the workspace (files empty): custos never
// writes a checkpoint there.
func CheckpointDir(files JobFiles) string {
	if files.Transcript == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(filepath.Dir(files.Transcript)), "checkpoints")
}

// CutTranscriptActivity cuts a job's transcript (a rewind of its
// conversation): on the workspace's host, where the transcript is.
const CutTranscriptActivity = "CutTranscript"

// CutRequest keeps the conversation's messages up to seq After, and the
// tool results that follow it (the answer of the turn rewound to, with
// its calls' results), and drops the rest.
type CutRequest struct {
	Conversation Conversation `json:"conversation"`
	After        int          `json:"after"`
}

// CutResult is the conversation after the cut: Total messages, the last
// of which is Last.
type CutResult struct {
	Total int                          `json:"total"`
	Last  openai.ChatCompletionMessage `json:"last"`
}
