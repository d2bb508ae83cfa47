package acpagent

import (
	"context"
	"errors"
	"fmt"

	acp "github.com/coder/acp-go-sdk"
	"go.temporal.io/api/serviceerror"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/jobevents"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// LoadSession attaches to job sessionId, wherever and whenever it was
// started: the whole conversation (replay) is replayed as session/updates (the task and messages, the answers, every call with
// its final status, what happened while no editor was attached), the
// calls that wait for a person are asked of the editor, and a job at work
// is followed live until its answer.
func (a *agent) LoadSession(ctx context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	ws, err := a.workspace(p.Cwd)
	if err != nil {
		return acp.LoadSessionResponse{}, err
	}
	id := string(p.SessionId)
	st, err := jobevents.QueryStatus(ctx, a.c, id)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return acp.LoadSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown session %q: no such job on this server", id)})
	}
	if err != nil {
		return acp.LoadSessionResponse{}, requestError("load "+id, err)
	}
	if st.Workspace != ws {
		return acp.LoadSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("session %s is a job on %s, not on %s", id, st.Workspace, ws)})
	}
	s := newSession(a, id, ws)
	s.started = true
	_, s.noBypass = a.defaultMode(ws)
	a.mu.Lock()
	if old := a.sessions[id]; old != nil && old.running() {
		a.mu.Unlock()
		return acp.LoadSessionResponse{}, acp.NewInvalidRequest(map[string]any{"error": fmt.Sprintf("session %s has a prompt running in this process", id)})
	}
	a.sessions[id] = s
	a.mu.Unlock()
	s.replay(ctx, st)
	for _, pa := range st.Pending {
		go s.ask(pa.CallID)
	}
	if running, err := a.running(ctx, id); err == nil && running && !jobevents.WaitsForMessage(st) {
		s.followLive()
	}
	return acp.LoadSessionResponse{Modes: modeState(modeOr(st.Mode), s.noBypass)}, nil
}

func modeOr(m approval.Mode) approval.Mode {
	if m == "" {
		return approval.ModeDefault
	}
	return m
}

// running says whether the job's workflow runs.
func (a *agent) running(ctx context.Context, id string) (bool, error) {
	d, err := a.c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return false, err
	}
	return d.GetWorkflowExecutionInfo().GetCloseTime() == nil, nil
}

// replay renders the job's conversation from its start (jobevents.History):
// the transcript for what it holds, every run's turns, then the current
// run's journal for the rest. Where this process cannot read the
// transcript (the worker's host is another), the current run's journal
// is all there is, after the task.
func (s *session) replay(ctx context.Context, st jobapi.Status) {
	journal, err := jobevents.ClientJournal(s.a.c, s.id)(ctx, 0)
	if err != nil {
		s.a.o.Logger.Warn("acp: the job's journal is not readable", "job", s.id, "err", err)
	}
	var evs []jobevents.Event
	path := st.Files.Or(st.Workspace, s.id).Transcript
	msgs, err := jobevents.ReadTranscript(path)
	if err != nil || len(msgs) < 2 {
		s.a.o.Logger.Warn("acp: the job's transcript is not readable here: session/load replays the current run's journal only", "job", s.id, "transcript", path, "err", err)
		if st.Task != "" {
			s.send(acp.UpdateUserMessageText(st.Task))
		}
		for _, e := range journal {
			evs = append(evs, jobevents.FromJournal(e))
		}
	} else {
		evs = jobevents.History(msgs, st.Turns, journal)
	}
	last := ""
	for _, e := range evs {
		s.render(e, true)
		if a, ok := e.(jobevents.Answer); ok {
			last = a.Text
		}
	}
	if n := len(journal); n > 0 {
		s.mu.Lock()
		s.since = max(s.since, journal[n-1].Seq) // followLive goes on from here
		s.mu.Unlock()
	}
	if jobevents.WaitsForMessage(st) && st.LastAnswer != "" && last != st.LastAnswer {
		s.render(jobevents.Answer{Turn: st.Turn, Text: st.LastAnswer}, true)
	}
}

func (s *session) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turn != nil
}

// followLive renders a loaded job's events until it answers, the
// connection closes, or a prompt takes over (begin stops it).
func (s *session) followLive() {
	ctx, cancel := context.WithCancel(s.a.ctx)
	done := make(chan struct{})
	s.mu.Lock()
	since := s.since
	s.live = func() { cancel(); <-done }
	s.mu.Unlock()
	go func() {
		defer close(done)
		defer cancel()
		for e := range jobevents.Follow(ctx, s.a.c, s.id, jobevents.Options{Since: since, Hub: s.a.o.Hub}) {
			if ctx.Err() != nil {
				return
			}
			s.render(e, false)
		}
	}()
}
