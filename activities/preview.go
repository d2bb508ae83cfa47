package activities

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// PreviewActivity is the dry run of a Write or Edit waiting for approval.
const PreviewActivity = "Preview"

// Limits of a preview: a person reads it in a prompt or a chat message.
const (
	previewMaxLines = 200
	previewMaxBytes = 16 << 10
	// previewMaxInput bounds the files diffed; a larger one is summarised.
	previewMaxInput = 4 << 20
)

// PreviewResult is what a Write or Edit would change.
type PreviewResult struct {
	// Diff is a unified diff against the file as it is now ("" when the
	// call would change nothing).
	Diff string `json:"diff,omitempty"`
	// Omitted counts diff lines left out to keep the preview readable.
	Omitted int `json:"omitted,omitempty"`
	// Note says what the call would do when there is no diff to show.
	Note string `json:"note,omitempty"`
	// Failed says why the call would fail: a person may deny knowing that.
	Failed string `json:"failed,omitempty"`
}

// Text renders the preview for a person.
func (r PreviewResult) Text() string {
	switch {
	case r.Failed != "":
		return "Dry run failed — the call would fail as it stands:\n" + r.Failed
	case r.Diff == "":
		return r.Note
	}
	s := r.Diff
	if r.Omitted > 0 {
		s += fmt.Sprintf("… %d more diff lines not shown\n", r.Omitted)
	}
	if r.Note != "" {
		s = r.Note + "\n" + s
	}
	return strings.TrimSuffix(s, "\n")
}

// PreviewRequest names the tool whose call is previewed.
type PreviewRequest struct {
	Tool string      `json:"tool"`
	Call ToolRequest `json:"call"`
}

// Preview parses, validates and matches a Write or Edit exactly as the tool
// would, and returns the diff instead of writing. It is a read: it needs no
// approval and runs on the host that holds the workspace.
func (t *Tools) Preview(ctx context.Context, req PreviewRequest) (PreviewResult, error) {
	switch req.Tool {
	case EditActivity:
		return t.previewEdit(ctx, req.Call), nil
	case WriteActivity:
		return t.previewWrite(req.Call), nil
	}
	return PreviewResult{}, fmt.Errorf("no preview for tool %q", req.Tool)
}

func (t *Tools) previewEdit(ctx context.Context, req ToolRequest) PreviewResult {
	plan, tgt, res := t.planEdit(ctx, req)
	if tgt == nil {
		return PreviewResult{Failed: res.Output}
	}
	defer tgt.Close()
	if plan.done != "" {
		return PreviewResult{Note: plan.done}
	}
	return unifiedDiff(tgt.show, plan.original, plan.updated, true)
}

func (t *Tools) previewWrite(req ToolRequest) PreviewResult {
	var in writeInput
	if err := decodeInput(req.Input, &in, "file_path", "content"); err != nil {
		return PreviewResult{Failed: fmt.Sprintf("Write: %v", err)}
	}
	tgt, err := resolveTarget(req.Workspace, in.FilePath, true)
	if err != nil {
		return PreviewResult{Failed: fmt.Sprintf("Write: %v", err)}
	}
	defer tgt.Close()
	old, _, err := readRegular(tgt.root, tgt.rel, previewMaxInput)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return PreviewResult{Note: fmt.Sprintf("Write would replace %s (%d bytes); no diff: %v", tgt.show, len(*in.Content), err)}
	}
	if exists && string(old) == *in.Content {
		return PreviewResult{Note: fmt.Sprintf("%s already has this content; nothing would change", tgt.show)}
	}
	return unifiedDiff(tgt.show, string(old), *in.Content, exists)
}

// unifiedDiff is the git-style diff of one file, capped for people.
func unifiedDiff(path, before, after string, existed bool) PreviewResult {
	if len(before) > previewMaxInput || len(after) > previewMaxInput {
		return PreviewResult{Note: fmt.Sprintf("%s: %d bytes → %d bytes (too large to diff)", path, len(before), len(after))}
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
		return PreviewResult{Failed: fmt.Sprintf("diff %s: %v", path, err)}
	}
	var res PreviewResult
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
