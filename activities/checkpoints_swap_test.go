//go:build linux

package activities

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/checkpoint"
	"github.com/custos-dev/custos/sandbox/pathguard"
)

// A Write or Edit saves the file's current content in the job's
// checkpoint before writing. The attack: the guard checked dir/f.txt, then
// a sandboxed process swapped dir for a link to denied/ (whose f.txt a
// Read rule denies) just before that save. The checkpoint step fails with
// ErrPathChanged, no record is written, and the store never holds the
// denied content, so no rewind can put it into an ordinary file; the
// denied file is unchanged.
func TestFileWriteCheckpointRefusesASwappedLink(t *testing.T) {
	const secret = "TOPSECRET-write-checkpoint"
	for _, tool := range []string{api.WriteActivity, api.EditActivity} {
		t.Run(tool, func(t *testing.T) {
			ws, err := filepath.EvalSymlinks(t.TempDir())
			require.NoError(t, err)
			store := t.TempDir()
			mkfiles(t, ws, map[string]string{"dir/f.txt": "ordinary\n", "denied/f.txt": secret + "\n"})
			tgt, err := toolkit.ResolveTarget(ws, "dir/f.txt", true)
			require.NoError(t, err)
			defer tgt.Close()
			require.NoError(t, os.Rename(filepath.Join(ws, "dir"), filepath.Join(ws, "dir.was")))
			require.NoError(t, os.Symlink("denied", filepath.Join(ws, "dir")))

			req := api.ToolRequest{JobID: "j", CallID: "c", Turn: 1, Workspace: ws, Checkpoints: store,
				Input: json.RawMessage(`{}`)}
			r, err := recordFileWrite(req, tool, tgt, []byte("new\n"))
			require.ErrorIs(t, err, pathguard.ErrPathChanged)
			require.Nil(t, r)
			require.Contains(t, err.Error(), "record a checkpoint")

			recs, err := checkpoint.Store{Dir: store}.Records("j")
			require.NoError(t, err)
			require.Empty(t, recs, "no record of the call")
			require.NoError(t, filepath.WalkDir(store, func(p string, d fs.DirEntry, err error) error {
				if err != nil || !d.Type().IsRegular() {
					return err
				}
				data, err := os.ReadFile(p)
				require.NoError(t, err)
				require.NotContains(t, string(data), secret, "the denied content is in the checkpoint store at %s", p)
				return nil
			}))
			data, err := os.ReadFile(filepath.Join(ws, "denied", "f.txt"))
			require.NoError(t, err)
			require.Equal(t, secret+"\n", string(data))
		})
	}
}
