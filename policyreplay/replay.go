package policyreplay

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/hooks"
)

// Kind is how a call's outcome would change under the proposed policy.
type Kind string

// The kinds of change, loudest first (kindRank).
const (
	// DenialAllowed: a person, a timer, a rule, a hook or a mode denied
	// the call, and the proposed policy allows it without asking anyone.
	DenialAllowed Kind = "denial-now-allowed"
	// NotReplayable: the proposed policy would hand the call to a command
	// hook that never saw it; custos does not run hooks to find out.
	NotReplayable Kind = "not-replayable"
	// DenialAsks: a rule, hook or mode denied it; now a person is asked.
	DenialAsks Kind = "denial-now-asks"
	// ApprovalAllowed: a person allowed it; now nobody is asked.
	ApprovalAllowed Kind = "approval-now-allowed"
	// AllowedAsks: rules, a hook or a mode allowed it; now a person is asked.
	AllowedAsks Kind = "allowed-now-asks"
	// ApprovalDenied: a person allowed it; now it is denied.
	ApprovalDenied Kind = "approval-now-denied"
	// AllowedDenied: rules, a hook or a mode allowed it; now it is denied.
	AllowedDenied Kind = "allowed-now-denied"
)

// Kinds lists the kinds of change, loudest first.
var Kinds = []Kind{DenialAllowed, NotReplayable, DenialAsks, ApprovalAllowed, AllowedAsks, ApprovalDenied, AllowedDenied}

// Title says a kind in words, for people.
func (k Kind) Title() string {
	switch k {
	case DenialAllowed:
		return "denied then, allowed now without asking"
	case NotReplayable:
		return "not replayable: a command hook that never saw the call would decide"
	case DenialAsks:
		return "denied then, a person is asked now"
	case ApprovalAllowed:
		return "a person allowed it then, nobody is asked now"
	case AllowedAsks:
		return "allowed then without asking, a person is asked now"
	case ApprovalDenied:
		return "a person allowed it then, denied now"
	case AllowedDenied:
		return "allowed then without asking, denied now"
	}
	return string(k)
}

// Outcome is what the pipeline made of a call: Decision allow or deny, or
// ask (a person would be asked: new outcomes only). Layer human with By
// set is a person's (or the timer's) answer.
type Outcome struct {
	Decision approval.Decision `json:"decision"`
	Layer    approval.Layer    `json:"layer,omitempty"`
	Rule     string            `json:"rule,omitempty"`
	System   bool              `json:"system,omitempty"`
	Hook     string            `json:"hook,omitempty"`
	By       string            `json:"by,omitempty"`
	Channel  string            `json:"channel,omitempty"`
	Reason   string            `json:"reason,omitempty"`
}

// Change is one recorded call whose outcome the proposal changes.
type Change struct {
	Kind      Kind            `json:"kind"`
	JobID     string          `json:"jobId"`
	Workspace string          `json:"workspace"`
	Seq       int             `json:"seq"`
	CallID    string          `json:"callId"`
	Tool      string          `json:"tool"`
	Summary   string          `json:"summary"`
	Input     json.RawMessage `json:"input"`
	Time      time.Time       `json:"time"`
	Mode      approval.Mode   `json:"mode"`
	Then      Outcome         `json:"then"`
	Now       *Outcome        `json:"now,omitempty"`
	// Notes say what the replay assumed for this call.
	Notes []string `json:"notes,omitempty"`
}

// Count is how many changes of one kind.
type Count struct {
	Kind  Kind `json:"kind"`
	Count int  `json:"count"`
}

// Report is a replay's outcome.
type Report struct {
	Jobs int `json:"jobs"`
	// Calls counts the decided calls replayed; Unchanged those whose
	// outcome stays; Skipped those refused before the policy (unknown
	// tools, invalid arguments, cut answers), which no policy changes.
	Calls     int      `json:"calls"`
	Unchanged int      `json:"unchanged"`
	Skipped   int      `json:"skipped"`
	Counts    []Count  `json:"counts"`
	Changes   []Change `json:"changes"`
	// Assumed says, once each, what the replay had to assume for records
	// that do not say it.
	Assumed []string `json:"assumed,omitempty"`
}

// DeniedNowAllowed counts past denials the proposal allows without asking
// (the exit status of `policy replay` is 1 when there are any).
func (r *Report) DeniedNowAllowed() int { return r.count(DenialAllowed) }

func (r *Report) count(k Kind) int {
	for _, c := range r.Counts {
		if c.Kind == k {
			return c.Count
		}
	}
	return 0
}

// Options tune a replay.
type Options struct {
	// Home stands for the home directory of jobs whose records do not
	// name their policy facts (approval.Env).
	Home string
}

// Replay runs layers 1-4 of the proposed settings over the decided calls of
// jobs: the input as the model sent it, in the mode the job was in, with the
// hooks' recorded answers. It runs no tool and no user hook; system hooks
// (pure, in approval) are judged again. Jobs and records are taken in the
// order given, changes reported loudest kind first.
func Replay(jobs []Job, pols Policies, opts Options) (*Report, error) {
	r := &replayer{pols: pols, opts: opts, compiled: map[string]*approval.Policy{}, settings: map[string]wsSettings{}}
	results := make([]jobResult, len(jobs))
	// Jobs are judged in parallel (a Policy is safe for concurrent use)
	// and their results joined in the order given: the report is the
	// same however the work was shared.
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(1, len(jobs))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i].err = r.job(&results[i], jobs[i])
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	rep := &Report{Jobs: len(jobs), Changes: []Change{}}
	seen := map[string]bool{}
	for _, res := range results {
		if res.err != nil {
			return nil, res.err
		}
		rep.Calls, rep.Unchanged, rep.Skipped = rep.Calls+res.calls, rep.Unchanged+res.unchanged, rep.Skipped+res.skipped
		rep.Changes = append(rep.Changes, res.changes...)
		for _, a := range res.assumed {
			if !seen[a] {
				seen[a] = true
				rep.Assumed = append(rep.Assumed, a)
			}
		}
	}
	rank := func(k Kind) int { return slices.Index(Kinds, k) }
	sort.SliceStable(rep.Changes, func(a, b int) bool { return rank(rep.Changes[a].Kind) < rank(rep.Changes[b].Kind) })
	counts := map[Kind]int{}
	for _, c := range rep.Changes {
		counts[c.Kind]++
	}
	for _, k := range Kinds {
		if counts[k] > 0 {
			rep.Counts = append(rep.Counts, Count{k, counts[k]})
		}
	}
	return rep, nil
}

// jobResult is what one job's replay adds to the report.
type jobResult struct {
	calls, unchanged, skipped int
	changes                   []Change
	assumed                   []string
	err                       error
}

func (res *jobResult) assume(what string) {
	if !slices.Contains(res.assumed, what) {
		res.assumed = append(res.assumed, what)
	}
}

type replayer struct {
	pols Policies
	opts Options
	// mu guards the caches, shared by the jobs judged in parallel.
	mu       sync.Mutex
	compiled map[string]*approval.Policy
	settings map[string]wsSettings
}

// wsSettings are a workspace's settings now and under the proposal.
type wsSettings struct {
	now, prop approval.Settings
	err       error
}

// settingsOf loads a workspace's settings once.
func (r *replayer) settingsOf(ws string) (approval.Settings, approval.Settings, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.settings[ws]
	if !ok {
		if s.now, s.err = r.pols.Current(ws); s.err == nil {
			s.prop, s.err = r.pols.Proposed(ws)
		}
		r.settings[ws] = s
	}
	return s.now, s.prop, s.err
}

// jobCtx is what holds for every call of one job.
type jobCtx struct {
	job       Job
	env       approval.Env
	envNote   string
	now, prop approval.Settings
	policy    *approval.Policy
}

func (r *replayer) job(res *jobResult, j Job) error {
	jc := jobCtx{job: j}
	var err error
	if jc.now, jc.prop, err = r.settingsOf(j.Workspace); err != nil {
		return err
	}
	jc.env, jc.envNote = r.envOf(res, j)
	if jc.policy, err = r.compile(j.Workspace, jc.prop, jc.env); err != nil {
		return err
	}
	mode, modeKnown := approval.Mode(""), false
	for _, rec := range j.Records {
		if rec.Event == "mode-changed" {
			// "old -> new": the mode from here on, for records that do
			// not carry their own.
			if _, to, ok := strings.Cut(rec.Reason, " -> "); ok {
				mode, modeKnown = approval.Mode(strings.TrimSpace(to)), true
			}
			continue
		}
		if !decided(rec) {
			continue
		}
		res.calls++
		if rec.Decision == approval.Deny && refusedBeforePolicy(rec) {
			// Only denials can be refusals; an allowed call passed them.
			res.skipped++
			continue
		}
		m, note := rec.Mode, ""
		if m == "" {
			m = mode
			if !modeKnown {
				m, note = cmpMode(jc.now.Permissions.DefaultMode), "mode assumed "+string(cmpMode(jc.now.Permissions.DefaultMode))+" (the workspace's current defaultMode)"
				res.assume("calls recorded before custos kept the mode are judged in the workspace's current defaultMode")
			}
		}
		if c, changed := r.call(jc, rec, m, note); changed {
			res.changes = append(res.changes, c)
		} else {
			res.unchanged++
		}
	}
	return nil
}

func cmpMode(m approval.Mode) approval.Mode {
	if m == "" {
		return approval.ModeDefault
	}
	return m
}

// envOf is the policy facts the job recorded, else what can be assumed.
func (r *replayer) envOf(res *jobResult, j Job) (approval.Env, string) {
	for _, rec := range j.Records {
		if rec.Env != nil {
			return *rec.Env, ""
		}
	}
	res.assume("jobs recorded before custos kept their policy facts are judged with a sandbox present, the workspace as named and this user's home")
	return approval.Env{Workspace: j.Workspace, Home: r.opts.Home}, "policy facts assumed (sandbox present, home " + r.opts.Home + ")"
}

// compile builds the proposed policy for a job as a job builds its own
// (approval.Compile: system rules first, then deny, ask, allow), once per
// workspace and facts.
func (r *replayer) compile(ws string, s approval.Settings, env approval.Env) (*approval.Policy, error) {
	key, _ := json.Marshal(env)
	k := ws + "\x00" + string(key)
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.compiled[k]; ok {
		return p, nil
	}
	p, err := approval.Compile(s, env)
	if err != nil {
		return nil, fmt.Errorf("proposed policy for %s: %w", ws, err)
	}
	r.compiled[k] = p
	return p, nil
}

// decided reports whether rec is a tool call's decision.
func decided(rec approval.AuditRecord) bool {
	return rec.Event == "" && rec.Tool != "" && (rec.Decision == approval.Allow || rec.Decision == approval.Deny)
}

// refusedBeforePolicy reports calls the workflow refuses before layer 1
// (workflows' decide and refusedCall): no policy changes them.
func refusedBeforePolicy(rec approval.AuditRecord) bool {
	if !api.KnownTool(rec.Tool) {
		return true
	}
	if _, ok := api.RefusedReason(rec.Input); ok {
		return true
	}
	return api.CheckArguments(rec.Tool, modelInput(rec)) != nil
}

// modelInput is the input as the model sent it (before a hook's rewrite).
func modelInput(rec approval.AuditRecord) json.RawMessage {
	if rec.Modified && len(rec.OriginalInput) > 0 {
		return rec.OriginalInput
	}
	return rec.Input
}

// then is the recorded outcome.
func then(rec approval.AuditRecord) Outcome {
	return Outcome{Decision: rec.Decision, Layer: rec.Layer, Rule: rec.Rule, System: rec.System, Hook: rec.Hook,
		By: rec.Approver, Channel: rec.Channel, Reason: rec.Reason}
}

// call judges one recorded call again; changed is false when its outcome
// stays what it was.
func (r *replayer) call(jc jobCtx, rec approval.AuditRecord, m approval.Mode, modeNote string) (Change, bool) {
	c := Change{JobID: jc.job.ID, Workspace: jc.job.Workspace, Seq: rec.Seq, CallID: rec.CallID, Tool: rec.Tool,
		Input: modelInput(rec), Time: rec.Time, Mode: m, Then: then(rec)}
	for _, n := range []string{modeNote, jc.envNote} {
		if n != "" {
			c.Notes = append(c.Notes, n)
		}
	}
	call := approval.Call{Tool: rec.Tool, Input: c.Input}
	found := approval.Findings{Rules: jc.policy.Evaluate(call, m)}
	if found.Rules.Open() {
		h, note, ok := hookFindings(jc, rec, call, m)
		if !ok {
			c.Kind, c.Summary = NotReplayable, api.Summarize(rec.Tool, c.Input)
			return c, true
		}
		if note != "" {
			c.Notes = append(c.Notes, note)
		}
		found.Hook = h
	}
	pre := approval.Decide(call, m, jc.policy.Evaluate, found)
	now := Outcome{Decision: pre.Verdict.Decision, Layer: pre.Verdict.Layer, Rule: pre.Verdict.Rule,
		System: pre.Verdict.System, Hook: pre.Hook, Reason: pre.Verdict.Reason}
	if pre.NeedsHuman {
		now.Decision, now.Layer, now.Reason = approval.Ask, approval.LayerHuman, pre.AskReason
	}
	c.Now = &now
	if c.Kind = kindOf(c.Then, now); c.Kind == "" {
		return c, false
	}
	// Summarised only when shown: most calls of a replay do not change.
	c.Summary = api.Summarize(rec.Tool, c.Input)
	return c, true
}

// kindOf classifies a change; "" when the outcome stays.
func kindOf(then, now Outcome) Kind {
	asked := then.Layer == approval.LayerHuman
	switch {
	case then.Decision == approval.Deny && now.Decision == approval.Allow:
		return DenialAllowed
	case then.Decision == approval.Deny && now.Decision == approval.Ask && !asked:
		return DenialAsks
	case then.Decision == approval.Allow && asked && now.Decision == approval.Allow:
		return ApprovalAllowed
	case then.Decision == approval.Allow && asked && now.Decision == approval.Deny:
		return ApprovalDenied
	case then.Decision == approval.Allow && !asked && now.Decision == approval.Ask:
		return AllowedAsks
	case then.Decision == approval.Allow && !asked && now.Decision == approval.Deny:
		return AllowedDenied
	}
	return ""
}

// hookFindings is layer 4 for a replayed call: the system hooks judged
// again (pure); the user's command hooks by their recorded answer, which
// stands only when the proposal runs the same hooks for the tool as now
// and the call reached them then. ok is false when a hook would have to
// run to know (not replayable).
func hookFindings(jc jobCtx, rec approval.AuditRecord, call approval.Call, m approval.Mode) (*hooks.Result, string, bool) {
	p := hooks.Payload{Point: hooks.ToolApprovalPre, JobID: jc.job.ID, CallID: rec.CallID, Tool: call.Tool,
		Input: call.Input, Mode: string(m), Workspace: jc.env.Workspace}
	if res, ok := hooks.Dispatch(approval.SystemHooks().Handlers(hooks.ToolApprovalPre, call.Tool), p); ok {
		return &res, "", true
	}
	proposed := hookCommands(jc.prop, call.Tool)
	if len(proposed) == 0 {
		return nil, "", true
	}
	if !reachedHooks(rec) || !slices.Equal(proposed, hookCommands(jc.now, call.Tool)) {
		return nil, "", false
	}
	if rec.Hook == "" || strings.HasPrefix(rec.Hook, "system:") {
		return nil, "", true // the same hooks ran then and none decided
	}
	res := &hooks.Result{Hook: rec.Hook, Decision: rec.HookDecision}
	if rec.Modified {
		res.ModifiedInput = rec.Input
	}
	note := ""
	if rec.HookDecision == "" && !rec.Modified {
		// Recorded before custos kept the hook's answer: a hook that
		// decided is exact, one a person followed is taken as ask.
		res.Decision, note = hooks.Ask, "hook "+rec.Hook+"'s answer assumed ask (not recorded)"
		if rec.Layer == approval.LayerHook {
			res.Decision, note = hooks.Decision(rec.Decision), ""
		}
	}
	if rec.Layer == approval.LayerHook {
		res.Reason = rec.Reason
	}
	return res, note, true
}

// reachedHooks reports whether layer 4 saw the call when it was decided:
// a hook or a person decided it, or dontAsk denied what would have asked.
func reachedHooks(rec approval.AuditRecord) bool {
	switch rec.Layer {
	case approval.LayerHook, approval.LayerHuman:
		return true
	case approval.LayerMode:
		return rec.Hook != "" || strings.Contains(rec.Reason, "dontAsk")
	}
	return rec.Hook != ""
}

// hookCommands are the commands of the layer-4 hooks settings s run for tool.
func hookCommands(s approval.Settings, tool string) []string {
	var out []string
	for _, h := range s.Hooks.CommandHooks(hooks.ToolApprovalPre, tool) {
		out = append(out, h.Command)
	}
	return out
}
