package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// ErrServerExited is wrapped by the error of every request a server did
// not answer because it died first.
var ErrServerExited = errors.New("language server exited")

// Client is one initialized language server: requests are safe to make
// from several goroutines at once.
type Client struct {
	name  string // argv[0], for errors
	root  string // the workspace, absolute
	proc  *Process
	watch *fileWatch // what changed in the workspace since the last Sync

	wmu sync.Mutex // one message written at a time
	smu sync.Mutex // one Sync at a time

	mu      sync.Mutex
	next    int64
	pending map[int64]chan *message
	docs    map[string]*document   // open documents by URI
	diags   map[string]*diagnostic // last published diagnostics by URI
	notify  chan struct{}          // closed and replaced on every publish
	seq     int64                  // publishes so far
	caps    capabilities
	work    workProgress // the server's work-done progress

	dead    chan struct{} // closed when the reader stops
	deadErr error
}

// document is a file the server was told about, as it was sent.
type document struct {
	version int
	text    string
	seq     int64 // publishes before it was last sent
}

// diagnostic is a file's last publishDiagnostics and when it came (seq).
type diagnostic struct {
	version *int
	items   []Diagnostic
	seq     int64
	at      time.Time
}

// capabilities are the parts of the server's capabilities the client uses.
type capabilities struct {
	DiagnosticProvider json.RawMessage `json:"diagnosticProvider"`
}

// Start starts the server s with start, runs the LSP handshake for its
// workspace and returns the client. ctx bounds the start and the
// handshake only.
func Start(ctx context.Context, start Starter, s Spec) (*Client, error) {
	if len(s.Argv) == 0 {
		return nil, errors.New("no language server command")
	}
	// Watched before the server reads anything: no change between its
	// load and the watch's start goes unseen.
	watch, err := newFileWatch(s.Workspace)
	if err != nil {
		return nil, err
	}
	proc, err := start(ctx, s)
	if err != nil {
		watch.close()
		return nil, err
	}
	c := &Client{name: filepath.Base(s.Argv[0]), root: s.Workspace, proc: proc, watch: watch, pending: map[int64]chan *message{},
		docs: map[string]*document{}, diags: map[string]*diagnostic{}, notify: make(chan struct{}),
		work: workProgress{titles: map[string]string{}, changed: make(chan struct{})}, dead: make(chan struct{})}
	go c.read()
	if err := c.initialize(ctx); err != nil {
		c.Kill()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return c, nil
}

// initialize is the handshake: the client offers plain-text-friendly
// capabilities (UTF-16 positions, hierarchical symbols, pull diagnostics)
// and records which the server has.
func (c *Client) initialize(ctx context.Context) error {
	uri := fileURI(c.root)
	params := map[string]any{
		"processId":        nil,
		"rootUri":          uri,
		"workspaceFolders": []map[string]string{{"uri": uri, "name": "workspace"}},
		"capabilities": map[string]any{
			"general": map[string]any{"positionEncodings": []string{"utf-16"}},
			// Progress lets Loaded know when the workspace is loaded.
			"window": map[string]any{"workDoneProgress": true},
			"textDocument": map[string]any{
				"hover":              map[string]any{"contentFormat": []string{"plaintext", "markdown"}},
				"documentSymbol":     map[string]any{"hierarchicalDocumentSymbolSupport": true},
				"publishDiagnostics": map[string]any{"versionSupport": true},
				"diagnostic":         map[string]any{},
				"synchronization":    map[string]any{"didSave": false},
			},
			"workspace": map[string]any{"configuration": true, "workspaceFolders": true,
				"didChangeWatchedFiles": map[string]bool{"dynamicRegistration": true}},
		},
	}
	if opts, ok := initOptions[c.name]; ok {
		params["initializationOptions"] = opts
	}
	var res struct {
		Capabilities capabilities `json:"capabilities"`
	}
	if err := c.call(ctx, "initialize", params, &res); err != nil {
		return err
	}
	c.mu.Lock()
	c.caps = res.Capabilities
	c.mu.Unlock()
	return c.notifyServer("initialized", map[string]any{})
}

// Alive reports whether the server still runs (its output is open).
func (c *Client) Alive() bool {
	select {
	case <-c.dead:
		return false
	default:
		return true
	}
}

// Kill ends the server at once; requests in flight fail.
func (c *Client) Kill() { c.proc.Kill() }

// Close asks the server to shut down and exit, and kills it if it has not
// within grace.
func (c *Client) Close(grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if c.Alive() && c.call(ctx, "shutdown", nil, nil) == nil {
		_ = c.notifyServer("exit", nil)
	}
	select {
	case <-c.dead:
	case <-ctx.Done():
	}
	c.proc.Kill()
	_ = c.proc.Stdin.Close()
}

// call sends a request and decodes its result into out (nil: ignore it).
// A server that dies first fails it with ErrServerExited; ctx's end
// cancels it ($/cancelRequest) and returns ctx's error.
func (c *Client) call(ctx context.Context, method string, params, out any) error {
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan *message, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() { c.mu.Lock(); delete(c.pending, id); c.mu.Unlock() }()
	req := message{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatInt(id, 10)), Method: method, Params: mustJSON(params)}
	if err := c.write(req); err != nil {
		return err
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("%s: %s: %w", c.name, method, m.Error)
		}
		if out == nil || len(m.Result) == 0 {
			return nil
		}
		if err := json.Unmarshal(m.Result, out); err != nil {
			return fmt.Errorf("%s: %s: decode result: %w", c.name, method, err)
		}
		return nil
	case <-c.dead:
		return c.deadErr
	case <-ctx.Done():
		_ = c.notifyServer("$/cancelRequest", map[string]int64{"id": id})
		return fmt.Errorf("%s: %s: %w", c.name, method, ctx.Err())
	}
}

// notifyServer sends a notification.
func (c *Client) notifyServer(method string, params any) error {
	return c.write(message{JSONRPC: "2.0", Method: method, Params: mustJSON(params)})
}

// write sends one message; after the server died, it fails with why.
func (c *Client) write(m message) error {
	if !c.Alive() {
		return c.deadErr
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := writeMessage(c.proc.Stdin, m); err != nil {
		return fmt.Errorf("%s: %w: %w", c.name, ErrServerExited, err)
	}
	return nil
}

// mustJSON encodes params, which are always the client's own plain
// values; nil stays absent.
func mustJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("lsp: encode params: %v", err))
	}
	return b
}

// read is the one reader of the server's output: responses go to their
// callers, diagnostics are kept, the server's own requests are answered.
// When the output ends, the server is dead: every caller waiting is told.
func (c *Client) read() {
	br := bufio.NewReaderSize(c.proc.Stdout, 64<<10)
	var err error
	for {
		var m *message
		if m, err = readMessage(br); err != nil {
			break
		}
		c.dispatch(m)
	}
	c.proc.Kill()
	werr := c.proc.Wait()
	c.deadErr = fmt.Errorf("%s: %w (%v; wait: %v)", c.name, ErrServerExited, err, werr)
	close(c.dead)
	c.smu.Lock() // not while a Sync reads the watch
	c.watch.close()
	c.watch = nil
	c.smu.Unlock()
}

// dispatch handles one message from the server.
func (c *Client) dispatch(m *message) {
	switch {
	case m.Method == "" && len(m.ID) > 0:
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		if err != nil {
			return
		}
		c.mu.Lock()
		ch := c.pending[id]
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	case m.Method == "textDocument/publishDiagnostics":
		c.publish(m.Params)
	case m.Method == "$/progress":
		c.progress(m.Params)
	case len(m.ID) > 0:
		go c.answer(m) // not on the reader: a write may block on a full pipe
	}
}

// answer replies to a request from the server. The client has no
// configuration to give and accepts every registration and progress
// token; anything else is "method not found", which servers tolerate.
func (c *Client) answer(m *message) {
	reply := message{JSONRPC: "2.0", ID: m.ID}
	switch m.Method {
	case "workspace/configuration":
		var p struct {
			Items []json.RawMessage `json:"items"`
		}
		_ = json.Unmarshal(m.Params, &p)
		reply.Result = mustJSON(make([]any, len(p.Items)))
	case "client/registerCapability", "client/unregisterCapability", "window/workDoneProgress/create":
		reply.Result = json.RawMessage("null")
	case "workspace/workspaceFolders":
		reply.Result = mustJSON([]map[string]string{{"uri": fileURI(c.root), "name": "workspace"}})
	default:
		reply.Error = &rpcError{Code: -32601, Message: "method not found: " + m.Method}
	}
	_ = c.write(reply)
}
