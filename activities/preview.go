package activities

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
)

// Limits of a preview: a person reads it in a prompt or a chat message.
const (
	previewMaxLines = 200
	previewMaxBytes = 16 << 10
	// previewMaxInput bounds the files diffed; a larger one is summarised.
	previewMaxInput = 4 << 20
)

// Preview parses, validates and matches a Write or Edit exactly as the tool
// would, and returns the diff instead of writing. It is a read: it needs no
// approval and runs on the host that holds the workspace.
func (t *Tools) Preview(ctx context.Context, req api.PreviewRequest) (api.PreviewResult, error) {
	switch req.Tool {
	case api.EditActivity:
		return t.previewEdit(ctx, req.Call), nil
	case api.WriteActivity:
		return t.previewWrite(req.Call), nil
	}
	return api.PreviewResult{}, fmt.Errorf("no preview for tool %q", req.Tool)
}

func (t *Tools) previewEdit(ctx context.Context, req api.ToolRequest) api.PreviewResult {
	plan, tgt, res := t.planEdit(ctx, req)
	if tgt == nil {
		return api.PreviewResult{Failed: res.Output}
	}
	defer tgt.Close()
	if plan.done != "" {
		return api.PreviewResult{Note: plan.done}
	}
	return unifiedDiff(tgt.Show, plan.original, plan.updated, true)
}

func (t *Tools) previewWrite(req api.ToolRequest) api.PreviewResult {
	req, failed := toolkit.WithBlobs("Write", req)
	if failed != nil {
		return api.PreviewResult{Failed: failed.Output}
	}
	var in writeInput
	if err := toolkit.DecodeInput(req.Input, &in, "file_path", "content"); err != nil {
		return api.PreviewResult{Failed: fmt.Sprintf("Write: %v", err)}
	}
	tgt, err := toolkit.ResolveTarget(req.Workspace, in.FilePath, true)
	if err != nil {
		return api.PreviewResult{Failed: fmt.Sprintf("Write: %v", err)}
	}
	defer tgt.Close()
	old, _, err := toolkit.ReadRegular(tgt.Root, tgt.Rel, previewMaxInput)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return api.PreviewResult{Note: fmt.Sprintf("Write would replace %s (%d bytes); no diff: %v", tgt.Show, len(*in.Content), err)}
	}
	if exists && string(old) == *in.Content {
		return api.PreviewResult{Note: fmt.Sprintf("%s already has this content; nothing would change", tgt.Show)}
	}
	return unifiedDiff(tgt.Show, string(old), *in.Content, exists)
}

// unifiedDiff is the git-style diff of one file, capped for people.
func unifiedDiff(path, before, after string, existed bool) api.PreviewResult {
	if len(before) > previewMaxInput || len(after) > previewMaxInput {
		return api.PreviewResult{Note: fmt.Sprintf("%s: %d bytes → %d bytes (too large to diff)", path, len(before), len(after))}
	}
	from := "a/" + path
	if !existed {
		from = "/dev/null"
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: diffLines(before), B: diffLines(after),
		FromFile: from, ToFile: "b/" + path, Context: 3,
	})
	if err != nil {
		return api.PreviewResult{Failed: fmt.Sprintf("diff %s: %v", path, err)}
	}
	var res api.PreviewResult
	if !existed {
		res.Note = "new file " + path
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var b strings.Builder
	for i, l := range lines {
		if i >= previewMaxLines || b.Len()+len(l) > previewMaxBytes {
			res.Omitted = len(lines) - i
			break
		}
		b.WriteString(l)
	}
	res.Diff = b.String()
	return res
}

// diffLines splits text into lines that keep their "\n"; a last line
// without one carries git's marker, so the diff shows it.
func diffLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if last := lines[len(lines)-1]; last == "" {
		lines = lines[:len(lines)-1]
	} else {
		lines[len(lines)-1] = last + "\n\\ No newline at end of file\n"
	}
	return lines
}
