package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/activities/transcript"
	"github.com/custos-dev/custos/internal/atomicfile"
)

// CutTranscript cuts a job's transcript after message req.After and the
// tool results that follow it: the conversation as it stood at the end of
// that turn. The file is replaced whole (a new file, synced, renamed
// over), so a kill leaves the old conversation or the cut one.
func CutTranscript(ctx context.Context, req api.CutRequest) (api.CutResult, error) {
	c := req.Conversation
	msgs, err := transcript.Load(c)
	if err != nil {
		return api.CutResult{}, err
	}
	path := c.Files.Or(c.Workspace, c.JobID).Transcript
	return cutInto(msgs, req.After, path)
}

// CopyTranscriptCut writes to dst the transcript src cut after message
// after and the tool results that follow it (a fork's conversation).
func CopyTranscriptCut(src, dst string, after int) (api.CutResult, error) {
	msgs, err := transcript.LoadUpTo(api.Conversation{Files: api.JobFiles{Transcript: src, Audit: src}}, int(^uint(0)>>1))
	if err != nil {
		return api.CutResult{}, err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return api.CutResult{}, fmt.Errorf("fork the transcript: %w", err)
	}
	return cutInto(msgs, after, dst)
}

// cutInto writes msgs, cut after message after and the tool results that
// follow it, to the transcript path, whole.
func cutInto(msgs []openai.ChatCompletionMessage, after int, path string) (api.CutResult, error) {
	if after < 1 || after > len(msgs) {
		return api.CutResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("cut after message %d: the conversation has %d", after, len(msgs)), "BadCut", nil)
	}
	n := after
	for n < len(msgs) && msgs[n].Role == openai.ChatMessageRoleTool {
		n++
	}
	var buf bytes.Buffer
	for i, m := range msgs[:n] {
		b, err := json.Marshal(transcript.Line{Seq: i + 1, Msg: m})
		if err != nil {
			return api.CutResult{}, fmt.Errorf("cut the transcript: line %d: %w", i+1, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := atomicfile.Write(path, buf.Bytes(), 0o600); err != nil {
		return api.CutResult{}, toolkit.ClassifyDiskFull(fmt.Errorf("cut the transcript: %w", err))
	}
	return api.CutResult{Total: n, Last: msgs[n-1]}, nil
}
