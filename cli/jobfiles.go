package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.temporal.io/api/serviceerror"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/internal/statedir"
)

// A job the server no longer has (past its retention) still has its files
// on its host: its transcript and its audit, under custos' state
// directory. status and audit read them there.

// forgotten says whether err is the server not knowing the job.
func forgotten(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// findJobFiles looks for job id's files in this host's state directory.
func findJobFiles(id string) (api.JobFiles, bool) {
	dir, err := statedir.Dir()
	if err != nil {
		return api.JobFiles{}, false
	}
	wss, _ := filepath.Glob(filepath.Join(dir, "workspaces", "*"))
	for _, ws := range wss {
		f := api.JobFilesIn(ws, id)
		if _, err := os.Stat(f.Audit); err == nil {
			return f, true
		}
		if _, err := os.Stat(f.Transcript); err == nil {
			return f, true
		}
	}
	return api.JobFiles{}, false
}

// statusFromFiles prints what a forgotten job's files say.
func (a *App) statusFromFiles(id string, queryErr error) error {
	files, ok := findJobFiles(id)
	if !ok {
		return fmt.Errorf("status of %s: %w (and no files of it on this host)", id, queryErr)
	}
	fmt.Fprintf(a.Stdout, "job:       %s\nstate:     ended; the server no longer has it (past its retention): from its files on this host\n", display.Line(id, maxID))
	recs, err := activities.ReadAudit(files.Audit)
	if err == nil {
		for _, r := range recs {
			if r.Env != nil && r.Env.Workspace != "" {
				fmt.Fprintf(a.Stdout, "workspace: %s\n", display.Line(r.Env.Workspace, 0))
				break
			}
		}
		if n := len(recs); n > 0 {
			fmt.Fprintf(a.Stdout, "audit:     %d records, the last at %s\n", n, recs[n-1].Time.Local().Format("2006-01-02 15:04"))
		}
	}
	fmt.Fprintf(a.Stdout, "files:     %s\n           %s\n", display.Line(files.Transcript, 0), display.Line(files.Audit, 0))
	if facts, err := activities.JobFacts(files); err == nil && facts != nil {
		fmt.Fprintf(a.Stdout, "messages:  %d in the transcript\n", facts.Messages)
		if facts.LastAnswer != "" {
			fmt.Fprintf(a.Stdout, "answer:    %s\n", display.Safe(facts.LastAnswer))
		}
	}
	fmt.Fprintf(a.Stdout, "continue it with: starter say --workspace DIR %s \"…\"\n", id)
	return nil
}
