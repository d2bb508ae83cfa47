// Package acpagent is custos as an Agent Client Protocol agent (JSON-RPC
// 2.0 over stdio, protocol version 1): an editor's session is a custos job.
// session/new starts the job (its workflow ID is the sessionId), a
// conversation waiting for its first message, with the MCP servers the
// editor passed (editormcp.go); each session/prompt is its next message
// (the message Update, as `starter say`); session/cancel is the interrupt
// Update; session/set_mode the mode Update; the editor's answer to
// session/request_permission is the decide Update, one more channel among
// the terminal, Slack and the inbox. What the editor sees
// (session/update) is rendered from package jobevents, the one stream of
// a job's events; nothing here reads history of its own. Tools never run
// through the editor's fs/* or terminal/* methods: reads, writes and
// commands stay behind custos' six layers and its sandbox. The job does
// not belong to the editor: closing it leaves the job to its worker, and
// session/load in a new process replays the journal and goes on live.
package acpagent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/sandbox/pathguard"
	"github.com/custos-dev/custos/settingsfile"
	"github.com/custos-dev/custos/stream"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Channel is how the jobs' audit names this channel.
const Channel = "acp"

// SessionRow is one job session/list offers.
type SessionRow struct {
	Job, Workspace, Task string
	Updated              time.Time
}

// Options are what Serve needs from the command that runs it.
type Options struct {
	// Client reaches the Temporal server the jobs run on.
	Client client.Client
	// Hub is the text of a worker in this process (nil: relayed from the
	// worker that runs each model call, jobevents.Relay).
	Hub *stream.Hub
	// By names the person at the editor in the jobs' audit.
	By string
	// Owner are the identities a new job is for (CUSTOS_IDENTITY).
	Owner []string
	// Route picks the worker host for a new job's workspace (nil, or ""
	// from it: the shared queue).
	Route func(ctx context.Context, ws string) (string, error)
	// List is the server's jobs, for session/list (nil: not offered).
	List func(ctx context.Context) ([]SessionRow, error)
	// InProcess says the server and worker run in this process: the docs
	// and the log say what closing the editor means then.
	InProcess bool
	// UserConfigDir holds the user's custos settings ("": the OS's).
	UserConfigDir string
	// StateDir is custos' state directory, where a job's editor MCP
	// entries are kept for its worker ("": statedir.Dir, the worker's).
	StateDir string
	Logger   *slog.Logger
}

// Serve answers one client on in/out until in ends or ctx is done. The
// jobs it started or loaded go on.
func Serve(ctx context.Context, in io.Reader, out io.Writer, o Options) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if o.UserConfigDir == "" {
		o.UserConfigDir, _ = os.UserConfigDir()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a := &agent{o: o, c: o.Client, ctx: ctx, sessions: map[string]*session{}}
	a.conn = acp.NewAgentSideConnection(a, out, in)
	a.conn.SetLogger(o.Logger)
	select {
	case <-a.conn.Done():
	case <-ctx.Done():
	}
	return nil
}

// agent is one client's connection.
type agent struct {
	o    Options
	c    client.Client
	conn *acp.AgentSideConnection
	// ctx lives as long as the connection: followers and permission
	// requests stop with it, the jobs do not.
	ctx      context.Context
	mu       sync.Mutex
	sessions map[string]*session
}

var _ acp.Agent = (*agent)(nil)
var _ acp.AgentLoader = (*agent)(nil)

// Initialize says what custos really does: sessions load; prompts take
// text, embedded resources and resource links (as context); the editor's
// MCP servers run over stdio or streamable HTTP (not SSE).
func (a *agent) Initialize(_ context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	return acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersionNumber,
		AgentInfo:       &acp.Implementation{Name: "custos", Version: "1"},
		AgentCapabilities: acp.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: acp.PromptCapabilities{EmbeddedContext: true},
			McpCapabilities:    acp.McpCapabilities{Http: true},
			SessionCapabilities: acp.SessionCapabilities{
				List: listCapability(a.o.List != nil),
			},
		},
		AuthMethods: []acp.AuthMethod{},
	}, nil
}

func listCapability(on bool) *acp.SessionListCapabilities {
	if !on {
		return nil
	}
	return &acp.SessionListCapabilities{}
}

func (a *agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

// NewSession starts a job on cwd: a conversation that waits for its
// first message (the first session/prompt), so every channel knows the
// sessionId from now on. The editor's MCP servers are checked, kept in
// the job's file for its worker, and named (only) in its input.
func (a *agent) NewSession(_ context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	ws, err := a.workspace(p.Cwd)
	if err != nil {
		return acp.NewSessionResponse{}, err
	}
	id := NewJobID()
	servers, err := editorServers(id, p.McpServers)
	if err != nil {
		return acp.NewSessionResponse{}, err
	}
	mode, noBypass := a.defaultMode(ws)
	s := newSession(a, id, ws)
	s.mode, s.noBypass = mode, noBypass
	if err := a.keepEditorServers(id, servers); err != nil {
		return acp.NewSessionResponse{}, err
	}
	ctx, cancel := context.WithTimeout(a.ctx, time.Minute)
	defer cancel()
	s.servers = servers
	if err := s.start(ctx, names(servers)); err != nil {
		if !s.isStarted() {
			a.forgetEditorServers(id)
		}
		return acp.NewSessionResponse{}, err
	}
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	return acp.NewSessionResponse{SessionId: acp.SessionId(s.id), Modes: modeState(mode, noBypass)}, nil
}

// workspace is cwd as custos names workspaces; ACP wants it absolute.
func (a *agent) workspace(cwd string) (string, error) {
	if !strings.HasPrefix(cwd, "/") {
		return "", acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cwd %q is not an absolute path", cwd)})
	}
	ws, err := pathguard.CanonicalWorkspace(cwd)
	if err != nil {
		return "", acp.NewInvalidParams(map[string]any{"error": "cwd: " + err.Error()})
	}
	return ws, nil
}

// defaultMode is the mode a new job of ws gets: the settings' defaultMode
// (an untrusted workspace's narrowed), else default; and whether the
// settings disable bypass (disableBypassPermissionsMode: the editor is
// not offered it). Settings that cannot be read offer no bypass either.
func (a *agent) defaultMode(ws string) (approval.Mode, bool) {
	loaded, err := settingsfile.Load(a.o.UserConfigDir, ws)
	if err != nil {
		return approval.ModeDefault, true
	}
	noBypass := loaded.Settings.Permissions.DisableBypass
	m, err := approval.ResolveMode("", loaded.Settings.Permissions.DefaultMode)
	if err == nil {
		err = approval.CheckMode(loaded.Settings, m)
	}
	if err != nil || m == "" {
		return approval.ModeDefault, noBypass
	}
	return m, noBypass
}

// session is the session id's state in this process.
func (a *agent) session(id acp.SessionId) (*session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[string(id)]
	if s == nil {
		return nil, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown session %q: create it with session/new, or load it with session/load", id)})
	}
	return s, nil
}

// modes are the five permission modes, each as the job knows it.
var modes = []acp.SessionMode{
	{Id: "default", Name: "Default", Description: acp.Ptr("ask before edits and commands the rules do not allow")},
	{Id: "acceptEdits", Name: "Accept edits", Description: acp.Ptr("allow edits in the workspace; ask before commands")},
	{Id: "dontAsk", Name: "Don't ask", Description: acp.Ptr("deny what would ask, instead of asking")},
	{Id: "plan", Name: "Plan", Description: acp.Ptr("read only: no edits, no commands")},
	{Id: "bypass", Name: "Bypass", Description: acp.Ptr("allow everything the system deny rules and the sandbox allow")},
}

// modeState offers the modes, bypass only when the settings allow it.
func modeState(m approval.Mode, noBypass bool) *acp.SessionModeState {
	var available []acp.SessionMode
	for _, m := range modes {
		if !noBypass || m.Id != acp.SessionModeId(approval.ModeBypass) {
			available = append(available, m)
		}
	}
	return &acp.SessionModeState{AvailableModes: available, CurrentModeId: acp.SessionModeId(m)}
}

// SetSessionMode changes the job's mode through the mode Update, as
// `starter mode` does (audited, channel acp).
func (a *agent) SetSessionMode(ctx context.Context, p acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return acp.SetSessionModeResponse{}, err
	}
	m, err := approval.ParseMode(string(p.ModeId))
	if err == nil && m == approval.ModeBypass && s.bypassDisabled() {
		err = approval.ErrBypassDisabled
	}
	if err != nil {
		return acp.SetSessionModeResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	if !s.isStarted() {
		s.setPendingMode(m)
		return acp.SetSessionModeResponse{}, nil
	}
	_, err = update[jobapi.ModeResult](ctx, a.c, s.id, jobapi.ModeUpdate, "",
		jobapi.ModeChange{Mode: string(m), By: a.o.By, Channel: Channel})
	if err != nil {
		return acp.SetSessionModeResponse{}, requestError(fmt.Sprintf("change the mode of %s", s.id), err)
	}
	return acp.SetSessionModeResponse{}, nil
}

// Cancel interrupts the session's turn as `starter interrupt` does.
func (a *agent) Cancel(_ context.Context, p acp.CancelNotification) error {
	s, err := a.session(p.SessionId)
	if err != nil {
		return err
	}
	s.cancel()
	return nil
}

func (a *agent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, acp.NewMethodNotFound("session/close")
}

func (a *agent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound("session/resume")
}

func (a *agent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, acp.NewMethodNotFound("session/set_config_option")
}

// ListSessions is the server's jobs on cwd (every job without one).
func (a *agent) ListSessions(ctx context.Context, p acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	out := acp.ListSessionsResponse{Sessions: []acp.SessionInfo{}}
	if a.o.List == nil {
		return out, acp.NewMethodNotFound("session/list")
	}
	ws := ""
	if p.Cwd != nil && *p.Cwd != "" {
		var err error
		if ws, err = a.workspace(*p.Cwd); err != nil {
			return out, err
		}
	}
	rows, err := a.o.List(ctx)
	if err != nil {
		return out, requestError("list jobs", err)
	}
	for _, r := range rows {
		if ws != "" && r.Workspace != ws {
			continue
		}
		info := acp.SessionInfo{SessionId: acp.SessionId(r.Job), Cwd: r.Workspace}
		if r.Task != "" { // a session's job has none: its first message is in the replay
			info.Title = acp.Ptr(r.Task)
		}
		if !r.Updated.IsZero() {
			info.UpdatedAt = acp.Ptr(r.Updated.UTC().Format(time.RFC3339))
		}
		out.Sessions = append(out.Sessions, info)
	}
	return out, nil
}
