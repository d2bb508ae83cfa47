package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	schedulepb "go.temporal.io/api/schedule/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/service/worker/scheduler"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/jobstart"
	"github.com/custos-dev/custos/sandbox/pathguard"
	"github.com/custos-dev/custos/settingsfile"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// scheduleName is what a schedule may be called: its ID on the server and
// the head of its jobs' workflow IDs, safe in a shell, a URL and a file name.
var scheduleName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._-]{0,62}$`)

// overlapPolicies are --overlap's values and Temporal's policies.
var overlapPolicies = map[string]enumspb.ScheduleOverlapPolicy{
	"skip":            enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
	"buffer_one":      enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE,
	"buffer_all":      enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ALL,
	"cancel_other":    enumspb.SCHEDULE_OVERLAP_POLICY_CANCEL_OTHER,
	"terminate_other": enumspb.SCHEDULE_OVERLAP_POLICY_TERMINATE_OTHER,
	"allow_all":       enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL,
}

const overlapNames = "skip, buffer_one, buffer_all, cancel_other, terminate_other, allow_all"

// schedule is `starter schedule VERB ...`: custos jobs on Temporal
// Schedules. Each run is an ordinary job (the input `starter run --once`
// gives it), judged and asked like any other.
func (a *App) schedule(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usagef("schedule: create, list, describe, trigger, pause, unpause or delete")
	}
	verb, rest := args[0], args[1:]
	if verb == "create" {
		return a.createSchedule(ctx, rest)
	}
	if verb == "list" {
		return a.listSchedules(ctx, rest)
	}
	fs := newFlagSet("schedule "+verb, a.Stderr)
	note := fs.String("note", "", "why (pause, unpause: shown by describe and the Web UI)")
	pos, err := parseInterleaved(fs, rest)
	if err != nil {
		return err
	}
	switch verb {
	case "describe", "trigger", "pause", "unpause", "delete":
	default:
		return usagef("schedule: unknown %q (create, list, describe, trigger, pause, unpause, delete)", verb)
	}
	if len(pos) != 1 || !scheduleName.MatchString(pos[0]) {
		return usagef("schedule %s NAME: name one schedule (see: starter schedule list)", verb)
	}
	c, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return a.scheduleVerb(ctx, c.ScheduleClient().GetHandle(ctx, pos[0]), verb, *note)
}

// scheduleVerb acts on one schedule.
func (a *App) scheduleVerb(ctx context.Context, h client.ScheduleHandle, verb, note string) error {
	var err error
	switch verb {
	case "describe":
		return a.describeSchedule(ctx, h)
	case "trigger":
		// The schedule's overlap policy applies to a triggered run too.
		err = h.Trigger(ctx, client.ScheduleTriggerOptions{})
	case "pause":
		err = h.Pause(ctx, client.SchedulePauseOptions{Note: cmp.Or(note, "paused by "+app.OSUser()+" with starter schedule pause")})
	case "unpause":
		err = h.Unpause(ctx, client.ScheduleUnpauseOptions{Note: cmp.Or(note, "unpaused by "+app.OSUser()+" with starter schedule unpause")})
	case "delete":
		err = h.Delete(ctx)
	}
	if err != nil {
		return fmt.Errorf("schedule %s %s: %w", verb, h.GetID(), err)
	}
	past := map[string]string{"trigger": "triggered", "pause": "paused", "unpause": "unpaused", "delete": "deleted"}[verb]
	fmt.Fprintf(a.Stdout, "schedule %s %s\n", h.GetID(), past)
	return nil
}

// scheduleSpec is what create was told about when to run.
type scheduleSpec struct {
	cron  string
	every time.Duration
}

// compile checks the spec as the server will (the server's own parser) and
// returns it with the next time it fires; a spec that never fires is
// refused.
func (s scheduleSpec) compile(now time.Time) (client.ScheduleSpec, time.Time, error) {
	var spec client.ScheduleSpec
	pb := &schedulepb.ScheduleSpec{}
	switch {
	case (s.cron == "") == (s.every == 0):
		return spec, time.Time{}, usagef("schedule create: give exactly one of --cron EXPR and --every DUR")
	case s.every < 0 || (s.every > 0 && s.every < time.Second):
		return spec, time.Time{}, usagef("schedule create: --every %s: at least 1s", s.every)
	case s.every > 0:
		spec.Intervals = []client.ScheduleIntervalSpec{{Every: s.every}}
		pb.Interval = []*schedulepb.IntervalSpec{{Interval: durationpb.New(s.every)}}
	default:
		spec.CronExpressions = []string{s.cron}
		pb.CronString = []string{s.cron}
	}
	b := scheduler.NewSpecBuilder(dynamicconfig.GetIntPropertyFn(1000), dynamicconfig.GetIntPropertyFn(100000))
	cs, err := b.NewCompiledSpec(pb)
	if err != nil {
		return spec, time.Time{}, usagef("schedule create: --cron %q: %v", s.cron, err)
	}
	next, err := cs.GetNextTime("", now)
	if err != nil || next.Next.IsZero() {
		return spec, time.Time{}, usagef("schedule create: --cron %q never fires", s.cron)
	}
	return spec, next.Next, nil
}

// createSchedule is `starter schedule create`: checked in full (name,
// spec, mode, workspace and its settings) before anything is created.
func (a *App) createSchedule(ctx context.Context, args []string) error {
	fs := newFlagSet("schedule create", a.Stderr)
	var sp scheduleSpec
	fs.StringVar(&sp.cron, "cron", "", `when to run, a cron expression as Temporal reads it ("0 3 * * *", "@daily", "CRON_TZ=Europe/Paris 0 3 * * MON-FRI")`)
	fs.DurationVar(&sp.every, "every", 0, "run every DUR (1h, 30m)")
	workspace := fs.String("workspace", ".", "the jobs' workspace")
	mode := fs.String("mode", "", "permission mode: default, acceptEdits, dontAsk, plan, bypass (default: settings)")
	maxTokens := fs.Int("max-tokens", 0, "token budget of each run (0: the settings' conversation.budget)")
	maxTurns := fs.Int("max-turns", jobapi.DefaultMaxTurns, "turn limit of each run")
	timeout := fs.Duration("approval-timeout", jobapi.DefaultApprovalTimeout, "how long a call waits for a person before it is denied")
	overlap := fs.String("overlap", "skip", "a run due while the last one works or waits: "+overlapNames)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef(`schedule create NAME (--cron EXPR | --every DUR) "task"`)
	}
	name, task := pos[0], strings.TrimSpace(strings.Join(pos[1:], " "))
	if !scheduleName.MatchString(name) {
		return usagef("schedule create: name %q: a letter, then up to 62 letters, digits, '.', '_' or '-'", name)
	}
	spec, next, err := sp.compile(time.Now())
	if err != nil {
		return err
	}
	policy, ok := overlapPolicies[*overlap]
	if !ok {
		return usagef("schedule create: --overlap %q: want one of %s", *overlap, overlapNames)
	}
	if *maxTokens < 0 || *maxTurns <= 0 || *timeout <= 0 {
		return usagef("schedule create: --max-tokens must not be negative, --max-turns and --approval-timeout must be positive")
	}
	in, err := scheduledInput(task, *workspace, *mode)
	if err != nil {
		return err
	}
	in.MaxTokens, in.MaxTurns, in.ApprovalTimeout = *maxTokens, *maxTurns, *timeout
	c, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if in.Host, err = app.RouteJob(ctx, c, in.Workspace); err != nil {
		return err
	}
	_, err = c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID: name, Spec: spec, Overlap: policy,
		Action: &client.ScheduleWorkflowAction{ID: name, Workflow: jobapi.WorkflowName, Args: []any{in},
			TaskQueue: api.TaskQueue, StaticSummary: jobstart.FirstLine("schedule "+name+": "+task, 200)},
		Memo: map[string]any{"custosSchedule": "created by " + app.OSUser()},
	})
	if err != nil {
		return fmt.Errorf("schedule create %s: %w", name, err)
	}
	fmt.Fprintf(a.Stdout, "schedule %s created: next run %s, on %s (its jobs: %s-<time>)\n",
		name, next.Local().Format("2006-01-02 15:04:05 MST"), in.Workspace, name)
	return nil
}

// scheduledInput is a scheduled job's input: what `starter run --once`
// gives a job (jobstart.Input), on the canonical workspace, the mode
// checked, the workspace's settings loaded (a broken file refuses now,
// not at 3 am), the creator's identities as the owner.
func scheduledInput(task, workspace, mode string) (jobapi.JobInput, error) {
	if task == "" {
		return jobapi.JobInput{}, usagef(`schedule create: say what to do, e.g. "update the dependencies"`)
	}
	m, err := approval.ParseMode(cmp.Or(mode, string(approval.ModeDefault)))
	if err != nil {
		return jobapi.JobInput{}, usagef("schedule create: %v", err)
	}
	ws, err := pathguard.CanonicalWorkspace(workspace)
	if err != nil {
		return jobapi.JobInput{}, err
	}
	if cfg, err := os.UserConfigDir(); err == nil {
		if _, err := settingsfile.Load(cfg, ws); err != nil {
			return jobapi.JobInput{}, fmt.Errorf("schedule create: the workspace's settings: %w", err)
		}
		if err := bypassAllowed("schedule create", ws, approval.Mode(mode)); err != nil {
			return jobapi.JobInput{}, err
		}
	}
	in := jobstart.Input(task, ws)
	if mode != "" {
		in.Mode = m
	}
	in.Once, in.Owner = true, identities(os.Getenv(EnvIdentity))
	return in, nil
}

// ScheduleRow is one schedule of `starter schedule list --json`, a
// documented shape (docs/automation.md#schedules).
type ScheduleRow struct {
	Name      string      `json:"name"`
	Spec      string      `json:"spec"`
	Paused    bool        `json:"paused"`
	Note      string      `json:"note,omitempty"`
	NextRuns  []time.Time `json:"nextRuns"`
	RecentJob []string    `json:"recentJobs"`
}

// listSchedules lists the schedules that start custos jobs.
func (a *App) listSchedules(ctx context.Context, args []string) error {
	fs := newFlagSet("schedule list", a.Stderr)
	asJSON := fs.Bool("json", false, `as JSON: {"schedules": [...]}`)
	if pos, err := parseInterleaved(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("schedule list: unexpected %q", pos[0])
	}
	c, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	it, err := c.ScheduleClient().List(ctx, client.ScheduleListOptions{PageSize: 1000})
	if err != nil {
		return fmt.Errorf("schedule list: %w", err)
	}
	rows := []ScheduleRow{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return fmt.Errorf("schedule list: %w", err)
		}
		if e.WorkflowType.Name != jobapi.WorkflowName {
			continue // not custos'
		}
		r := ScheduleRow{Name: e.ID, Spec: specText(e.Spec), Paused: e.Paused, Note: e.Note, NextRuns: e.NextActionTimes, RecentJob: []string{}}
		for _, ra := range e.RecentActions {
			if ra.StartWorkflowResult != nil {
				r.RecentJob = append(r.RecentJob, ra.StartWorkflowResult.WorkflowID)
			}
		}
		rows = append(rows, r)
	}
	if *asJSON {
		return writeJSON(a, struct {
			Schedules []ScheduleRow `json:"schedules"`
		}{rows})
	}
	a.writeSchedules(rows)
	return nil
}

func (a *App) writeSchedules(rows []ScheduleRow) {
	if len(rows) == 0 {
		fmt.Fprintln(a.Stdout, "no schedules")
		return
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSPEC\tSTATE\tNEXT RUN\tLAST JOB")
	for _, r := range rows {
		state, next, last := "active", "-", "-"
		if r.Paused {
			state = "paused"
		}
		if len(r.NextRuns) > 0 && !r.Paused {
			next = r.NextRuns[0].Local().Format("2006-01-02 15:04:05")
		}
		if n := len(r.RecentJob); n > 0 {
			last = r.RecentJob[n-1]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", display.Line(r.Name, maxID), display.Line(r.Spec, 60), state, next, display.Line(last, maxID))
	}
	_ = tw.Flush()
}

// specText is a schedule's spec in a line: its cron expressions as the
// server keeps them (calendars) or its intervals.
func specText(s *client.ScheduleSpec) string {
	if s == nil {
		return ""
	}
	var parts []string
	for _, iv := range s.Intervals {
		parts = append(parts, "every "+iv.Every.String())
	}
	for _, c := range s.Calendars {
		parts = append(parts, calendarText(c))
	}
	parts = append(parts, s.CronExpressions...)
	return strings.Join(parts, "; ")
}

// calendarText is a calendar spec as cron fields (second minute hour
// day-of-month month day-of-week).
func calendarText(c client.ScheduleCalendarSpec) string {
	field := func(rs []client.ScheduleRange) string {
		var out []string
		for _, r := range rs {
			s := fmt.Sprint(r.Start)
			if r.End > r.Start {
				s += fmt.Sprintf("-%d", r.End)
			}
			if r.Step > 1 {
				s += fmt.Sprintf("/%d", r.Step)
			}
			out = append(out, s)
		}
		return cmp.Or(strings.Join(out, ","), "*")
	}
	return strings.Join([]string{field(c.Second), field(c.Minute), field(c.Hour), field(c.DayOfMonth), field(c.Month), field(c.DayOfWeek)}, " ")
}

// describeSchedule prints a schedule: when it runs, its state, the job
// each run starts, the runs taken, skipped and running.
func (a *App) describeSchedule(ctx context.Context, h client.ScheduleHandle) error {
	d, err := h.Describe(ctx)
	if err != nil {
		return fmt.Errorf("schedule describe %s: %w", h.GetID(), err)
	}
	in, err := scheduledJob(d.Schedule.Action)
	if err != nil {
		return fmt.Errorf("schedule describe %s: %w", h.GetID(), err)
	}
	state := "active"
	if st := d.Schedule.State; st != nil && st.Paused {
		state = "paused"
	}
	w := a.Stdout
	fmt.Fprintf(w, "schedule:  %s\nspec:      %s\nstate:     %s\n", h.GetID(), display.Line(specText(d.Schedule.Spec), 0), state)
	if st := d.Schedule.State; st != nil && st.Note != "" {
		fmt.Fprintf(w, "note:      %s\n", display.Line(st.Note, maxReason))
	}
	if p := d.Schedule.Policy; p != nil {
		fmt.Fprintf(w, "overlap:   %s\n", overlapName(p.Overlap))
	}
	fmt.Fprintf(w, "task:      %s\nworkspace: %s\nmode:      %s\n", taskLine(in.Task, 100), display.Line(in.Workspace, 0), cmp.Or(string(in.Mode), "(settings)"))
	if in.MaxTokens > 0 {
		fmt.Fprintf(w, "budget:    %d tokens per run\n", in.MaxTokens)
	}
	if len(d.Info.NextActionTimes) > 0 && state == "active" {
		fmt.Fprintf(w, "next run:  %s\n", d.Info.NextActionTimes[0].Local().Format("2006-01-02 15:04:05 MST"))
	}
	fmt.Fprintf(w, "runs:      %d started, %d skipped (the last one still worked or waited), %d missed\n",
		d.Info.NumActions, d.Info.NumActionsSkippedOverlap, d.Info.NumActionsMissedCatchupWindow)
	for _, r := range d.Info.RunningWorkflows {
		fmt.Fprintf(w, "running:   %s (starter status %s)\n", display.Line(r.WorkflowID, maxID), display.Line(r.WorkflowID, maxID))
	}
	for _, r := range d.Info.RecentActions {
		if r.StartWorkflowResult != nil {
			fmt.Fprintf(w, "recent:    %s at %s\n", display.Line(r.StartWorkflowResult.WorkflowID, maxID), r.ActualTime.Local().Format("2006-01-02 15:04:05"))
		}
	}
	return nil
}

// scheduledJob is the job input a schedule's action starts.
func scheduledJob(act client.ScheduleAction) (jobapi.JobInput, error) {
	var in jobapi.JobInput
	wa, ok := act.(*client.ScheduleWorkflowAction)
	if !ok || len(wa.Args) != 1 {
		return in, errors.New("not a custos schedule (its action starts no custos job)")
	}
	switch v := wa.Args[0].(type) {
	case *commonpb.Payload:
		if err := converter.GetDefaultDataConverter().FromPayload(v, &in); err != nil {
			return in, fmt.Errorf("its job's input: %w", err)
		}
	default:
		return in, errors.New("not a custos schedule (its job's input is not a custos job's)")
	}
	return in, nil
}

func overlapName(p enumspb.ScheduleOverlapPolicy) string {
	for n, v := range overlapPolicies {
		if v == p {
			return n
		}
	}
	return strings.ToLower(strings.TrimPrefix(p.String(), "SCHEDULE_OVERLAP_POLICY_"))
}
