package policyreplay

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fixtureProposal is testdata/proposed.json standing for the workspace's
// project settings, with testdata/config as the user's config directory
// (it trusts /srv/app and denies Bash(git push:*)).
func fixtureProposal(t *testing.T) Proposal {
	t.Helper()
	data, err := os.ReadFile("testdata/proposed.json")
	require.NoError(t, err)
	return Proposal{Name: "testdata/proposed.json", Data: data, As: StandProject, UserConfigDir: "testdata/config"}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./policyreplay -update to write %s", path)
	assert.Equal(t, string(want), string(got))
}

// The fixture audit replayed with the proposed settings: every kind of
// change it holds, in the loudest-first order, pinned in text and JSON.
func TestReplayFixtureAudit(t *testing.T) {
	jobs, err := FromStateDir("testdata/state", Filter{})
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	rep, err := Replay(jobs, fixtureProposal(t), Options{Home: "/home/dev"})
	require.NoError(t, err)

	var text bytes.Buffer
	require.NoError(t, WriteText(&text, rep))
	golden(t, "replay.golden.txt", text.Bytes())
	js, err := json.MarshalIndent(rep, "", "  ")
	require.NoError(t, err)
	golden(t, "replay.golden.json", append(js, '\n'))

	byCall := map[string]Kind{}
	for _, c := range rep.Changes {
		byCall[c.JobID+"/"+c.CallID] = c.Kind
	}
	for _, tc := range []struct {
		call string
		want Kind // "" : unchanged
		why  string
	}{
		{"job-a/c1", DenialAllowed, "alice denied rm -rf build; the proposal allows it by rule"},
		{"job-a/c2", ApprovalAllowed, "bob allowed npm test; Bash(npm test:*) allows it"},
		{"job-a/c5", "", "the user's deny rule stays first: the proposal's allow cannot override it"},
		{"job-a/c6", "", "a Read stays allowed"},
		{"job-a/c7", AllowedAsks, "Edit(src/**) is no longer in the settings"},
		{"job-a/c8", "", "the timed-out curl still asks"},
		{"job-a/c9", "", "the system rule still denies rm -rf / under Bash(rm:*)"},
		{"job-a/c10", NotReplayable, "a new Write hook would have to run"},
		{"job-a/c11", "", "an unknown tool is refused before the policy"},
		{"job-b/d1", DenialAllowed, "carol denied make, in a mode recorded by no field (assumed)"},
		{"job-b/d2", "", "the mode-changed event gives acceptEdits, which allows the Edit"},
	} {
		assert.Equal(t, tc.want, byCall[tc.call], "%s: %s", tc.call, tc.why)
	}
	assert.Equal(t, 2, rep.DeniedNowAllowed())
	assert.Equal(t, 1, rep.Skipped)
	assert.Equal(t, DenialAllowed, rep.Changes[0].Kind, "the loudest change comes first")
}

// Filters pick a job, a workspace, a time; records before Since are left out.
func TestReplaySourceFilters(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     Filter
		jobs  []string
		calls int
	}{
		{"everything", Filter{}, []string{"job-a", "job-b"}, 14},
		{"one job", Filter{JobID: "job-b"}, []string{"job-b"}, 3},
		{"one workspace", Filter{Workspace: "/srv/app"}, []string{"job-a", "job-b"}, 14},
		{"another workspace", Filter{Workspace: "/srv/other"}, nil, 0},
		{"since", Filter{Since: mustTime(t, "2026-11-30T10:30:00Z")}, []string{"job-a", "job-b"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs, err := FromStateDir("testdata/state", tc.f)
			require.NoError(t, err)
			var ids []string
			calls := 0
			for _, j := range jobs {
				ids = append(ids, j.ID)
				for _, r := range j.Records {
					if decided(r) {
						calls++
					}
				}
			}
			assert.Equal(t, tc.jobs, ids)
			assert.Equal(t, tc.calls, calls)
		})
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return tm
}

// --since leaves out the calls decided before it, not the job's policy
// facts or the mode change before it: a call after them is judged with
// both, nothing assumed.
func TestReplaySinceKeepsTheJobsFacts(t *testing.T) {
	jobs := []Job{pastJob("job-s", []past{{"Bash", "go test ./a", "yes"}, {"Bash", "go test ./b", "yes"}})}
	jobs[0].Records[2].Mode = "" // a record without its mode, after a mode change
	jobs[0].Records = append(jobs[0].Records[:2], append([]approval.AuditRecord{{Seq: 9, JobID: "job-s", Event: "mode-changed",
		Reason: "default -> dontAsk", Time: jobs[0].Records[1].Time}}, jobs[0].Records[2:]...)...)
	since := jobs[0].Records[3].Time
	f := Filter{Since: since}
	jobs[0].Records = f.Trim(jobs[0].Records)
	rep, err := Replay(jobs, Fixed{}, Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Calls, "only the call at or after --since")
	require.Len(t, rep.Changes, 1)
	c := rep.Changes[0]
	assert.Equal(t, approval.ModeDontAsk, c.Mode, "the mode change before --since still counts")
	assert.Equal(t, ApprovalDenied, c.Kind, "dontAsk denies what would ask")
	assert.Empty(t, c.Notes)
	assert.Empty(t, rep.Assumed, "the policy facts on the first record were kept")
}
