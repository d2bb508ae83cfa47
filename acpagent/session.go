package acpagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/mcpservers"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// session is one editor session: a job, started or still to start.
type session struct {
	a  *agent
	id string
	ws string

	mu      sync.Mutex
	started bool          // the job exists on the server
	mode    approval.Mode // before the start: the mode it starts in
	// noBypass: the settings disable bypass (disableBypassPermissionsMode),
	// so the editor is neither offered it nor may set it.
	noBypass bool
	// since is the journal sequence rendered to the editor.
	since int
	// turn is the running prompt's, nil between prompts.
	turn *turn
	// live stops the follower of a loaded job between prompts.
	live context.CancelFunc
	// calls are the tool calls shown, by call ID.
	calls map[string]*shownCall
	// asked are the editor's permission requests in flight, by call ID.
	asked map[string]context.CancelFunc
	// servers are the MCP servers the editor passed in session/new (their
	// entries: written again for a run that continues the ended job).
	servers []mcpservers.Server
}

// turn is one running prompt.
type turn struct {
	cancelled chan struct{}
	once      sync.Once
}

func newSession(a *agent, id, ws string) *session {
	return &session{a: a, id: id, ws: ws, calls: map[string]*shownCall{}, asked: map[string]context.CancelFunc{}}
}

func (s *session) isStarted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

func (s *session) bypassDisabled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.noBypass
}

func (s *session) setPendingMode(m approval.Mode) {
	s.mu.Lock()
	s.mode = m
	s.mu.Unlock()
}

// begin marks a prompt running; a second one while it runs is refused.
func (s *session) begin() (*turn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn != nil {
		return nil, acp.NewInvalidRequest(map[string]any{"error": fmt.Sprintf(
			"session %s already has a prompt running: wait for its answer, or send session/cancel first", s.id)})
	}
	t := &turn{cancelled: make(chan struct{})}
	s.turn = t
	live := s.live
	s.live = nil
	s.mu.Unlock()
	if live != nil {
		live() // the prompt's follower takes over from what it rendered
	}
	s.mu.Lock()
	return t, nil
}

func (s *session) end(t *turn) {
	s.mu.Lock()
	if s.turn == t {
		s.turn = nil
	}
	s.mu.Unlock()
}

// cancel interrupts the job's turn (the interrupt Update: the model call
// abandoned, commands killed, waiting calls denied); the running prompt
// then returns cancelled.
func (s *session) cancel() {
	s.mu.Lock()
	t, started := s.turn, s.started
	s.mu.Unlock()
	if t == nil || !started {
		return
	}
	first := false
	t.once.Do(func() { close(t.cancelled); first = true })
	if !first {
		return
	}
	ctx, cancel := context.WithTimeout(s.a.ctx, 30*time.Second)
	defer cancel()
	in := jobapi.Interrupt{By: s.a.o.By, Channel: Channel}
	if _, err := update[jobapi.InterruptResult](ctx, s.a.c, s.id, jobapi.InterruptUpdate, newID("acp-int-"), in); err != nil {
		s.a.o.Logger.Warn("acp: interrupt", "job", s.id, "err", err)
	}
}

// NewJobID is a new job's workflow ID, as `starter run` names them.
func NewJobID() string {
	return fmt.Sprintf("custos-%s-%s", time.Now().UTC().Format("20060102-150405"), hex.EncodeToString(random(3)))
}

func newID(prefix string) string { return prefix + hex.EncodeToString(random(8)) }

func random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// errNotApplied marks an Update the job refused (its own words).
var errNotApplied = errors.New("not applied")

type notApplied struct{ msg string }

func (e notApplied) Error() string        { return e.msg }
func (e notApplied) Is(target error) bool { return target == errNotApplied }

// update sends an Update (with updateID when not "") and waits for its
// result; the job's refusal is a notApplied.
func update[T any](ctx context.Context, c client.Client, id, name, updateID string, arg any) (T, error) {
	var res T
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateID: updateID, UpdateName: name, Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	var ae *temporal.ApplicationError
	if err != nil && errors.As(err, &ae) && (ae.Type() == "NotApplied" || ae.Type() == "Refused") {
		return res, notApplied{ae.Message()}
	}
	return res, err
}

// requestError is err as the client reads it: the job's refusal and an
// unknown job are the caller's (invalid params), the rest internal.
func requestError(what string, err error) error {
	var nf *serviceerror.NotFound
	if errors.Is(err, errNotApplied) || errors.As(err, &nf) {
		return acp.NewInvalidParams(map[string]any{"error": what + ": " + err.Error()})
	}
	return acp.NewInternalError(map[string]any{"error": what + ": " + err.Error()})
}
