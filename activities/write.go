package activities

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
)

//go:embed write.md
var writeDescription string

// writeTool is Write as the model sees it: write.md describes it, and the
// schema names exactly the fields of writeInput.
var writeTool = toolkit.ToolDef{
	Name:        api.WriteActivity,
	Description: toolkit.Describe(writeDescription),
	Schema:      api.WriteSchema,
}

type writeInput struct {
	FilePath string  `json:"file_path"`
	Content  *string `json:"content"`
}

// Write creates or replaces a file with the given content, atomically.
// Retrying it is harmless: the same content lands again (and an unchanged
// file is not even rewritten).
func (t *Tools) Write(ctx context.Context, req api.ToolRequest) (api.ToolResult, error) {
	req, failed := toolkit.WithBlobs("Write", req)
	if failed != nil {
		return *failed, nil
	}
	var in writeInput
	if err := toolkit.DecodeInput(req.Input, &in, "file_path", "content"); err != nil {
		return toolkit.ErrorResult("Write: %v", err), nil
	}
	tgt, err := toolkit.ResolveTarget(req.Workspace, in.FilePath, true)
	if err != nil {
		return toolkit.ErrorResult("Write: %v", err), nil
	}
	defer tgt.Close()
	if msg := toolkit.DeniedTarget("Write", tgt, req.EditDeny, false); msg != "" {
		return toolkit.ErrorResult("%s", msg), nil
	}
	if err := ctx.Err(); err != nil {
		return api.ToolResult{}, err
	}
	data := []byte(*in.Content)

	// Skip the rewrite when nothing would change: a retried Write then
	// leaves mtime alone, and watchers see no spurious change.
	// Limiting the read to the new length keeps this cheap: a file of
	// another size is "too large" or differs anyway; a small old content
	// also makes the change's diff.
	old, _, err := toolkit.ReadRegular(tgt.Root, tgt.Rel, max(int64(len(data)), api.MaxDiffText))
	oldRead := err == nil
	if err == nil && bytes.Equal(old, data) {
		res := api.ToolResult{Output: fmt.Sprintf("%s already has this content (%d bytes); nothing to write", tgt.Show, len(data)), Existed: true}
		if len(old) <= api.MaxDiffText {
			same := string(old)
			res.Previous = &same
		}
		return res, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.log().Debug("Write: existing file not comparable", "path", tgt.Show, "err", err)
	}

	ckpt, err := recordFileWrite(req, "Write", tgt, data)
	if err != nil {
		return toolkit.RecordFailure("Write", err)
	}
	created, err := toolkit.WriteAtomic(tgt.Root, tgt.Rel, data)
	if err != nil {
		closeCheckpoint(ckpt)
		return toolkit.WriteFailure("Write", in.FilePath, err), nil
	}
	t.doneCheckpoint(ckpt)
	verb := "Updated"
	if created {
		verb = "Created"
	}
	t.log().Info("tool Write", "job", req.JobID, "path", tgt.Show, "bytes", len(data), "created", created)
	res := api.ToolResult{Output: fmt.Sprintf("%s %s (%d bytes)", verb, tgt.Show, len(data)), Existed: !created}
	if !created && oldRead && len(old) <= api.MaxDiffText {
		prev := string(old)
		res.Previous = &prev
	}
	return res, nil
}
