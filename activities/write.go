package activities

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/custos-dev/custos/activities/api"
)

//go:embed write.md
var writeDescription string

// writeTool is Write as the model sees it: write.md describes it, and the
// schema names exactly the fields of writeInput.
var writeTool = toolDef{
	name:        api.WriteActivity,
	description: describe(writeDescription),
	schema:      api.WriteSchema,
}

type writeInput struct {
	FilePath string  `json:"file_path"`
	Content  *string `json:"content"`
}

// Write creates or replaces a file with the given content, atomically.
// Retrying it is harmless: the same content lands again (and an unchanged
// file is not even rewritten).
func (t *Tools) Write(ctx context.Context, req api.ToolRequest) (api.ToolResult, error) {
	req, failed := withBlobs("Write", req)
	if failed != nil {
		return *failed, nil
	}
	var in writeInput
	if err := decodeInput(req.Input, &in, "file_path", "content"); err != nil {
		return errorResult("Write: %v", err), nil
	}
	tgt, err := resolveTarget(req.Workspace, in.FilePath, true)
	if err != nil {
		return errorResult("Write: %v", err), nil
	}
	defer tgt.Close()
	if msg := deniedTarget("Write", tgt, req.EditDeny, false); msg != "" {
		return errorResult("%s", msg), nil
	}
	if err := ctx.Err(); err != nil {
		return api.ToolResult{}, err
	}
	data := []byte(*in.Content)

	// Skip the rewrite when nothing would change: a retried Write then
	// leaves mtime alone, and watchers see no spurious change.
	// Limiting the read to the new length keeps this cheap: a file of
	// another size is "too large" or differs anyway.
	old, _, err := readRegular(tgt.root, tgt.rel, int64(len(data)))
	if err == nil && bytes.Equal(old, data) {
		return api.ToolResult{Output: fmt.Sprintf("%s already has this content (%d bytes); nothing to write", tgt.show, len(data))}, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.log().Debug("Write: existing file not comparable", "path", tgt.show, "err", err)
	}

	ckpt, err := recordFileWrite(req, "Write", tgt, data)
	if err != nil {
		return recordFailure("Write", err)
	}
	created, err := writeAtomic(tgt.root, tgt.rel, data)
	if err != nil {
		closeCheckpoint(ckpt)
		return writeFailure("Write", in.FilePath, err), nil
	}
	t.doneCheckpoint(ckpt)
	verb := "Updated"
	if created {
		verb = "Created"
	}
	t.log().Info("tool Write", "job", req.JobID, "path", tgt.show, "bytes", len(data), "created", created)
	return api.ToolResult{Output: fmt.Sprintf("%s %s (%d bytes)", verb, tgt.show, len(data))}, nil
}
