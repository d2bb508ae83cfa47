package lsp

import (
	"context"
	"encoding/json"
	"fmt"
)

// initOptions are the initialization options a server is given, by the
// name of its command. gopls reports progress for its diagnosis of the
// whole workspace only when asked for verbose progress; without it, the
// end of its "Setting up workspace" comes before that diagnosis, the
// heavy part of its start, and Loaded would return while it still runs.
var initOptions = map[string]any{
	"gopls": map[string]bool{"verboseWorkDoneProgress": true},
}

// workProgress is the server's work-done progress ($/progress): the work
// in flight by token, and how many have begun. Guarded by Client.mu.
type workProgress struct {
	titles  map[string]string // token → title, while in flight
	begun   int
	changed chan struct{} // closed and replaced on every begin and end
}

// progress records one $/progress notification.
func (c *Client) progress(params json.RawMessage) {
	var p struct {
		Token json.RawMessage `json:"token"`
		Value struct {
			Kind  string `json:"kind"`
			Title string `json:"title"`
		} `json:"value"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.Token) == 0 {
		return
	}
	token := string(p.Token)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch p.Value.Kind {
	case "begin":
		c.work.titles[token] = p.Value.Title
		c.work.begun++
	case "end":
		delete(c.work.titles, token)
	default:
		return
	}
	close(c.work.changed)
	c.work.changed = make(chan struct{})
}

// Loaded waits until the server has loaded the workspace, as an editor
// waits before it trusts the server's speed: it has reported work (gopls:
// loading the packages and diagnosing the whole workspace, which it
// begins first and ends last) and none of it is still in flight. A
// server that reports no progress is never loaded: ctx bounds the wait.
func (c *Client) Loaded(ctx context.Context) error {
	for {
		c.mu.Lock()
		done, changed := c.work.begun > 0 && len(c.work.titles) == 0, c.work.changed
		c.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-changed:
		case <-c.dead:
			return c.deadErr
		case <-ctx.Done():
			c.mu.Lock()
			defer c.mu.Unlock()
			return fmt.Errorf("%s: wait for the workspace to load (%d begun, in flight: %v): %w", c.name, c.work.begun, c.work.titles, ctx.Err())
		}
	}
}
