package policyreplay

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/custos-dev/custos/approval"
)

// bench1000Rules is 1,000 user rules of mixed kinds, like approval's
// benchmark of the same name: prefix, glob, deny, ask-regexp and path rules.
func bench1000Rules() approval.Settings {
	var s approval.Settings
	for i := range 1000 {
		switch i % 5 {
		case 0:
			s.Permissions.Allow = append(s.Permissions.Allow, fmt.Sprintf("Bash(tool%d run:*)", i))
		case 1:
			s.Permissions.Allow = append(s.Permissions.Allow, fmt.Sprintf("Bash(cmd%d --flag *)", i))
		case 2:
			s.Permissions.Deny = append(s.Permissions.Deny, fmt.Sprintf("Bash(danger%d *)", i))
		case 3:
			s.Permissions.Ask = append(s.Permissions.Ask, fmt.Sprintf("Bash(re:^net%d\\b)", i))
		case 4:
			s.Permissions.Allow = append(s.Permissions.Allow, fmt.Sprintf("Edit(src/pkg%d/**)", i))
		}
	}
	s.Permissions.Allow = append(s.Permissions.Allow, "Bash(npm test:*)", "Bash(go test *)", "Bash(ls *)")
	return s
}

// benchJobs is n recorded calls in 100 jobs of one workspace: simple and
// compound commands, edits and reads, answered by people, rules and timers.
func benchJobs(n int) []Job {
	env := &approval.Env{Workspace: "/srv/app", Home: "/home/dev", Sandbox: approval.SandboxStatus{Backend: "bwrap"}}
	commands := []string{"npm test", "tool%d run --fast", "cmd%d --flag x", "danger%d now", "net%d probe",
		"go test ./pkg%d/...", "cd svc && make build-%d 2>&1 | tail -n 20", "ls -la src/pkg%d"}
	jobs := make([]Job, 100)
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for j := range jobs {
		jobs[j] = Job{ID: fmt.Sprintf("job-%03d", j), Workspace: "/srv/app",
			Records: []approval.AuditRecord{{Seq: 1, Time: t0, JobID: fmt.Sprintf("job-%03d", j), Event: "sandbox", Env: env}}}
	}
	for i := range n {
		j := &jobs[i%100]
		rec := approval.AuditRecord{Seq: len(j.Records) + 1, Time: t0.Add(time.Duration(i) * time.Second), JobID: j.ID,
			CallID: fmt.Sprintf("call_%d", i), Mode: approval.ModeDefault}
		switch i % 10 {
		case 0, 1, 2:
			rec.Tool, rec.Input = "Edit", mustJSON(map[string]string{"file_path": fmt.Sprintf("src/pkg%d/f.go", i%1000), "old_string": "a", "new_string": "b"})
		case 3, 4:
			rec.Tool, rec.Input = "Read", mustJSON(map[string]string{"file_path": fmt.Sprintf("src/pkg%d/f.go", i%1000)})
		default:
			cmd := commands[i%len(commands)]
			rec.Tool, rec.Input = "Bash", mustJSON(map[string]string{"command": fmt.Sprintf(cmd, i%1000)})
		}
		switch i % 3 {
		case 0:
			rec.Decision, rec.Layer, rec.Approver, rec.Channel, rec.WaitMillis = approval.Allow, approval.LayerHuman, "alice", "slack", int64(i%90000)
		case 1:
			rec.Decision, rec.Layer, rec.Approver, rec.WaitMillis = approval.Deny, approval.LayerHuman, "bob", int64(i%60000)
		default:
			rec.Decision, rec.Layer, rec.Rule = approval.Allow, approval.LayerRules, "Bash(npm test:*)"
		}
		j.Records = append(j.Records, rec)
	}
	return jobs
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkReplay100kCalls1000Rules: one replay of 100,000 recorded calls
// against 1,000 rules (the figure README gives); one op is the whole replay.
func BenchmarkReplay100kCalls1000Rules(b *testing.B) {
	jobs := benchJobs(100_000)
	pols := Fixed{New: bench1000Rules()}
	b.ReportAllocs()
	for b.Loop() {
		rep, err := Replay(jobs, pols, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Calls != 100_000 || len(rep.Changes) == 0 {
			b.Fatalf("replayed %d calls, %d changes", rep.Calls, len(rep.Changes))
		}
	}
}

// BenchmarkReplay100kCallsFromFiles is the same replay with the audit read
// from 100 job files in a state directory, as `policy replay` reads it.
func BenchmarkReplay100kCallsFromFiles(b *testing.B) {
	state := b.TempDir()
	dir := filepath.Join(state, "workspaces", "app-000000000000")
	if err := os.MkdirAll(filepath.Join(dir, "audit"), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "workspace"), []byte("/srv/app\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, j := range benchJobs(100_000) {
		var buf []byte
		for _, r := range j.Records {
			buf = append(append(buf, mustJSON(r)...), '\n')
		}
		if err := os.WriteFile(filepath.Join(dir, "audit", j.ID+".jsonl"), buf, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	pols := Fixed{New: bench1000Rules()}
	b.ReportAllocs()
	for b.Loop() {
		jobs, err := FromStateDir(state, Filter{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Replay(jobs, pols, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSuggest10kCalls: suggestions from 10,000 recorded calls (3,333
// answered by people, over a thousand files and commands).
func BenchmarkSuggest10kCalls(b *testing.B) {
	jobs := benchJobs(10_000)
	pols := Fixed{Now: bench1000Rules()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Suggest(jobs, pols, 3); err != nil {
			b.Fatal(err)
		}
	}
}
