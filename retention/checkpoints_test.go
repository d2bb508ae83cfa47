package retention

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/checkpoint"
)

// A job's checkpoints follow its files: an open job's stay however old;
// an ended job's go once unchanged past the job files' retention, and then
// the objects only they named, while an object another record names (of
// any job) stays.
func TestPlanCheckpoints(t *testing.T) {
	const ws = "workspaces/app-0123456789ab/"
	// Objects are aged by their change time, which only the clock sets:
	// the pass runs "later" instead.
	later := time.Now().Add(31 * day)
	rec := func(job, before, after string) checkpoint.Record {
		return checkpoint.Record{Job: job, Turn: 1, Call: "c", Tool: "Write", Done: true, Changes: []checkpoint.Change{{
			Path: "f", Before: checkpoint.Entry{Kind: checkpoint.File, Sum: before}, After: checkpoint.Entry{Kind: checkpoint.File, Sum: after}}}}
	}
	tests := []struct {
		name    string
		records map[string]checkpoint.Record // job → its one record
		ago     map[string]time.Duration     // job → when its record last changed, from now (the pass is 31 days later)
		open    []string
		want    []string
	}{
		{name: "ended job past retention: records and their own objects go",
			records: map[string]checkpoint.Record{"old": rec("old", blobName(1), blobName(2))},
			ago:     map[string]time.Duration{"old": 0},
			want: []string{ws + "checkpoints/jobs/old", ws + "checkpoints/objects/" + blobName(1), ws + "checkpoints/objects/" + blobName(2),
				ws + "checkpoints/objects/" + blobName(3)}},
		{name: "open job's stay",
			records: map[string]checkpoint.Record{"live": rec("live", blobName(1), blobName(2))},
			ago:     map[string]time.Duration{"live": 0}, open: []string{"live"},
			want: []string{ws + "checkpoints/objects/" + blobName(3)}},
		{name: "an object another job names stays",
			records: map[string]checkpoint.Record{"old": rec("old", blobName(1), blobName(2)), "live": rec("live", blobName(2), blobName(3))},
			ago:     map[string]time.Duration{"old": 0, "live": 0}, open: []string{"live"},
			want: []string{ws + "checkpoints/jobs/old", ws + "checkpoints/objects/" + blobName(1)}},

		{name: "ended job's young records stay, with their objects",
			records: map[string]checkpoint.Record{"young": rec("young", blobName(1), blobName(2))},
			ago:     map[string]time.Duration{"young": 30 * day},
			want:    []string{ws + "checkpoints/objects/" + blobName(3)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			for job, r := range tc.records {
				data, err := json.Marshal(r)
				require.NoError(t, err)
				path := filepath.Join(state, ws, "checkpoints", "jobs", job, "000001-1-c.json")
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
				require.NoError(t, os.WriteFile(path, data, 0o600))
				at := time.Now().Add(tc.ago[job])
				require.NoError(t, os.Chtimes(path, at, at))
				require.NoError(t, os.Chtimes(filepath.Dir(path), at, at))
			}
			for i := 1; i <= 3; i++ {
				put(t, state, ws+"checkpoints/objects/"+blobName(i), 10, 0)
			}
			open := map[string]bool{}
			for _, id := range tc.open {
				open[id] = true
			}
			p, err := PlanPass(Input{State: state, Now: later, Policy: policy, Open: open, OpenKnown: true})
			require.NoError(t, err)
			require.Equal(t, tc.want, removed(state, p))
			res := Apply(p, nil)
			require.Empty(t, res.Errors)
			require.Equal(t, len(tc.want), res.Removed[Checkpoints], "skipped: %v", res.Skipped)
		})
	}
}
