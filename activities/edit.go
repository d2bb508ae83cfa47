package activities

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
)

//go:embed edit.md
var editDescription string

// editTool is Edit as the model sees it: edit.md describes it, and the
// schema names exactly the fields of editInput.
var editTool = toolkit.ToolDef{
	Name:        api.EditActivity,
	Description: toolkit.Describe(editDescription),
	Schema:      api.EditSchema,
}

type editInput struct {
	FilePath   string  `json:"file_path"`
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all,omitempty"`
}

// editSnippetContext is how many lines around an edit are shown back.
const editSnippetContext = 3

// Edit replaces an exact string in an existing file, atomically.
//
// Retries: Temporal may run an Edit again after it already changed the file
// (the worker died before reporting). A second run must not fail or, worse,
// apply twice. The rules, in order:
//   - old_string no longer occurs but new_string does: report success,
//     "already applied". Limitation: this is also what a model gets if it
//     asks for an edit that someone else already made; the note says so.
//   - on a retry (attempt > 1), when new_string contains old_string, every
//     remaining occurrence of old_string lying inside an occurrence of
//     new_string is taken as the edit already applied (otherwise "foo" →
//     "foo()" would become "foo()()");
//   - on a retry, a deletion (new_string "") whose old_string is gone is
//     taken as applied: nothing is left to verify it by.
//
// On a first attempt, only the first rule applies.
func (t *Tools) Edit(ctx context.Context, req api.ToolRequest) (api.ToolResult, error) {
	plan, tgt, res := t.planEdit(ctx, req)
	if tgt == nil {
		return res, nil
	}
	defer tgt.Close()
	if plan.done != "" {
		return api.ToolResult{Output: plan.done}, nil
	}
	if err := ctx.Err(); err != nil {
		return api.ToolResult{}, err
	}
	ckpt, err := recordFileWrite(req, "Edit", tgt, []byte(plan.updated))
	if err != nil {
		return toolkit.RecordFailure("Edit", err)
	}
	if _, err := toolkit.WriteAtomic(tgt.Root, tgt.Rel, []byte(plan.updated)); err != nil {
		closeCheckpoint(ckpt)
		return toolkit.WriteFailure("Edit", plan.path, err), nil
	}
	t.doneCheckpoint(ckpt)
	t.log().Info("tool Edit", "job", req.JobID, "path", tgt.Show, "replacements", plan.n)

	noun := "occurrence"
	if plan.n != 1 {
		noun = "occurrences"
	}
	msg := fmt.Sprintf("Edited %s: replaced %d %s", tgt.Show, plan.n, noun)
	if plan.n == 1 {
		msg += "\n" + editSnippet(plan.updated, plan.at, plan.newLen)
	}
	text, truncated := toolkit.CapHead(msg, toolkit.MaxOutput(req))
	return api.ToolResult{Output: text, Truncated: truncated}, nil
}

// editPlan is what an Edit would do, worked out without writing: the Edit
// itself and its dry run (Preview) share it.
type editPlan struct {
	path              string // as the model gave it
	original, updated string
	n                 int // replacements
	at, newLen        int // where the first replacement lands, for the snippet
	// done is set when there is nothing to write: the edit is already
	// applied (a retry, or someone made it already).
	done string
}

// planEdit parses and validates an Edit and matches it against the file. It
// returns the open target, or nil and the error result for the model.
func (t *Tools) planEdit(ctx context.Context, req api.ToolRequest) (editPlan, *toolkit.Target, api.ToolResult) {
	req, failed := toolkit.WithBlobs("Edit", req)
	if failed != nil {
		return editPlan{}, nil, *failed
	}
	var in editInput
	if err := toolkit.DecodeInput(req.Input, &in, "file_path", "old_string", "new_string"); err != nil {
		return editPlan{}, nil, toolkit.ErrorResult("Edit: %v", err)
	}
	oldS, newS := *in.OldString, *in.NewString
	if oldS == "" {
		return editPlan{}, nil, toolkit.ErrorResult("Edit: old_string must not be empty; to create a file or replace all of it, use Write")
	}
	if oldS == newS {
		return editPlan{}, nil, toolkit.ErrorResult("Edit: old_string and new_string are identical; nothing to change")
	}
	tgt, err := toolkit.ResolveTarget(req.Workspace, in.FilePath, true)
	if err != nil {
		return editPlan{}, nil, toolkit.ErrorResult("Edit: %v", err)
	}
	fail := func(r api.ToolResult) (editPlan, *toolkit.Target, api.ToolResult) {
		tgt.Close()
		return editPlan{}, nil, r
	}
	if msg := toolkit.DeniedTarget("Edit", tgt, req.EditDeny, false); msg != "" {
		return fail(toolkit.ErrorResult("%s", msg))
	}
	data, _, err := toolkit.ReadRegular(tgt.Root, tgt.Rel, maxEditFileSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail(toolkit.ErrorResult("Edit: %s does not exist; use Write to create it", in.FilePath))
	case err != nil:
		return fail(toolkit.ErrorResult("Edit: %v", err))
	}
	content := string(data)
	retry := toolkit.Attempt(ctx) > 1
	plan := editPlan{path: in.FilePath, original: content, updated: content}

	count := strings.Count(content, oldS)
	if count == 0 {
		switch {
		case newS != "" && strings.Contains(content, newS):
			plan.done = fmt.Sprintf("%s: old_string not found, but new_string is already present: edit already applied, file unchanged", tgt.Show)
			return plan, tgt, api.ToolResult{}
		case newS == "" && retry:
			plan.done = fmt.Sprintf("%s: old_string not found on retry; the deletion was already applied, file unchanged", tgt.Show)
			return plan, tgt, api.ToolResult{}
		}
		return fail(toolkit.ErrorResult("Edit: old_string not found in %s. It must match the file exactly, including whitespace and indentation; Read the file to copy the exact text", in.FilePath))
	}
	if retry && strings.Contains(newS, oldS) && allCovered(content, oldS, newS) {
		plan.done = fmt.Sprintf("%s: every occurrence of old_string is already part of new_string on retry: edit already applied, file unchanged", tgt.Show)
		return plan, tgt, api.ToolResult{}
	}
	if count > 1 && !in.ReplaceAll {
		return fail(toolkit.ErrorResult("Edit: old_string occurs %d times in %s; it must occur exactly once. Include more surrounding lines to make it unique, or set replace_all to replace every occurrence", count, in.FilePath))
	}
	plan.n, plan.at, plan.newLen = 1, strings.Index(content, oldS), len(newS)
	if in.ReplaceAll {
		plan.updated = strings.ReplaceAll(content, oldS, newS)
		plan.n = count
	} else {
		plan.updated = strings.Replace(content, oldS, newS, 1)
	}
	return plan, tgt, api.ToolResult{}
}

// allCovered reports whether every occurrence of old in content lies inside
// an occurrence of new (which contains old).
func allCovered(content, old, new string) bool {
	var spans [][2]int
	for i := 0; ; {
		j := strings.Index(content[i:], new)
		if j < 0 {
			break
		}
		spans = append(spans, [2]int{i + j, i + j + len(new)})
		i += j + 1
	}
	for i := 0; ; {
		j := strings.Index(content[i:], old)
		if j < 0 {
			return true
		}
		p := i + j
		covered := false
		for _, s := range spans {
			if s[0] <= p && p+len(old) <= s[1] {
				covered = true
				break
			}
		}
		if !covered {
			return false
		}
		i = p + 1
	}
}

// editSnippet shows the edited region of the new content with cat -n line
// numbers, so the model can check the result without another Read.
func editSnippet(content string, at, length int) string {
	startLine := strings.Count(content[:at], "\n")
	endLine := startLine + strings.Count(content[at:at+length], "\n")
	lines := strings.Split(content, "\n")
	from := max(startLine-editSnippetContext, 0)
	to := min(endLine+editSnippetContext, len(lines)-1)
	if to-from > 40 {
		to = from + 40 // a huge replacement: its start is enough to check
	}
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, toolkit.TruncateLine(lines[i]))
	}
	return b.String()
}
