// Package inbox is custos' approval page: every tool call waiting for a
// person, across all jobs, on one page, answered with a click.
//
// The Collector keeps a snapshot of the waiting calls in memory, refreshed
// in the background from Temporal (visibility lists the running jobs, the
// status query says what each waits for), so a page load renders from
// memory and a server-sent event stream pushes every change. The Handler
// renders the page with html/template and a small embedded script; its
// answers are decide Updates with channel "web". It imports the Temporal
// SDK client, never the server: where it is served from (behind the
// embedded server's Web UI gate, or on its own token-guarded address) is
// the caller's business (see Gate).
package inbox

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/workflows/jobapi"
)

// Job is one running job that waits for a person (a call to answer, its
// next message), or holds live grants.
type Job struct {
	ID        string
	Task      string
	Workspace string
	Host      string
	Started   time.Time
	Calls     []jobapi.PendingAsk
	Grants    []jobapi.Grant
	// State is the job's phase (jobapi.PhaseWaitingMessage: it answered
	// and waits for the next message); LastAnswer what it answered last.
	State      string
	LastAnswer string
	// Parent is the job that started this one as a subagent ("" for a
	// job of its own); the page shows it under its parent.
	Parent string
	// ChildAsks counts its children's waiting calls: it is listed, with
	// them under it, even when nothing of its own waits.
	ChildAsks int
}

// WaitsForMessage reports whether the job answered and waits for the
// next message.
func (j Job) WaitsForMessage() bool { return j.State == jobapi.PhaseWaitingMessage }

// listed reports whether the page shows j: it waits for someone, or holds
// grants someone may want to revoke.
func listed(j Job) bool {
	return len(j.Calls) > 0 || len(j.Grants) > 0 || j.WaitsForMessage() || j.ChildAsks > 0
}

// Snapshot is what the page shows: the jobs with waiting calls, waiting
// for their next message, or with live grants, oldest job first. Version changes whenever what it shows does.
type Snapshot struct {
	Version uint64
	At      time.Time
	Jobs    []Job
	// Err is the last refresh's error ("" when it worked): the page says
	// it may be out of date rather than show nothing.
	Err string
}

// Calls counts the waiting calls.
func (s Snapshot) Calls() int {
	n := 0
	for _, j := range s.Jobs {
		n += len(j.Calls)
	}
	return n
}

// Collector defaults.
const (
	// DefaultInterval is how often the collector looks again by itself.
	// A second: a call that arrives shows within about that, and a
	// status query per running job per second is what `starter watch`
	// already costs.
	DefaultInterval = time.Second
	// DefaultConcurrency bounds the status queries in flight: each is
	// answered by a worker, and a burst of hundreds would queue behind
	// the jobs' own workflow tasks.
	DefaultConcurrency = 8
	queryTimeout       = 5 * time.Second
)

// Collector keeps the Snapshot. Start it with Run.
type Collector struct {
	c           client.Client
	interval    time.Duration
	concurrency int
	logger      *slog.Logger

	kick chan struct{} // a refresh wanted now

	mu      sync.Mutex
	wanted  time.Time // when a page last asked for the snapshot
	snap    Snapshot
	subs    map[chan struct{}]bool
	refresh sync.Mutex // one refresh at a time
}

// NewCollector makes a collector on c; interval and concurrency of 0 take
// the defaults.
func NewCollector(c client.Client, interval time.Duration, concurrency int, logger *slog.Logger) *Collector {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Collector{c: c, interval: interval, concurrency: concurrency, logger: logger,
		kick: make(chan struct{}, 1), subs: map[chan struct{}]bool{}}
}

// idleAfter is how long after the last page load, with no event stream
// open, the collector stops asking every job every second: a worker whose
// inbox nobody looks at costs its jobs nothing.
const idleAfter = time.Minute

// Run refreshes the snapshot every interval while someone looks (an open
// event stream, or a page load within idleAfter), and at once when Kick
// asks, until ctx ends.
func (k *Collector) Run(ctx context.Context) {
	t := time.NewTicker(k.interval)
	defer t.Stop()
	for {
		if k.watched(time.Now()) {
			k.Refresh(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-k.kick:
		}
	}
}

// Kick asks Run for a refresh now (after an answer, so the page shows its
// effect without waiting for the tick).
func (k *Collector) Kick() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// Snapshot is the current snapshot.
func (k *Collector) Snapshot() Snapshot {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.snap
}

// Fresh is the snapshot for a page being loaded: it marks the inbox as
// looked at and, when the background refresh has been idle, refreshes
// first (bounded, so a hung query cannot hold the page).
func (k *Collector) Fresh(ctx context.Context) Snapshot {
	now := time.Now()
	k.mu.Lock()
	k.wanted = now
	stale := now.Sub(k.snap.At) > 2*k.interval
	k.mu.Unlock()
	if stale && k.c != nil {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		k.Refresh(ctx)
		cancel()
	}
	return k.Snapshot()
}

// watched reports whether anyone looks at the inbox at now.
func (k *Collector) watched(now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.subs) > 0 || now.Sub(k.wanted) < idleAfter
}

// Subscribe returns a channel that receives a value (coalesced) whenever
// the snapshot's version changes, and a function that ends the
// subscription.
func (k *Collector) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	k.mu.Lock()
	k.subs[ch] = true
	k.mu.Unlock()
	k.Kick() // an idle collector starts looking now
	return ch, func() {
		k.mu.Lock()
		delete(k.subs, ch)
		k.mu.Unlock()
	}
}

// Refresh reads the waiting calls from Temporal now and publishes them.
func (k *Collector) Refresh(ctx context.Context) {
	k.refresh.Lock()
	defer k.refresh.Unlock()
	jobs, err := k.collect(ctx)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		k.logger.Warn("inbox: listing waiting calls", "error", err)
	}
	k.publish(jobs, err, time.Now())
}

// publish stores jobs as the snapshot (keeping the last good jobs on a
// failed listing) and tells subscribers when it changed.
func (k *Collector) publish(jobs []Job, err error, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	next := Snapshot{Version: k.snap.Version, At: now, Jobs: jobs}
	if err != nil {
		next.Jobs, next.Err = k.snap.Jobs, err.Error()
	}
	if fingerprint(next) != fingerprint(k.snap) || k.snap.At.IsZero() {
		next.Version++
		for ch := range k.subs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	k.snap = next
}

// fingerprint hashes what the page shows of a snapshot, so a refresh that
// found the same calls does not make every open page redraw.
func fingerprint(s Snapshot) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00", s.Err)
	for _, j := range s.Jobs {
		fmt.Fprintf(h, "j%s\x00%s\x00%s\x00%s\x00", j.ID, j.Task, j.State, j.LastAnswer)
		for _, p := range j.Calls {
			fmt.Fprintf(h, "c%s\x00%d\x00", p.CallID, p.Deadline.UnixNano())
		}
		for _, g := range j.Grants {
			fmt.Fprintf(h, "g%s\x00%d\x00%d\x00", g.ID, g.Until.UnixNano(), g.Uses)
		}
	}
	return h.Sum64()
}

// collect lists the running jobs and asks each, with bounded concurrency,
// what it waits for. A job whose query fails (no worker yet, a job of an
// older release) is left out of this round; it is not an error.
func (k *Collector) collect(ctx context.Context) ([]Job, error) {
	ids, err := RunningJobs(ctx, k.c)
	if err != nil {
		return nil, fmt.Errorf("inbox: list running jobs: %w", err)
	}
	out := mapBounded(ids, k.concurrency, func(r RunningJob) *Job { return k.job(ctx, r) })
	jobs := make([]Job, 0, len(out))
	for _, j := range out {
		if j != nil && listed(*j) {
			jobs = append(jobs, *j)
		}
	}
	return underParents(jobs), nil
}

// underParents puts each subagent right after its parent (and its older
// siblings), when its parent is listed; the others keep their order.
func underParents(jobs []Job) []Job {
	listed := map[string]bool{}
	for _, j := range jobs {
		listed[j.ID] = true
	}
	out := make([]Job, 0, len(jobs))
	added := map[string]bool{}
	var add func(j Job)
	add = func(j Job) {
		if added[j.ID] {
			return
		}
		added[j.ID] = true
		out = append(out, j)
		for _, c := range jobs {
			if c.Parent == j.ID && c.ID != j.ID {
				add(c)
			}
		}
	}
	for _, j := range jobs {
		if j.Parent == "" || !listed[j.Parent] {
			add(j)
		}
	}
	return out
}

// job asks one job its status; nil when it does not answer.
func (k *Collector) job(ctx context.Context, r RunningJob) *Job {
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	v, err := k.c.QueryWorkflow(qctx, r.ID, "", jobapi.StatusQuery)
	var st jobapi.Status
	if err == nil {
		err = v.Get(&st)
	}
	if err != nil {
		return nil
	}
	calls := slices.Clone(st.Pending)
	// Soonest deadline first: the call about to be denied is on top.
	sort.SliceStable(calls, func(a, b int) bool { return calls[a].Deadline.Before(calls[b].Deadline) })
	j := &Job{ID: r.ID, Task: st.Task, Workspace: st.Workspace, Host: st.Host, Started: r.Start, Calls: calls, Grants: st.Grants,
		State: st.State, LastAnswer: st.LastAnswer}
	if st.Parent != nil {
		j.Parent = st.Parent.Job
	}
	for _, c := range st.Children {
		j.ChildAsks += len(c.Asks)
	}
	return j
}

// RunningJob is a running custos job and when it started.
type RunningJob struct {
	ID    string
	Start time.Time
}

// RunningJobs lists the running custos jobs, oldest first: what the inbox
// shows, and what `starter watch` prompts for.
func RunningJobs(ctx context.Context, c client.Client) ([]RunningJob, error) {
	var jobs []RunningJob
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", jobapi.WorkflowName),
			NextPageToken: token,
		})
		if err != nil {
			return nil, err
		}
		for _, e := range resp.GetExecutions() {
			jobs = append(jobs, RunningJob{e.GetExecution().GetWorkflowId(), e.GetStartTime().AsTime()})
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	sort.SliceStable(jobs, func(i, k int) bool { return jobs[i].Start.Before(jobs[k].Start) })
	return jobs, nil
}
