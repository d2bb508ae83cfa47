package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Sync tells the server the file at path (absolute) holds text: opened the
// first time, changed (whole text) when it differs from what was sent.
// Servers answer about open documents from what they were sent, so every
// request syncs the file it is about first.
func (c *Client) Sync(path, text string) error {
	// Held until the notification is written: a request about the file
	// made after Sync returns must reach the server after its text.
	c.smu.Lock()
	defer c.smu.Unlock()
	if err := c.refresh(); err != nil {
		return err
	}
	uri := fileURI(path)
	c.mu.Lock()
	d := c.docs[uri]
	switch {
	case d == nil:
		d = &document{version: 1, text: text}
		c.docs[uri] = d
	case d.text == text:
		c.mu.Unlock()
		return nil
	default:
		d.version++
		d.text = text
	}
	d.seq = c.seq
	v := d.version
	c.mu.Unlock()
	if v == 1 {
		return c.notifyServer("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
			"uri": uri, "languageId": LanguageID(path), "version": v, "text": text}})
	}
	return c.notifyServer("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": v},
		"contentChanges": []map[string]string{{"text": text}}})
}

// refresh tells the server which files changed on disk since the last
// Sync (workspace/didChangeWatchedFiles), so it reads them again. An open
// document that changed is closed rather than read here: the server then
// reads it from its own view of the workspace (in the sandbox, masked),
// and the next request about it opens it again through the path guard.
// When the changes cannot be known (the kernel's queue overflowed), the
// server is killed: a new one reads everything afresh.
func (c *Client) refresh() error {
	if c.watch == nil {
		return nil
	}
	changed, err := c.watch.changes()
	if err != nil {
		c.Kill()
		return fmt.Errorf("%s: %w: %w", c.name, ErrServerExited, err)
	}
	if len(changed) == 0 {
		return nil
	}
	events := make([]map[string]any, 0, len(changed))
	var closed []string
	c.mu.Lock()
	for p, kind := range changed {
		uri := fileURI(p)
		if c.docs[uri] != nil {
			delete(c.docs, uri)
			closed = append(closed, uri)
		}
		events = append(events, map[string]any{"uri": uri, "type": kind})
	}
	c.mu.Unlock()
	for _, uri := range closed {
		if err := c.notifyServer("textDocument/didClose", map[string]any{"textDocument": map[string]string{"uri": uri}}); err != nil {
			return err
		}
	}
	return c.notifyServer("workspace/didChangeWatchedFiles", map[string]any{"changes": events})
}

// at is the parameters of a request about a position in path.
func at(path string, pos Position) map[string]any {
	return map[string]any{"textDocument": map[string]string{"uri": fileURI(path)}, "position": pos}
}

// Definition is where the symbol at pos in path is defined.
func (c *Client) Definition(ctx context.Context, path string, pos Position) ([]Location, error) {
	var raw json.RawMessage
	if err := c.call(ctx, "textDocument/definition", at(path, pos), &raw); err != nil {
		return nil, err
	}
	return decodeLocations(raw)
}

// References are the uses of the symbol at pos in path, its declaration
// included.
func (c *Client) References(ctx context.Context, path string, pos Position) ([]Location, error) {
	p := at(path, pos)
	p["context"] = map[string]bool{"includeDeclaration": true}
	var raw json.RawMessage
	if err := c.call(ctx, "textDocument/references", p, &raw); err != nil {
		return nil, err
	}
	return decodeLocations(raw)
}

// decodeLocations reads what definition and references answer: null, a
// Location, Locations or LocationLinks (whose target selection is the
// name, the place worth showing).
func decodeLocations(raw json.RawMessage) ([]Location, error) {
	type wire struct {
		URI                  string `json:"uri"`
		Range                *Range `json:"range"`
		TargetURI            string `json:"targetUri"`
		TargetSelectionRange *Range `json:"targetSelectionRange"`
	}
	var many []wire
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if strings.HasPrefix(strings.TrimSpace(string(raw)), "{") {
		var one wire
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, fmt.Errorf("decode location: %w", err)
		}
		many = []wire{one}
	} else if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf("decode locations: %w", err)
	}
	var out []Location
	for _, w := range many {
		uri, r := w.URI, w.Range
		if w.TargetURI != "" {
			uri, r = w.TargetURI, w.TargetSelectionRange
		}
		if r != nil {
			out = append(out, Location{Path: uriPath(uri), Range: *r})
		}
	}
	return out, nil
}

// Hover is the server's description of the symbol at pos, as text ("" when
// it has none).
func (c *Client) Hover(ctx context.Context, path string, pos Position) (string, error) {
	var res *struct {
		Contents json.RawMessage `json:"contents"`
	}
	if err := c.call(ctx, "textDocument/hover", at(path, pos), &res); err != nil {
		return "", err
	}
	if res == nil {
		return "", nil
	}
	return hoverText(res.Contents), nil
}

// hoverText flattens hover contents: MarkupContent, a MarkedString (a
// string or {language, value}) or a list of them.
func hoverText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	var obj struct {
		Value string `json:"value"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Value != "" {
		return strings.TrimSpace(obj.Value)
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return ""
	}
	parts := make([]string, 0, len(list))
	for _, item := range list {
		if t := hoverText(item); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n")
}

// Symbol is a declaration in a file: its name, kind, the range of the
// whole declaration and its depth in the file's outline.
type Symbol struct {
	Name, Detail, Kind string
	Path               string
	Range              Range // the declaration
	Name0              Position
	Depth              int
}

// Symbols is the outline of the file at path, in the server's order, each
// symbol followed by its children.
func (c *Client) Symbols(ctx context.Context, path string) ([]Symbol, error) {
	var raw []json.RawMessage
	p := map[string]any{"textDocument": map[string]string{"uri": fileURI(path)}}
	if err := c.call(ctx, "textDocument/documentSymbol", p, &raw); err != nil {
		return nil, err
	}
	var out []Symbol
	for _, r := range raw {
		out = appendSymbol(out, r, path, 0)
	}
	return out, nil
}

// appendSymbol adds one DocumentSymbol and its children, or one
// SymbolInformation (flat, with its own location).
func appendSymbol(out []Symbol, raw json.RawMessage, path string, depth int) []Symbol {
	var s struct {
		Name           string            `json:"name"`
		Detail         string            `json:"detail"`
		Kind           int               `json:"kind"`
		Range          *Range            `json:"range"`
		SelectionRange *Range            `json:"selectionRange"`
		Children       []json.RawMessage `json:"children"`
		Location       *struct {
			URI   string `json:"uri"`
			Range Range  `json:"range"`
		} `json:"location"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return out
	}
	sym := Symbol{Name: s.Name, Detail: s.Detail, Kind: symbolKind(s.Kind), Path: path, Depth: depth}
	switch {
	case s.Location != nil:
		sym.Path, sym.Range, sym.Name0 = uriPath(s.Location.URI), s.Location.Range, s.Location.Range.Start
	case s.Range != nil:
		sym.Range, sym.Name0 = *s.Range, s.Range.Start
		if s.SelectionRange != nil {
			sym.Name0 = s.SelectionRange.Start
		}
	default:
		return out
	}
	out = append(out, sym)
	for _, ch := range s.Children {
		out = appendSymbol(out, ch, path, depth+1)
	}
	return out
}

// symbolKinds name the protocol's SymbolKind numbers (1-based).
var symbolKinds = []string{"file", "module", "namespace", "package", "class", "method", "property",
	"field", "constructor", "enum", "interface", "function", "variable", "constant", "string",
	"number", "boolean", "array", "object", "key", "null", "enum member", "struct", "event",
	"operator", "type parameter"}

func symbolKind(k int) string {
	if k >= 1 && k <= len(symbolKinds) {
		return symbolKinds[k-1]
	}
	return "symbol"
}

// Diagnostic is one problem the server found in a file.
type Diagnostic struct {
	Range    Range  `json:"range"`
	Severity int    `json:"severity"`
	Source   string `json:"source"`
	Message  string `json:"message"`
}

// SeverityName is how a diagnostic's severity is shown.
func (d Diagnostic) SeverityName() string {
	switch d.Severity {
	case 1:
		return "error"
	case 2:
		return "warning"
	case 3:
		return "info"
	case 4:
		return "hint"
	}
	return "problem"
}

// LanguageID is the protocol's language identifier for a file.
func LanguageID(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".go":
		return "go"
	case ".ts", ".mts", ".cts":
		return "typescript"
	case ".tsx":
		return "typescriptreact"
	case ".js", ".mjs", ".cjs":
		return "javascript"
	case ".jsx":
		return "javascriptreact"
	case ".py", ".pyi":
		return "python"
	}
	return "plaintext"
}

// diagnosticQuiet is how long a pushed file's diagnostics must stay
// unchanged before they are taken as the answer: servers publish a
// file's problems in passes (syntax, then types).
const diagnosticQuiet = 300 * time.Millisecond
