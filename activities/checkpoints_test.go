package activities

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/checkpoint"
	"github.com/custos-dev/custos/internal/gittest"
)

// treeState is every entry under dir (.git included): kind, mode,
// content or link target, so a test can say two trees are one.
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link " + target
		case fi.IsDir():
			out[rel] = "dir " + fi.Mode().Perm().String()
		default:
			data, _ := os.ReadFile(p)
			out[rel] = fi.Mode().String() + " " + string(data)
		}
		return nil
	}))
	return out
}

// Every tool that changes the workspace records what it changed before it
// changes it, and a rewind to the turn before puts the workspace back
// exactly, .git untouched.
func TestCheckpointRecordedAndRewound(t *testing.T) {
	tests := []struct {
		name  string
		tool  string
		input string
		bash  bool
		// want are the paths the record names, with their kinds after.
		want map[string]string
	}{
		{name: "write creates parents", tool: api.WriteActivity, input: `{"file_path":"new/deep/f.txt","content":"hi\n"}`,
			want: map[string]string{"new": "dir", "new/deep": "dir", "new/deep/f.txt": "file"}},
		{name: "write keeps an executable's mode", tool: api.WriteActivity, input: `{"file_path":"run.sh","content":"#!/bin/sh\necho new\n"}`,
			want: map[string]string{"run.sh": "file"}},
		{name: "edit", tool: api.EditActivity, input: `{"file_path":"a.txt","old_string":"alpha","new_string":"omega"}`,
			want: map[string]string{"a.txt": "file"}},
		{name: "bash writes, removes, renames, links", tool: api.BashActivity, bash: true,
			input: `{"command":"echo more >> a.txt && rm -r tree && mv run.sh ran.sh && ln -s a.txt lnk && mkdir -p made/sub && chmod 600 keep.txt && git -c user.name=t -c user.email=t@t commit -qm x --allow-empty"}`,
			want: map[string]string{"a.txt": "file", "tree": "absent", "tree/x": "absent", "tree/sub": "absent", "tree/sub/y": "absent",
				"run.sh": "absent", "ran.sh": "file", "lnk": "symlink", "made": "dir", "made/sub": "dir", "keep.txt": "file"}},
		// The new tree is an opaque directory of the upper layer: the old
		// one's files are recorded removed, the new one's as written.
		{name: "bash replaces a directory, changes a mode", tool: api.BashActivity, bash: true,
			input: `{"command":"rm -r tree && mkdir tree && echo n > tree/x && chmod 700 run.sh"}`,
			want:  map[string]string{"tree/x": "file", "tree/sub": "absent", "tree/sub/y": "absent", "run.sh": "file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws, store := t.TempDir(), t.TempDir()
			t.Cleanup(checkpoint.Wait) // the background finalizing of a Bash call's record, before the store goes
			mkfiles(t, ws, map[string]string{"a.txt": "alpha\n", "run.sh": "#!/bin/sh\n", "keep.txt": "k\n",
				"tree/x": "x\n", "tree/sub/y": "y\n", ".git/HEAD": "ref: refs/heads/main\n"})
			require.NoError(t, os.Chmod(filepath.Join(ws, "run.sh"), 0o755))
			tools := &Tools{}
			if tc.bash {
				tools.Sandbox = realSandbox(t)
				gitInit(t, ws)
			}
			before := treeState(t, ws)
			req := api.ToolRequest{JobID: "job-1", CallID: "call_1", Turn: 3, Workspace: ws, Checkpoints: store, Input: json.RawMessage(tc.input)}
			var res api.ToolResult
			var err error
			switch tc.tool {
			case api.WriteActivity:
				res, err = tools.Write(t.Context(), req)
			case api.EditActivity:
				res, err = tools.Edit(t.Context(), req)
			default:
				res, err = tools.Bash(t.Context(), req)
			}
			require.NoError(t, err)
			require.False(t, res.IsError, res.Output)

			s := checkpoint.Store{Dir: store}
			recs, err := s.Records("job-1")
			require.NoError(t, err)
			require.Len(t, recs, 1)
			require.True(t, recs[0].Done)
			require.False(t, recs[0].Staged, "a staged record is finalized before it is read")
			stages, _ := filepath.Glob(filepath.Join(s.JobDir("job-1"), "stage-*"))
			require.Empty(t, stages, "a finalized record's stage is gone")
			require.Equal(t, 3, recs[0].Turn)
			require.Equal(t, "call_1", recs[0].Call)
			got := map[string]string{}
			for _, c := range recs[0].Changes {
				got[c.Path] = c.After.Kind
			}
			require.Equal(t, tc.want, got)

			p, err := s.PlanRewind("job-1", ws, 2)
			require.NoError(t, err)
			require.Empty(t, p.Conflicts)
			applied, err := s.ApplyRewind(ws, p, false)
			require.NoError(t, err)
			require.Empty(t, applied.Failed)
			after := treeState(t, ws)
			if tc.bash {
				// The commit stays: .git is never rewritten.
				for k := range after {
					if checkpoint.InGit(k) {
						delete(after, k)
					}
				}
				for k := range before {
					if checkpoint.InGit(k) {
						delete(before, k)
					}
				}
			}
			require.Equal(t, before, after)
		})
	}
}

// gitInit makes ws a repository with one commit, by the host's git.
func gitInit(t *testing.T, ws string) {
	t.Helper()
	require.NoError(t, os.RemoveAll(filepath.Join(ws, ".git")))
	gittest.NewRepo(t, ws)
}

// A file someone changed after the job wrote it is not overwritten by a
// rewind unless forced.
func TestCheckpointRewindConflict(t *testing.T) {
	ws, store := t.TempDir(), t.TempDir()
	mkfiles(t, ws, map[string]string{"a.txt": "mine\n"})
	tools := &Tools{}
	req := api.ToolRequest{JobID: "j", CallID: "c1", Turn: 1, Workspace: ws, Checkpoints: store,
		Input: json.RawMessage(`{"file_path":"a.txt","content":"job\n"}`)}
	res, err := tools.Write(t.Context(), req)
	require.NoError(t, err)
	require.False(t, res.IsError, res.Output)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("someone else\n"), 0o644))

	s := checkpoint.Store{Dir: store}
	p, err := s.PlanRewind("j", ws, 0)
	require.NoError(t, err)
	require.Len(t, p.Conflicts, 1)
	require.Equal(t, "a.txt", p.Conflicts[0].Path)
	_, err = s.ApplyRewind(ws, p, false)
	require.ErrorIs(t, err, checkpoint.ErrConflicts)
	data, _ := os.ReadFile(filepath.Join(ws, "a.txt"))
	require.Equal(t, "someone else\n", string(data), "refused: nothing overwritten")

	_, err = s.ApplyRewind(ws, p, true)
	require.NoError(t, err)
	data, _ = os.ReadFile(filepath.Join(ws, "a.txt"))
	require.Equal(t, "mine\n", string(data), "forced: put back")
}
