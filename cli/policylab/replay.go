package policylab

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/cli/cmdline"
	"github.com/custos-dev/custos/policyreplay"
	"github.com/custos-dev/custos/sandbox/pathguard"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// errDenialsAllowed makes `policy replay` exit 1 when the proposal would
// allow a call that was denied, so a team can gate a settings change in CI.
var errDenialsAllowed = errors.New("the proposed settings allow calls that were denied")

// recordFlags are the flags every command over the recorded calls takes.
type recordFlags struct {
	since, workspace, job, from, stateDir, configDir string
	asJSON                                           bool
}

func (r *recordFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.since, "since", "", "only calls recorded since: a duration back from now (7d, 36h) or a date (2026-11-30, RFC 3339)")
	fs.StringVar(&r.workspace, "workspace", "", "only the jobs of this workspace")
	fs.StringVar(&r.job, "job", "", "only this job")
	fs.StringVar(&r.from, "from", "files", "where the audits are read: files (custos' state directory) or temporal (every job on the namespace, by visibility and the audit query)")
	fs.StringVar(&r.stateDir, "state-dir", "", "custos' state directory (default: $XDG_STATE_HOME/custos)")
	fs.StringVar(&r.configDir, "config-dir", "", "user config dir (default: the OS user config dir)")
	fs.BoolVar(&r.asJSON, "json", false, "print JSON")
}

// filter turns the flags into a policyreplay.Filter.
func (r *recordFlags) filter(now time.Time) (policyreplay.Filter, error) {
	f := policyreplay.Filter{JobID: r.job}
	if r.workspace != "" {
		// A workspace that is gone still has its record: its path as given.
		ws, err := pathguard.CanonicalWorkspace(r.workspace)
		if err != nil {
			if ws, err = filepath.Abs(r.workspace); err != nil {
				return f, cmdline.Usagef("--workspace: %v", err)
			}
		}
		f.Workspace = ws
	}
	since, err := parseSince(r.since, now)
	if err != nil {
		return f, cmdline.Usagef("--since: %v", err)
	}
	f.Since = since
	return f, nil
}

// parseSince reads "7d", "36h", "90m" (back from now) or a date.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return time.Time{}, fmt.Errorf("%q is not a number of days", s)
		}
		return now.AddDate(0, 0, -n), nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (7d, 36h) nor a date (2026-11-30)", s)
}

func (r *recordFlags) config() string {
	if r.configDir != "" {
		return r.configDir
	}
	d, _ := os.UserConfigDir()
	return d
}

// jobs reads the recorded jobs the flags select.
func (a *Env) recordedJobs(ctx context.Context, r *recordFlags) ([]policyreplay.Job, error) {
	f, err := r.filter(time.Now())
	if err != nil {
		return nil, err
	}
	state := r.stateDir
	if state == "" {
		if state, err = policyreplay.StateDir(); err != nil {
			return nil, err
		}
	}
	files, err := policyreplay.FromStateDir(state, f)
	if err != nil {
		return nil, err
	}
	switch r.from {
	case "files":
		if len(files) == 0 {
			fmt.Fprintf(a.Stderr, "custos: no recorded job matches in %s\n", state)
		}
		return files, nil
	case "temporal":
		return a.jobsFromTemporal(ctx, f, files)
	}
	return nil, cmdline.Usagef("--from %q: want files or temporal", r.from)
}

// jobsFromTemporal lists every job of the namespace (visibility) and takes
// each one's audit from its file (named by its status) joined with the
// audit query; a job the server cannot query (no worker to replay it) is
// taken from its file in the state directory, when there is one.
func (a *Env) jobsFromTemporal(ctx context.Context, f policyreplay.Filter, files []policyreplay.Job) ([]policyreplay.Job, error) {
	c, err := a.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ids, err := listJobs(ctx, c, f.JobID)
	if err != nil {
		return nil, fmt.Errorf("listing jobs (visibility): %w", err)
	}
	byID := map[string]policyreplay.Job{}
	for _, j := range files {
		byID[j.ID] = j
	}
	var jobs []policyreplay.Job
	for _, id := range ids {
		j, err := a.queriedJob(ctx, c, id, byID[id])
		if err != nil {
			fmt.Fprintf(a.Stderr, "custos: job %s left out: %v\n", id, err)
			continue
		}
		if f.Keep(j.Workspace, j.ID) {
			j.Records = f.Trim(j.Records)
			jobs = append(jobs, j)
		}
	}
	policyreplay.SortJobs(jobs)
	return jobs, nil
}

func listJobs(ctx context.Context, c client.Client, only string) ([]string, error) {
	q := fmt.Sprintf("WorkflowType = '%s'", jobapi.WorkflowName)
	if only != "" {
		q += fmt.Sprintf(" AND WorkflowId = '%s'", strings.ReplaceAll(only, "'", ""))
	}
	var ids []string
	seen := map[string]bool{}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token})
		if err != nil {
			return nil, err
		}
		for _, e := range resp.GetExecutions() {
			// A job that continued as new is listed once per run.
			if id := e.GetExecution().GetWorkflowId(); !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return ids, nil
		}
	}
}

// queriedJob is one job's audit by its status and the audit query.
func (a *Env) queriedJob(ctx context.Context, c client.Client, id string, file policyreplay.Job) (policyreplay.Job, error) {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := a.Status(qctx, c, id)
	if err != nil {
		if file.ID != "" {
			return file, nil
		}
		return file, fmt.Errorf("no status (%w) and no audit file in the state directory", err)
	}
	j := policyreplay.Job{ID: id, Workspace: st.Workspace, Source: "temporal"}
	if recs, err := policyreplay.ReadAuditFile(st.Files.Or(st.Workspace, id).Audit); err == nil {
		j.Records, j.Source = recs, st.Files.Or(st.Workspace, id).Audit+" + temporal"
	} else if file.ID != "" {
		j.Records = file.Records
	}
	v, err := c.QueryWorkflow(qctx, id, "", jobapi.AuditQuery)
	if err == nil {
		var q []approval.AuditRecord
		if err := v.Get(&q); err != nil {
			return j, fmt.Errorf("audit query: %w", err)
		}
		j.Records = policyreplay.MergeRecords(j.Records, q)
	} else if j.Records == nil {
		return j, fmt.Errorf("audit query: %w", err)
	}
	return j, nil
}

// policyReplay is `starter policy replay`.
func (a *Env) policyReplay(ctx context.Context, args []string) error {
	fs := cmdline.NewFlagSet("policy replay", a.Stderr)
	var r recordFlags
	r.register(fs)
	settings := fs.String("settings", "", "the proposed settings file (required)")
	as := fs.String("as", "project", "which settings file it stands for: project (the workspace's .custos/settings.json), local, user, or alone")
	if _, err := cmdline.ParseInterleaved(fs, args); err != nil {
		return err
	}
	if *settings == "" {
		return cmdline.Usagef("policy replay: --settings NEW.json is required")
	}
	stand, err := policyreplay.ParseStand(*as)
	if err != nil {
		return cmdline.Usagef("policy replay: %v", err)
	}
	rep, err := a.replay(ctx, &r, *settings, stand)
	if err != nil {
		// Exit 2, not 1: a CI gate must tell "the replay could not run"
		// from "the proposal allows a past denial".
		return cannotRun(err)
	}
	if r.asJSON {
		enc := json.NewEncoder(a.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = policyreplay.WriteText(a.Stdout, rep)
	}
	if err != nil {
		return err
	}
	if n := rep.DeniedNowAllowed(); n > 0 {
		return fmt.Errorf("%w: %d (listed first)", errDenialsAllowed, n)
	}
	return nil
}

// replay reads the proposal and the record and replays.
func (a *Env) replay(ctx context.Context, r *recordFlags, settings string, stand policyreplay.Stand) (*policyreplay.Report, error) {
	data, err := os.ReadFile(settings)
	if err != nil {
		return nil, fmt.Errorf("proposed settings: %w", err)
	}
	prop := policyreplay.Proposal{Name: settings, Data: data, As: stand, UserConfigDir: r.config(),
		Ignored: func(ws string, what []string) { WarnIgnored(a.Stderr, ws, what) }}
	if err := prop.Check(); err != nil {
		return nil, err
	}
	jobs, err := a.recordedJobs(ctx, r)
	if err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	return policyreplay.Replay(jobs, prop, policyreplay.Options{Home: home})
}

// cannotRun makes an error exit with status 2.
func cannotRun(err error) error {
	var ue cmdline.UsageError
	if errors.As(err, &ue) {
		return err
	}
	return cmdline.UsageError{Msg: err.Error()}
}
