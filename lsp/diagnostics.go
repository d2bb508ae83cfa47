package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Diagnostics are the problems the server finds in the file at path, which
// must have been synced. A server that answers pull requests
// (textDocument/diagnostic) is asked; otherwise the client waits, up to
// wait, for the server to publish the file's diagnostics for its current
// text and for them to settle. complete is false when wait ran out first:
// what was published by then is returned.
func (c *Client) Diagnostics(ctx context.Context, path string, wait time.Duration) (items []Diagnostic, complete bool, err error) {
	c.mu.Lock()
	pull := len(c.caps.DiagnosticProvider) > 0 && string(c.caps.DiagnosticProvider) != "null"
	c.mu.Unlock()
	if pull {
		var res struct {
			Kind  string       `json:"kind"`
			Items []Diagnostic `json:"items"`
		}
		p := map[string]any{"textDocument": map[string]string{"uri": fileURI(path)}}
		if err := c.call(ctx, "textDocument/diagnostic", p, &res); err != nil {
			return nil, false, err
		}
		return res.Items, true, nil
	}
	return c.published(ctx, path, wait)
}

// publish records a textDocument/publishDiagnostics notification and wakes
// whoever waits for one.
func (c *Client) publish(params json.RawMessage) {
	var p struct {
		URI         string       `json:"uri"`
		Version     *int         `json:"version"`
		Diagnostics []Diagnostic `json:"diagnostics"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.diags[p.URI] = &diagnostic{version: p.Version, items: p.Diagnostics, seq: c.seq, at: time.Now()}
	close(c.notify)
	c.notify = make(chan struct{})
}

// published waits for the pushed diagnostics of path's current text: a
// publish for its current version (or, from a server that sends no
// versions, one after the last sync), unchanged for diagnosticQuiet.
func (c *Client) published(ctx context.Context, path string, wait time.Duration) ([]Diagnostic, bool, error) {
	uri := fileURI(path)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		d, doc, notify := c.diags[uri], c.docs[uri], c.notify
		c.mu.Unlock()
		if doc == nil {
			return nil, false, fmt.Errorf("diagnostics: %s was not opened", path)
		}
		current := d != nil && ((d.version != nil && *d.version == doc.version) || (d.version == nil && d.seq > doc.seq))
		settle := diagnosticQuiet
		if current {
			settle -= time.Since(d.at)
			if settle <= 0 {
				return d.items, true, nil
			}
		}
		quiet := time.NewTimer(settle)
		select {
		case <-notify:
		case <-quiet.C:
		case <-deadline.C:
			quiet.Stop()
			if d != nil {
				return d.items, false, nil
			}
			return nil, false, nil
		case <-c.dead:
			quiet.Stop()
			return nil, false, c.deadErr
		case <-ctx.Done():
			quiet.Stop()
			return nil, false, fmt.Errorf("diagnostics: %w", ctx.Err())
		}
		quiet.Stop()
	}
}
