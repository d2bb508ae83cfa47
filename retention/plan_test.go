package retention

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

var policy = Policy{JobFiles: 30 * day, Caches: 14 * day, Quarantine: 30 * day, Audits: 365 * day}

// put writes a file of n bytes under state, last changed ago before now.
func put(t testing.TB, state, rel string, n int, ago time.Duration, content ...string) string {
	t.Helper()
	path := filepath.Join(state, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	data := []byte(strings.Join(content, ""))
	if len(data) < n {
		data = append(data, make([]byte, n-len(data))...)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	touch(t, path, ago)
	return path
}

func touch(t testing.TB, path string, ago time.Duration) {
	t.Helper()
	if err := os.Chtimes(path, now.Add(-ago), now.Add(-ago)); err != nil {
		t.Fatal(err)
	}
}

func blobName(i int) string { return fmt.Sprintf("%064x", i) }

func marker(i int) string {
	return fmt.Sprintf(`{"content":"[custos-blob sha256:%s 9000 bytes]"}`, blobName(i))
}

// removed lists what a plan removes, relative to state, sorted.
func removed(state string, p Plan) []string {
	var out []string
	for _, e := range p.Remove {
		rel, _ := filepath.Rel(state, e.Path)
		out = append(out, rel)
	}
	slices.Sort(out)
	return out
}

func TestPlanPass(t *testing.T) {
	const ws = "workspaces/app-0123456789ab/"
	type file struct {
		rel     string
		ago     time.Duration
		content string
	}
	for _, tc := range []struct {
		name      string
		files     []file
		open      []string
		openKnown bool
		policy    Policy
		want      []string
	}{
		{"ended job past retention goes, young one stays", []file{
			{ws + "sessions/old.jsonl", 31 * day, ""}, {ws + "audit/old.jsonl", 31 * day, ""},
			{ws + "sessions/young.jsonl", 29 * day, ""},
		}, nil, true, policy, []string{ws + "sessions/old.jsonl"}},
		{"audits go after their own retention", []file{
			{ws + "sessions/a.jsonl", 400 * day, ""}, {ws + "audit/a.jsonl", 400 * day, ""},
			{ws + "audit/b.jsonl", 364 * day, ""},
		}, nil, true, policy, []string{ws + "audit/a.jsonl", ws + "sessions/a.jsonl"}},
		{"an open job keeps everything whatever its age", []file{
			{ws + "sessions/job_1.jsonl", 500 * day, marker(1)}, {ws + "audit/job_1.jsonl", 500 * day, ""},
			{ws + "sessions/blobs/" + blobName(1), 500 * day, ""},
		}, []string{"job/1"}, true, policy, nil},
		{"open jobs unknown: no job file goes (fail closed)", []file{
			{ws + "sessions/old.jsonl", 500 * day, ""}, {ws + "audit/old.jsonl", 500 * day, ""},
			{ws + "sessions/blobs/" + blobName(2), 500 * day, ""},
			{"quarantine/20250101T000000Z-app-abc/hook", 40 * day, ""},
		}, nil, false, policy, []string{"quarantine/20250101T000000Z-app-abc"}},
		{"a blob a kept transcript names stays", []file{
			{ws + "sessions/young.jsonl", day, marker(1)},
			{ws + "sessions/blobs/" + blobName(1), 100 * day, ""},
			{ws + "sessions/blobs/" + blobName(2), 100 * day, ""},
			{ws + "sessions/blobs/" + blobName(3), day, ""},
		}, nil, true, policy, []string{ws + "sessions/blobs/" + blobName(2)}},
		{"a blob only a removed transcript names goes with it", []file{
			{ws + "sessions/old.jsonl", 40 * day, marker(4)},
			{ws + "sessions/blobs/" + blobName(4), 40 * day, ""},
		}, nil, true, policy, []string{ws + "sessions/blobs/" + blobName(4), ws + "sessions/old.jsonl"}},
		{"caches unused past retention, quarantine past retention", []file{
			{"sandbox-cache/aaaa/used", 15 * day, ""}, {"sandbox-cache/aaaa/size", 15 * day, "1234"},
			{"sandbox-cache/bbbb/used", 13 * day, ""},
			{"quarantine/old/x", 31 * day, ""}, {"quarantine/new/x", 29 * day, ""},
		}, nil, true, policy, []string{"quarantine/old", "sandbox-cache/aaaa"}},
		{"overlays and snapshots are never removed", []file{
			{"overlay/k-1-2-x/upper/f", 900 * day, ""}, {"host-guard/k-1-2.json", 900 * day, ""},
		}, nil, true, policy, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			for _, f := range tc.files {
				put(t, state, f.rel, 10, f.ago, f.content)
			}
			// Directories' own times: those the test set aside are as old as their file.
			for _, f := range tc.files {
				if strings.HasPrefix(f.rel, "quarantine/") || strings.HasPrefix(f.rel, "sandbox-cache/") {
					touch(t, filepath.Join(state, strings.Join(strings.SplitN(f.rel, "/", 3)[:2], "/")), f.ago)
				}
			}
			open := map[string]bool{}
			for _, id := range tc.open {
				open[id] = true
			}
			p, err := PlanPass(Input{State: state, Now: now, Policy: tc.policy, Open: open, OpenKnown: tc.openKnown})
			if err != nil {
				t.Fatal(err)
			}
			if got := removed(state, p); !slices.Equal(got, tc.want) {
				t.Errorf("plan removes %q; want %q", got, tc.want)
			}
			if !p.Done {
				t.Errorf("a small state should be done in one pass")
			}
			if tc.openKnown == (p.JobFilesKept != "") {
				t.Errorf("JobFilesKept = %q with openKnown %v", p.JobFilesKept, tc.openKnown)
			}
		})
	}
}

func TestApplyRemovesAndSkipsWhatChanged(t *testing.T) {
	state := t.TempDir()
	const ws = "workspaces/app-0123456789ab/"
	a := put(t, state, ws+"sessions/a.jsonl", 100, 40*day)
	b := put(t, state, ws+"sessions/b.jsonl", 200, 40*day)
	put(t, state, "sandbox-cache/cc/used", 0, 20*day)
	p, err := PlanPass(Input{State: state, Now: now, Policy: policy, OpenKnown: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Bytes() != 300 || len(p.Remove) != 3 {
		t.Fatalf("plan = %+v; want both transcripts (300 bytes) and the cache", p)
	}
	// b is taken up again between the plan and its removal.
	touch(t, b, 0)
	var asked []string
	r := Apply(p, func(dir string) (bool, error) { asked = append(asked, dir); return false, nil })
	if r.Removed[Transcripts] != 1 || r.Freed[Transcripts] != 100 || len(r.Skipped) != 2 || len(asked) != 1 {
		t.Errorf("Apply = %+v (cache asked %q); want a removed, b and the held cache skipped", r, asked)
	}
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Errorf("a still there: %v", err)
	}
	if _, err := os.Stat(b); err != nil {
		t.Errorf("b removed: %v", err)
	}
}

func TestCapOldestFirst(t *testing.T) {
	state := t.TempDir()
	const ws = "workspaces/app-0123456789ab/"
	put(t, state, ws+"sessions/j1.jsonl", 1000, 5*day)
	put(t, state, ws+"sessions/j2.jsonl", 1000, 4*day)
	put(t, state, ws+"sessions/j3.jsonl", 1000, 3*day)
	put(t, state, ws+"sessions/live.jsonl", 1000, 9*day)
	put(t, state, ws+"audit/j0.jsonl", 1000, 10*day) // an audit younger than its retention
	put(t, state, "quarantine/q/x", 1000, 6*day)
	touch(t, filepath.Join(state, "quarantine/q"), 6*day)
	pol := policy
	pol.MaxBytes = 3500
	p, err := PlanPass(Input{State: state, Now: now, Policy: pol, Open: map[string]bool{"live": true}, OpenKnown: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"quarantine/q", ws + "sessions/j1.jsonl", ws + "sessions/j2.jsonl"}
	if got := removed(state, p); !slices.Equal(got, want) {
		t.Errorf("over the cap, plan removes %q; want %q (oldest first, never the live job's, never a young audit)", got, want)
	}
}

func TestBoundedPassesResume(t *testing.T) {
	state := t.TempDir()
	const ws = "workspaces/app-0123456789ab/"
	for i := range 25 {
		put(t, state, fmt.Sprintf("%ssessions/j%02d.jsonl", ws, i), 10, 40*day)
	}
	put(t, state, ws+"sessions/keep.jsonl", 10, day)
	var cur Cursor
	all := map[string]bool{}
	passes := 0
	for {
		passes++
		p, err := PlanPass(Input{State: state, Now: now, Policy: policy, OpenKnown: true, Cursor: cur, Limits: Limits{MaxExamined: 100, MaxRemoved: 10}})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Remove) > 10 {
			t.Fatalf("pass %d plans %d removals; the bound is 10", passes, len(p.Remove))
		}
		for _, e := range p.Remove {
			if all[e.Path] {
				t.Fatalf("%s planned twice", e.Path)
			}
			all[e.Path] = true
		}
		Apply(p, nil)
		if p.Done {
			break
		}
		if passes > 10 {
			t.Fatal("passes do not end")
		}
		cur = p.Next
	}
	if len(all) != 25 || passes != 3 {
		t.Errorf("%d files removed in %d passes; want 25 in 3", len(all), passes)
	}
}

func TestMeasure(t *testing.T) {
	state := t.TempDir()
	const ws = "workspaces/app-0123456789ab/"
	put(t, state, ws+"workspace", 0, 0, "/home/u/app")
	put(t, state, ws+"sessions/a.jsonl", 100, 0)
	put(t, state, ws+"sessions/blobs/"+blobName(1), 50, 0)
	put(t, state, ws+"audit/a.jsonl", 10, 0)
	put(t, state, "sandbox-cache/cc/workspace", 0, 0, "/home/u/app")
	put(t, state, "sandbox-cache/cc/cache/go-build/x", 1000, 0)
	put(t, state, "quarantine/q/x", 7, 0)
	put(t, state, "tls/ca.pem", 3, 0)
	u, err := Measure(state, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Workspaces) != 1 || u.Workspaces[0].Workspace != "/home/u/app" {
		t.Fatalf("workspaces = %+v", u.Workspaces)
	}
	w := u.Workspaces[0].Bytes
	if w[Transcripts] != 100 || w[Blobs] != 50 || w[Audits] != 10 || w[Caches] != 1000 || u.Kinds[Quarantine] != 7 || u.Other != 3 || u.Total != 1170 {
		t.Errorf("usage = %+v, %+v", u, w)
	}
}
