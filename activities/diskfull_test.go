package activities

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/internal/tmpfstest"
)

// Write and Edit on a workspace whose disk is full: the model is told so
// plainly, the file is as it was, and no temporary file is left behind.
func TestWriteAndEditOnFullDisk(t *testing.T) {
	ws := tmpfstest.Mount(t, "1m")
	mkfiles(t, ws, map[string]string{"keep.txt": "old line\n"})
	tmpfstest.Fill(t, ws)
	big := strings.Repeat("new content\n", 2000) // needs pages the disk has not got
	tools := &Tools{}

	res := callTool(t, tools.Write, ws, jsonArgs(t, map[string]string{"file_path": "keep.txt", "content": big}))
	require.True(t, res.IsError, res.Output)
	assert.Contains(t, res.Output, "Write: the disk holding the workspace is full (ENOSPC): nothing was written; keep.txt is left as it was")

	res = callTool(t, tools.Write, ws, jsonArgs(t, map[string]string{"file_path": "new.txt", "content": big}))
	require.True(t, res.IsError, res.Output)
	assert.Contains(t, res.Output, "(ENOSPC): nothing was written")
	assert.NoFileExists(t, filepath.Join(ws, "new.txt"))

	res = callTool(t, tools.Edit, ws, jsonArgs(t, map[string]string{"file_path": "keep.txt", "old_string": "old line", "new_string": big}))
	require.True(t, res.IsError, res.Output)
	assert.Contains(t, res.Output, "Edit: the disk holding the workspace is full (ENOSPC): nothing was written; keep.txt is left as it was")

	got, err := os.ReadFile(filepath.Join(ws, "keep.txt"))
	require.NoError(t, err)
	assert.Equal(t, "old line\n", string(got))
	requireNoTempFiles(t, ws)
}

// A command that cannot write to a full workspace fails, with a note that
// says why: in the sandbox its writes land in an overlay and it exits 0;
// applying them to the workspace is what the full disk refuses.
func TestBashOnFullDisk(t *testing.T) {
	sb := realSandbox(t)
	ws := tmpfstest.Mount(t, "1m")
	tmpfstest.Fill(t, ws)
	tools := &Tools{Sandbox: sb}
	res, err := tools.Bash(t.Context(), api.ToolRequest{Workspace: ws,
		Input: json.RawMessage(`{"command":"head -c 100000 /dev/zero > out.bin"}`)})
	require.NoError(t, err)
	require.True(t, res.IsError, res.Output)
	assert.Contains(t, strings.ToLower(res.Output), "no space left on device")
	assert.NoFileExists(t, filepath.Join(ws, "out.bin"))
	assert.Contains(t, res.Output, "[note: the disk is full (ENOSPC)")
}

// A save to a full state directory fails with the DiskFull type, which
// the workflow parks on, and leaves both files as they were: no torn line.
// Once space is back the same save goes through.
func TestSaveSessionOnFullDisk(t *testing.T) {
	state := tmpfstest.Mount(t, "1m")
	files := api.JobFiles{Transcript: filepath.Join(state, "sessions", "j.jsonl"), Audit: filepath.Join(state, "sessions", "j.audit.jsonl")}
	ctx := context.Background()
	first := api.SaveSessionRequest{Workspace: t.TempDir(), JobID: "j", Files: files, Messages: msgs("a"),
		Audit: []approval.AuditRecord{{Seq: 1, CallID: "c1"}}}
	require.NoError(t, SaveSession(ctx, first))
	before, err := os.ReadFile(files.Transcript)
	require.NoError(t, err)
	filler := tmpfstest.Fill(t, state)

	// Bigger than the slack in the file's last page: part of it lands
	// before the disk refuses, and must be taken back.
	big := strings.Repeat("x", 64<<10)
	second := api.SaveSessionRequest{Workspace: first.Workspace, JobID: "j", Files: files, FirstMessage: 1, Messages: msgs(big),
		Audit: []approval.AuditRecord{{Seq: 2, CallID: "c2", Reason: big}}}
	err = SaveSession(ctx, second)
	require.Error(t, err)
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), "%T: %v", err, err)
	assert.Equal(t, api.DiskFullErrorType, ae.Type())
	assert.True(t, ae.NonRetryable())
	assert.Contains(t, ae.Error(), "the disk holding custos' state directory is full (ENOSPC)")
	after, err := os.ReadFile(files.Transcript)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "no torn line left")

	require.NoError(t, os.Remove(filler))
	require.NoError(t, SaveSession(ctx, second))
	recs, err := ReadAudit(files.Audit)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	data, err := os.ReadFile(files.Transcript)
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(data), "\n"))
}

// custos' state directory full, the workspace not: a Write or an Edit
// whose checkpoint cannot be recorded writes nothing and fails with the
// DiskFull type, which parks the call with the job, rather than telling
// the model of custos' own disk; once space is back the same call lands.
func TestWriteAndEditWithTheStateDirFull(t *testing.T) {
	state := tmpfstest.Mount(t, "1m")
	ws := t.TempDir()
	mkfiles(t, ws, map[string]string{"keep.txt": "old line\n"})
	filler := tmpfstest.Fill(t, state)
	tools := &Tools{}
	req := func(id, input string) api.ToolRequest {
		return api.ToolRequest{Workspace: ws, JobID: "job1", Turn: 1, CallID: id, Input: json.RawMessage(input),
			Checkpoints: filepath.Join(state, "checkpoints")}
	}
	write := req("w1", jsonArgs(t, map[string]string{"file_path": "new.txt", "content": "new"}))
	edit := req("e1", jsonArgs(t, map[string]string{"file_path": "keep.txt", "old_string": "old line", "new_string": "edited"}))
	for name, run := range map[string]func() (api.ToolResult, error){
		"Write": func() (api.ToolResult, error) { return tools.Write(t.Context(), write) },
		"Edit":  func() (api.ToolResult, error) { return tools.Edit(t.Context(), edit) },
	} {
		res, err := run()
		var ae *temporal.ApplicationError
		require.True(t, errors.As(err, &ae), "%s: want a DiskFull error, got %v / %+v", name, err, res)
		assert.Equal(t, api.DiskFullErrorType, ae.Type())
		assert.True(t, ae.NonRetryable(), "retrying at once only fails again: the workflow waits")
		assert.Contains(t, ae.Error(), "the disk holding custos' state directory is full (ENOSPC): "+name+": record a checkpoint")
	}
	assert.NoFileExists(t, filepath.Join(ws, "new.txt"))
	got, err := os.ReadFile(filepath.Join(ws, "keep.txt"))
	require.NoError(t, err)
	assert.Equal(t, "old line\n", string(got))
	requireNoTempFiles(t, ws)

	require.NoError(t, os.Remove(filler))
	res, err := tools.Write(t.Context(), write)
	require.NoError(t, err)
	assert.Contains(t, res.Output, "Created new.txt")
	res, err = tools.Edit(t.Context(), edit)
	require.NoError(t, err)
	assert.Contains(t, res.Output, "Edited keep.txt")
	got, err = os.ReadFile(filepath.Join(ws, "keep.txt"))
	require.NoError(t, err)
	assert.Equal(t, "edited\n", string(got))
}
