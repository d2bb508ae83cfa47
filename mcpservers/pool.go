package mcpservers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/internal/statedir"
	"github.com/custos-dev/custos/netpolicy"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/sandbox/netproxy"
)

// ErrServerDied is wrapped by a call's error when its server died (or its
// connection broke) while the call ran: the call may or may not have had
// its effect.
var ErrServerDied = errors.New("the MCP server died while the call ran")

// ErrCallStopped is wrapped by the error of a call whose context ended
// before its server answered (an interrupt, the job's end or
// cancellation): the server was killed; the call may or may not have had
// its effect.
var ErrCallStopped = errors.New("the MCP call was stopped before its server answered")

// TimeoutError is the error of a call that outlasted its server's
// callTimeout: the server was killed, the call may or may not have had
// its effect.
type TimeoutError struct {
	Server, Tool string
	After        time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("MCP server %q, tool %q: no answer within %s (the server's callTimeout)", e.Server, e.Tool, e.After)
}

// Tool is one server tool as the job sees it.
type Tool struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	FullName    string          `json:"fullName"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// ReadOnly and Destructive are the server's annotations; Trusted says
	// the user's own settings trust the server, the only case in which
	// custos believes them.
	ReadOnly    bool `json:"readOnly,omitempty"`
	Destructive bool `json:"destructive,omitempty"`
	Trusted     bool `json:"trusted,omitempty"`
	// CallTimeout is the entry's "callTimeout" (0: DefaultCallTimeout).
	CallTimeout time.Duration `json:"callTimeout,omitempty"`
}

// Limits a job applies to its servers, from its settings and rules.
type Limits struct {
	// Network is the job's domain policy; a server's own domains join it.
	Network netpolicy.Policy
	// ReadDeny masks what the job's Read deny rules cover, for a stdio
	// server as for a Bash command. A server sees the workspace read-only:
	// what changes the workspace is the model's Write, Edit and Bash, under
	// the six layers and the checkpoints.
	ReadDeny []string
	// EditDeny makes what the job's Edit deny rules cover read-only for a
	// server that writes the workspace (writes.go), as for a Bash command.
	EditDeny []string
}

// Pool holds the servers' sessions of one worker process: started on first
// use, kept warm, started again when they die or their entry changes.
type Pool struct {
	Sandbox       sandbox.Sandbox
	UserConfigDir string
	StateDir      string
	Logger        *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session
	dying    map[string]chan struct{} // sessions drop is killing, by id
	loaded   loadCache
}

type session struct {
	key   string
	cs    *mcp.ClientSession
	proc  *sandbox.Process
	proxy *netproxy.Proxy
	dead  chan struct{}

	mu sync.Mutex // one listing at a time
	// dropped is set once drop took the session out of the pool.
	dropped atomic.Bool
}

// load reads the workspace's servers, with the user's config and custos'
// state directories defaulted as a worker's are; an unchanged set of files
// is not read again (loadCache).
func (p *Pool) load(ws string) (Config, error) {
	user, state := p.UserConfigDir, p.StateDir
	if user == "" {
		user, _ = os.UserConfigDir()
	}
	if state == "" {
		var err error
		if state, err = statedir.Dir(); err != nil {
			return Config{}, err
		}
	}
	return p.loaded.get(user, state, ws)
}

// Tools lists the tools of every server the workspace's jobs may use,
// starting servers as needed. A server that fails to start or list is
// named in the notes; the others still serve.
func (p *Pool) Tools(ctx context.Context, ws string, lim Limits) ([]Tool, []string, error) {
	return p.ToolsFor(ctx, ws, "", lim)
}

// ToolsFor is Tools with, for job ("" for none), the servers its editor
// passed (editor.go).
func (p *Pool) ToolsFor(ctx context.Context, ws, job string, lim Limits) ([]Tool, []string, error) {
	cfg, err := p.loadFor(ws, job)
	if err != nil {
		return nil, nil, err
	}
	notes := cfg.Notes
	var out []Tool
	for _, srv := range cfg.Servers {
		tools, err := p.toolsOf(ctx, ws, srv, lim)
		if err != nil {
			notes = append(notes, fmt.Sprintf("server %q (%s) is unavailable: %v", srv.Name, srv.Source, err))
			continue
		}
		if len(tools) > maxToolsPerServer {
			notes = append(notes, fmt.Sprintf("server %q offers over %d tools: only %d are used", srv.Name, maxToolsPerServer, maxToolsPerServer))
			tools = tools[:maxToolsPerServer]
		}
		for _, t := range tools {
			tool, err := toolOf(srv, t)
			if err != nil {
				notes = append(notes, err.Error())
				continue
			}
			out = append(out, tool)
		}
	}
	return out, notes, nil
}

func (p *Pool) toolsOf(ctx context.Context, ws string, srv Server, lim Limits) ([]*mcp.Tool, error) {
	for attempt := 0; ; attempt++ {
		s, err := p.session(ctx, ws, srv, lim)
		if err != nil {
			return nil, err
		}
		tools, err := s.listTools(ctx)
		switch {
		case err == nil:
			return tools, nil
		case ctx.Err() != nil:
			return nil, err
		case s.dropped.Load() && attempt == 0:
			// Killed under the listing by a call stopped meanwhile (its
			// interrupt or timeout): a fresh server lists.
			continue
		case errors.Is(err, context.DeadlineExceeded):
			p.drop(ws, srv.poolName(), s)
			return nil, fmt.Errorf("list tools: no answer within %s (the server was stopped)", listTimeout)
		}
		return nil, err
	}
}

// listTimeout bounds a server's listing: it is asked for at every turn.
const listTimeout = 30 * time.Second

// listTools lists the server's tools afresh (once a turn): a server that
// changes its list without notifying, or whose notification is still on
// its way, is seen as it is now.
func (s *session) listTools(ctx context.Context) ([]*mcp.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	var tools []*mcp.Tool
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		tools = append(tools, t)
		if len(tools) > maxToolsPerServer {
			break // a server paging on and on is cut here, and said so
		}
	}
	slices.SortFunc(tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return tools, nil
}

var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// A server's list is sent to the model at every turn: these bound what one
// server can make of it.
const (
	maxToolsPerServer   = 128
	maxSchemaBytes      = 32 << 10
	maxDescriptionBytes = 8 << 10
)

// toolOf is a server's tool under its job name, refused when the model's
// API could not carry its name or its schema is not an object schema.
func toolOf(srv Server, t *mcp.Tool) (Tool, error) {
	full := approval.MCPPrefix + srv.Name + "__" + t.Name
	if !toolName.MatchString(t.Name) || len(full) > 64 {
		return Tool{}, fmt.Errorf("server %q: tool %q left out: its name must be letters, digits, '_' and '-', and %s%s__NAME at most 64 characters", srv.Name, t.Name, approval.MCPPrefix, srv.Name)
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || t.InputSchema == nil {
		return Tool{}, fmt.Errorf("server %q: tool %q left out: no input schema", srv.Name, t.Name)
	}
	if len(schema) > maxSchemaBytes || len(t.Description) > maxDescriptionBytes {
		return Tool{}, fmt.Errorf("server %q: tool %q left out: its schema or description is over %d or %d bytes", srv.Name, t.Name, maxSchemaBytes, maxDescriptionBytes)
	}
	var obj struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(schema, &obj) != nil || obj.Type != "object" {
		return Tool{}, fmt.Errorf("server %q: tool %q left out: its input schema is not an object schema", srv.Name, t.Name)
	}
	// Without annotations a tool is taken as the spec's defaults have it:
	// not read-only, destructive.
	out := Tool{Server: srv.Name, Name: t.Name, FullName: full, Description: t.Description, InputSchema: schema,
		Trusted: srv.Trusted, Destructive: true, CallTimeout: srv.CallTimeout}
	if a := t.Annotations; a != nil {
		out.ReadOnly = a.ReadOnlyHint
		// The spec's default for a tool that is not read-only is destructive.
		out.Destructive = !a.ReadOnlyHint && (a.DestructiveHint == nil || *a.DestructiveHint)
	}
	if srv.WriteWorkspace {
		// Its calls may write the workspace whatever its hints say: never
		// read-only to layer 2, so plan mode refuses them and no call is
		// run twice.
		out.ReadOnly, out.Destructive = false, true
	}
	return out, nil
}

// Call calls one tool of one of the workspace's servers. A call that ctx
// ends (an interrupt, the job's end or cancellation) or that outlasts its
// server's callTimeout returns at once, whether or not the server ever
// answers: ErrCallStopped or ErrCallTimedOut, the server killed (with any
// other call it was serving) and started afresh for the next call.
func (p *Pool) Call(ctx context.Context, ws, server, tool string, args json.RawMessage, lim Limits) (*mcp.CallToolResult, error) {
	return p.CallFor(ctx, ws, "", server, tool, args, lim)
}

// CallFor is Call with, for job ("" for none), the servers its editor
// passed (editor.go).
func (p *Pool) CallFor(ctx context.Context, ws, job, server, tool string, args json.RawMessage, lim Limits) (*mcp.CallToolResult, error) {
	cfg, err := p.loadFor(ws, job)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(cfg.Servers, func(s Server) bool { return s.Name == server })
	if i < 0 {
		return nil, fmt.Errorf("MCP server %q is not configured for this workspace (any more)", server)
	}
	srv := cfg.Servers[i]
	if srv.WriteWorkspace {
		return p.callWriting(ctx, ws, srv, lim, tool, args)
	}
	s, err := p.session(ctx, ws, srv, lim)
	if err != nil {
		return nil, err
	}
	return p.callOn(ctx, ws, srv, s, tool, args)
}

// callOn is a call on the server's session s.
func (p *Pool) callOn(ctx context.Context, ws string, srv Server, s *session, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	server := srv.Name
	cctx, cancel := context.WithTimeout(ctx, srv.callTimeout())
	defer cancel()
	res, err := s.callTool(cctx, tool, args)
	if err != nil && cctx.Err() != nil {
		// The server may still be at it, or may never answer: it goes,
		// even while it serves other calls (reported interrupted). Left
		// running, it could still carry out the stopped call after the
		// model was told it was stopped, and the next call would find it
		// as hung; a fresh copy cannot take the next calls while this one
		// finishes the others, as a server's home has one writer (drop).
		p.drop(ws, srv.poolName(), s)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("MCP server %q, tool %q: %w (%v)", server, tool, ErrCallStopped, context.Cause(ctx))
		}
		return nil, &TimeoutError{Server: server, Tool: tool, After: srv.callTimeout()}
	}
	if err != nil {
		select {
		case <-s.dead:
			return nil, fmt.Errorf("%w: %v", ErrServerDied, err)
		case <-time.After(100 * time.Millisecond):
		}
		if errors.Is(err, mcp.ErrConnectionClosed) || s.proc != nil && isExited(s.proc) {
			return nil, fmt.Errorf("%w: %v", ErrServerDied, err)
		}
		return nil, fmt.Errorf("MCP server %q, tool %q: %w", server, tool, err)
	}
	return res, nil
}

// callTool is CallTool returning when ctx ends, whether the SDK's call
// returns then or not (an answer that never comes must not hold the call).
func (s *session) callTool(ctx context.Context, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		ch <- answer{res, err}
	}()
	select {
	case a := <-ch:
		return a.res, a.err
	case <-ctx.Done():
		select {
		case a := <-ch: // answered as it ended: the answer counts
			return a.res, a.err
		default:
			return nil, ctx.Err()
		}
	}
}

// drop takes s out of the pool, if it is still the server's session, and
// kills it in the background: the caller returns at once, and the server's
// next session starts once this one is dead (awaitDying).
//
// Waiting for the death is what keeps a server's home to one writer: the
// old copy may still be writing it (a server ignoring SIGTERM runs on
// until its SIGKILL; a stopped one is continued to handle its SIGTERM),
// and the new one's start empties its TMPDIR. So the death is made quick
// instead: the kill continues a stopped server at once (SIGCONT after the
// SIGTERM) and a server's grace is serverKillGrace, not a command's.
func (p *Pool) drop(ws, server string, s *session) {
	id := ws + "\x00" + server
	gone := make(chan struct{})
	p.mu.Lock()
	if cur, ok := p.sessions[id]; ok && cur == s {
		delete(p.sessions, id)
	}
	if p.dying == nil {
		p.dying = map[string]chan struct{}{}
	}
	p.dying[id] = gone
	s.dropped.Store(true)
	p.mu.Unlock()
	go func() {
		// The process and the proxy first: they end what the session waits
		// for (Close waits for calls in flight, which a hung server never
		// answers).
		if s.proc != nil {
			s.proc.Stop()
		}
		if s.proxy != nil {
			s.proxy.Close()
		}
		go s.close()
		close(gone)
		p.mu.Lock()
		if p.dying[id] == gone {
			delete(p.dying, id)
		}
		p.mu.Unlock()
	}()
}

// awaitDying waits until the server's session that drop is killing, if
// any, is dead: two copies of a server (and writers of its home) never
// run at once.
func (p *Pool) awaitDying(ctx context.Context, id string) error {
	p.mu.Lock()
	gone := p.dying[id]
	p.mu.Unlock()
	if gone == nil {
		return nil
	}
	select {
	case <-gone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func isExited(p *sandbox.Process) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

// session is the live session of a server, started if there is none, or
// if the one there died or was started from another entry or limits.
func (p *Pool) session(ctx context.Context, ws string, srv Server, lim Limits) (*session, error) {
	key := sessionKey(ws, srv, lim)
	if err := p.awaitDying(ctx, ws+"\x00"+srv.poolName()); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sessions == nil {
		p.sessions = map[string]*session{}
	}
	id := ws + "\x00" + srv.poolName()
	if s, ok := p.sessions[id]; ok {
		select {
		case <-s.dead:
		default:
			if s.key == key {
				return s, nil
			}
		}
		s.close()
		delete(p.sessions, id)
	}
	s, err := p.start(ctx, ws, srv, lim)
	if err != nil {
		return nil, err
	}
	s.key = key
	p.sessions[id] = s
	return s, nil
}

func sessionKey(ws string, srv Server, lim Limits) string {
	b, _ := json.Marshal([]any{ws, srv.Fingerprint(), srv.Trusted, lim})
	return string(b)
}

// Close stops every server.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, s := range p.sessions {
		s.close()
		delete(p.sessions, id)
	}
}

func (s *session) close() {
	if s.cs != nil {
		_ = s.cs.Close()
	}
	if s.proc != nil {
		s.proc.Stop()
	}
	if s.proxy != nil {
		s.proxy.Close()
	}
}

// start connects to a server: a stdio server in the sandbox, an HTTP
// server through an egress proxy of its own.
func (p *Pool) start(ctx context.Context, ws string, entry Server, lim Limits) (*session, error) {
	if entry.Type == "stdio" {
		entry = withHomeRefs(entry)
	}
	srv, err := entry.expanded()
	if err != nil {
		return nil, err
	}
	s := &session{dead: make(chan struct{})}
	var transport mcp.Transport
	switch srv.Type {
	case "stdio":
		if p.Sandbox == nil {
			return nil, errors.New("no sandbox on this worker: stdio servers run only inside it")
		}
		if s.proc, err = p.startStdio(ws, srv, lim); err != nil {
			return nil, err
		}
		transport = &mcp.IOTransport{Reader: s.proc.Stdout, Writer: s.proc.Stdin}
	case "http":
		transport, s.proxy, err = p.httpTransport(srv, lim)
		if err != nil {
			return nil, err
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "custos", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s.cs, err = client.Connect(cctx, transport, nil)
	if err != nil {
		why := err
		if s.proc != nil {
			if tail := strings.TrimSpace(s.proc.Stderr()); tail != "" {
				why = fmt.Errorf("%w; its stderr: %s", err, lastLines(tail, 5))
			}
		}
		s.close()
		return nil, fmt.Errorf("start: %w", why)
	}
	go func() {
		_ = s.cs.Wait()
		close(s.dead)
	}()
	if p.Logger != nil {
		p.Logger.Info("mcp: server started", "server", srv.Name, "type", srv.Type, "workspace", ws)
	}
	return s, nil
}

// httpTransport is the streamable HTTP transport to srv through an egress
// proxy that lets only the job's domains (and the entry's) through, with
// the entry's headers on every request.
func (p *Pool) httpTransport(srv Server, lim Limits) (mcp.Transport, *netproxy.Proxy, error) {
	u, err := url.Parse(srv.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, fmt.Errorf("url %q is not an http(s) URL", srv.URL)
	}
	pol := lim.Network.Join(netpolicy.Policy{AllowedDomains: srv.Domains})
	if !pol.Allows(strings.ToLower(u.Hostname())) {
		return nil, nil, fmt.Errorf("%s is not among the allowed domains (sandbox.network.allowedDomains, or the entry's \"domains\")", u.Hostname())
	}
	logger := p.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	px, err := netproxy.Start(logger, nil, pol, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	proxyURL := &url.URL{Scheme: "http", Host: px.Addr()}
	base := &http.Transport{Proxy: http.ProxyURL(proxyURL), ForceAttemptHTTP2: true}
	client := &http.Client{Transport: headerTransport{base: base, headers: srv.Headers, host: u.Host}}
	return &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: client}, px, nil
}

// headerTransport adds the entry's headers (its secrets, often) to the
// requests to the entry's own host, never to another one a redirect leads
// to.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	host    string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != h.host {
		return h.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
