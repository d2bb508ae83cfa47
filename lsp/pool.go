package lsp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// ErrClosed is returned by a pool that was closed (the worker stops).
var ErrClosed = errors.New("language server pool closed")

// Pool keeps one language server per workspace and command, started on
// first use and kept warm for the requests after it; a server that died
// is started again by the next request, and one nobody asked for a while
// is shut down (a gopls holds a gigabyte or more for a large module).
type Pool struct {
	start Starter
	// Idle is how long a server is kept without a request (DefaultIdle
	// when 0); set it before the first Client.
	Idle time.Duration

	mu      sync.Mutex
	servers map[poolKey]*entry
	closed  bool
}

// poolKey tells servers apart: a job with other deny rules gets its own,
// which is not shown what those rules hide.
type poolKey struct{ workspace, argv, deny string }

// entry is one server, or its start in progress (ready not yet closed).
type entry struct {
	ready  chan struct{}
	client *Client
	err    error
	// idle shuts the server down once it has not been asked for Idle;
	// every Client of it starts the wait again. Guarded by Pool.mu.
	idle *time.Timer
}

// DefaultIdle is how long a server is kept warm without a request.
const DefaultIdle = 30 * time.Minute

// NewPool returns a pool that starts servers with start.
func NewPool(start Starter) *Pool {
	return &Pool{start: start, servers: map[poolKey]*entry{}}
}

// Client is the running server s: the warm one, or a new one when there
// is none or it died. Concurrent callers share one start. A failed start
// is not remembered: the next call tries again.
func (p *Pool) Client(ctx context.Context, s Spec) (*Client, error) {
	if len(s.Argv) == 0 {
		return nil, errors.New("no language server command")
	}
	key := poolKey{s.Workspace, strings.Join(s.Argv, "\x00"), strings.Join(s.ReadDeny, "\x00")}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		e := p.servers[key]
		if e == nil {
			e = &entry{ready: make(chan struct{})}
			p.servers[key] = e
			p.mu.Unlock()
			go p.launch(ctx, key, e, s)
		} else {
			p.mu.Unlock()
		}
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("start %s: %w", s.Argv[0], ctx.Err())
		}
		if e.err != nil {
			return nil, e.err
		}
		if e.client.Alive() {
			p.touch(key, e)
			return e.client, nil
		}
		// Dead since: forget it (unless another caller already has)
		// and start a new one.
		p.mu.Lock()
		if p.servers[key] == e {
			delete(p.servers, key)
		}
		p.mu.Unlock()
	}
}

// launch starts the server of entry e, apart from the caller that asked:
// other callers may wait for the same start, and a caller that gives up
// leaves a warm server for the next.
func (p *Pool) launch(ctx context.Context, key poolKey, e *entry, s Spec) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	e.client, e.err = Start(sctx, p.start, s)
	if e.err != nil {
		p.mu.Lock()
		delete(p.servers, key)
		p.mu.Unlock()
	}
	close(e.ready)
}

// touch starts e's idle wait again.
func (p *Pool) touch(key poolKey, e *entry) {
	idle := p.Idle
	if idle <= 0 {
		idle = DefaultIdle
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.idle != nil {
		e.idle.Reset(idle)
		return
	}
	e.idle = time.AfterFunc(idle, func() { p.evict(key, e) })
}

// evict shuts e's server down when its idle wait ran out, unless it was
// replaced or the pool closed meanwhile (Close shuts it then).
func (p *Pool) evict(key poolKey, e *entry) {
	p.mu.Lock()
	if p.servers[key] != e {
		p.mu.Unlock()
		return
	}
	delete(p.servers, key)
	p.mu.Unlock()
	e.client.Close(closeGrace)
}

// startTimeout bounds a server's start and handshake; closeGrace how long
// a server has to exit after shutdown before it is killed.
const (
	startTimeout = 2 * time.Minute
	closeGrace   = 5 * time.Second
)

// Close shuts every server down, in parallel, and refuses new requests.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	var live []*entry
	for _, e := range p.servers {
		if e.idle != nil {
			e.idle.Stop()
		}
		live = append(live, e)
	}
	p.servers = map[poolKey]*entry{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range live {
		wg.Go(func() {
			<-e.ready
			if e.client != nil {
				e.client.Close(closeGrace)
			}
		})
	}
	wg.Wait()
}
