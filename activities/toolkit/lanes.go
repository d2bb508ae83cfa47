package toolkit

import (
	"context"
	"fmt"
	"sync"

	"github.com/custos-dev/custos/sandbox/pathguard"
)

// WorkspaceLanes runs a writing MCP server's calls one at a time with the
// workspace's Bash commands in this worker (whose lanes already run those
// one at a time): the host guard judges a server's writes against a
// snapshot taken before its call, which a command applying its own writes
// meanwhile would blur, and neither applies its writes under the other.
var WorkspaceLanes = &LaneLocks{held: map[string]chan struct{}{}}

// LaneLocks are one lock per workspace.
type LaneLocks struct {
	mu   sync.Mutex
	held map[string]chan struct{}
}

// Acquire waits for workspace ws's lane (or ctx's end); release frees it.
func (l *LaneLocks) Acquire(ctx context.Context, ws string) (release func(), err error) {
	if c, err := pathguard.CanonicalWorkspace(ws); err == nil {
		ws = c
	}
	l.mu.Lock()
	ch := l.held[ws]
	if ch == nil {
		ch = make(chan struct{}, 1)
		l.held[ws] = ch
	}
	l.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the workspace's running command: %w", ctx.Err())
	}
}
