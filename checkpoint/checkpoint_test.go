package checkpoint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// record writes job's record of one call changing rel to data in ws,
// applied when apply (else as a kill between the record and the change
// leaves it).
func record(t *testing.T, s Store, ws, job string, turn int, rel, data string, apply bool) {
	t.Helper()
	r, err := s.Start(Call{Job: job, Turn: turn, Call: "c", Tool: "Write"}, ws)
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, r.Before(rel))
	require.NoError(t, r.AfterData(rel, []byte(data), 0o644))
	require.NoError(t, r.Commit())
	if !apply {
		return
	}
	replace(t, filepath.Join(ws, rel), data)
	require.NoError(t, r.Done())
}

// replace puts data at path as the tools do: a new file renamed over it.
func replace(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path+".new", []byte(data), 0o644))
	require.NoError(t, os.Rename(path+".new", path))
}

// A record is written before the change: killed between the two, the
// workspace holds the before side, and a rewind takes it as the job's.
// Killed after, it holds the after side, also the job's.
func TestRecordBeforeChangeSurvivesKill(t *testing.T) {
	tests := []struct {
		name    string
		applied bool
	}{
		{name: "killed before the change", applied: false},
		{name: "killed after the change, before Done", applied: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws, s := t.TempDir(), Store{Dir: t.TempDir()}
			require.NoError(t, os.WriteFile(filepath.Join(ws, "f"), []byte("old"), 0o644))
			r, err := s.Start(Call{Job: "j", Turn: 1, Call: "c", Tool: "Write"}, ws)
			require.NoError(t, err)
			require.NoError(t, r.Before("f"))
			require.NoError(t, r.AfterData("f", []byte("new"), 0o644))
			require.NoError(t, r.Commit())
			if tc.applied {
				replace(t, filepath.Join(ws, "f"), "new")
			}
			r.Close() // no Done: the kill

			p, err := s.PlanRewind("j", ws, 0)
			require.NoError(t, err)
			require.Empty(t, p.Conflicts)
			_, err = s.ApplyRewind(ws, p, false)
			require.NoError(t, err)
			data, err := os.ReadFile(filepath.Join(ws, "f"))
			require.NoError(t, err)
			require.Equal(t, "old", string(data))
		})
	}
}

// A content is stored once, however many turns and jobs see it.
func TestObjectsDeduplicated(t *testing.T) {
	ws, s := t.TempDir(), Store{Dir: t.TempDir()}
	require.NoError(t, os.WriteFile(filepath.Join(ws, "f"), []byte("base"), 0o644))
	record(t, s, ws, "job-a", 1, "f", "same", true)
	record(t, s, ws, "job-a", 2, "f", "base", true)
	record(t, s, ws, "job-b", 1, "f", "same", true)
	var n int
	require.NoError(t, filepath.WalkDir(filepath.Join(s.Dir, "objects"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	}))
	require.Equal(t, 2, n, "two contents, three calls in two jobs")
}

// Rewinding to a turn keeps that turn's changes and undoes the later ones.
func TestRewindToTurn(t *testing.T) {
	ws, s := t.TempDir(), Store{Dir: t.TempDir()}
	require.NoError(t, os.WriteFile(filepath.Join(ws, "f"), []byte("0"), 0o644))
	for turn, v := range []string{"1", "2", "3"} {
		record(t, s, ws, "j", turn+1, "f", v, true)
	}
	tests := []struct {
		to   int
		want string
	}{{to: 3, want: "3"}, {to: 2, want: "2"}, {to: 0, want: "0"}}
	for _, tc := range tests {
		p, err := s.PlanRewind("j", ws, tc.to)
		require.NoError(t, err)
		_, err = s.ApplyRewind(ws, p, false)
		require.NoError(t, err)
		data, _ := os.ReadFile(filepath.Join(ws, "f"))
		require.Equal(t, tc.want, string(data), "rewind to %d", tc.to)
		recs, err := s.Records("j")
		require.NoError(t, err)
		require.Len(t, recs, tc.to, "the calls rewound are no longer the job's")
		require.NoError(t, os.RemoveAll(s.JobDir("j")))
		replace(t, filepath.Join(ws, "f"), "0")
		for turn, v := range []string{"1", "2", "3"} {
			record(t, s, ws, "j", turn+1, "f", v, true)
		}
	}
}
