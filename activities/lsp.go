package activities

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/lsp"
	"github.com/custos-dev/custos/sandbox/pathguard"
)

//go:embed lsp.md
var lspDescription string

// lspTool is LSP as the model sees it: lsp.md describes it, and the schema
// names exactly the fields of lspInput.
var lspTool = toolkit.ToolDef{
	Name:        api.LSPActivity,
	Description: toolkit.Describe(lspDescription),
	Schema:      api.LSPSchema,
}

type lspInput struct {
	Operation string `json:"operation"`
	FilePath  string `json:"file_path"`
	Line      *int   `json:"line,omitempty"`
	Column    *int   `json:"column,omitempty"`
}

const (
	// maxLSPFile bounds a file sent to a server (and read to show a
	// result's line): larger ones are generated, not worth a server's time.
	maxLSPFile = 8 << 20
	// maxLSPResults bounds the locations or symbols one answer lists.
	maxLSPResults = 200
	// lspDiagnosticsWait is how long diagnostics wait for a server that
	// pushes them to finish checking the file.
	lspDiagnosticsWait = 20 * time.Second
)

// check refuses an operation the tool does not know and a position
// operation without its position.
func (in lspInput) check() error {
	switch in.Operation {
	case "definition", "references", "hover":
		if in.Line == nil || in.Column == nil {
			return fmt.Errorf("%s needs line and column (1-based, as Read shows them)", in.Operation)
		}
	case "symbols", "diagnostics":
		if in.Column != nil && in.Line == nil {
			return errors.New("column without line")
		}
	default:
		return fmt.Errorf("unknown operation %q (want definition, references, hover, symbols or diagnostics)", in.Operation)
	}
	if (in.Line != nil && *in.Line < 1) || (in.Column != nil && *in.Column < 1) {
		return errors.New("line and column are 1-based: they start at 1")
	}
	return nil
}

// LSP asks the workspace's language server about a file or a position in
// it. The file passes the path guard and the Read deny rules as Read's
// does; every location the server answers with is shown only if Read
// could show it (view), the rest counted as withheld.
func (t *Tools) LSP(ctx context.Context, req api.ToolRequest) (api.ToolResult, error) {
	var in lspInput
	if err := toolkit.DecodeInput(req.Input, &in, "operation", "file_path"); err != nil {
		return toolkit.ErrorResult("LSP: %v", err), nil
	}
	if err := in.check(); err != nil {
		return toolkit.ErrorResult("LSP: %v", err), nil
	}
	tgt, err := toolkit.ResolveTarget(req.Workspace, in.FilePath, false)
	if err != nil {
		return toolkit.ErrorResult("LSP: %v", err), nil
	}
	defer tgt.Close()
	// One Hider for the file asked about and every result shown.
	hide, err := toolkit.NewHider(tgt.WS, req.ReadDeny)
	if err != nil {
		return toolkit.ErrorResult("LSP: %v", err), nil
	}
	if msg := toolkit.HiddenTarget("LSP", tgt, hide); msg != "" {
		return toolkit.ErrorResult("%s", msg), nil
	}
	text, err := readSource(tgt, in.FilePath)
	if err != nil {
		return toolkit.ErrorResult("LSP: %v", err), nil
	}
	c, msg, err := t.ready(ctx, req, tgt, text)
	if err != nil {
		return lspFailure(ctx, err)
	}
	if c == nil {
		if ctx.Err() != nil {
			return api.ToolResult{}, ctx.Err()
		}
		return toolkit.ErrorResult("LSP: %s", msg), nil
	}
	v := newView(tgt, text, hide)
	out, err := in.run(ctx, c, tgt, text, v)
	if err != nil {
		return lspFailure(ctx, err)
	}
	out += v.note()
	shown, cut := toolkit.CapHead(out, toolkit.MaxOutput(req))
	return api.ToolResult{Output: shown, Truncated: cut}, nil
}

// lspClient is the warm server for the file's language, or why there is
// none.
func (t *Tools) lspClient(ctx context.Context, req api.ToolRequest, tgt *toolkit.Target) (*lsp.Client, string) {
	if t.LSPServers == nil {
		return nil, "this worker runs no language servers"
	}
	lang := lsp.Language(tgt.Abs)
	if lang == "" {
		return nil, fmt.Sprintf("no language server knows %s files (Go, TypeScript/JavaScript and Python have one)", filepath.Ext(tgt.Abs))
	}
	argv, ok := lsp.Command(req.LSP, lang)
	if !ok {
		return nil, fmt.Sprintf("no %s language server is installed on this worker, and the settings' \"lsp\" names none", lang)
	}
	c, err := t.LSPServers.Client(ctx, lsp.Spec{Argv: argv, Workspace: tgt.WS, ReadDeny: req.ReadDeny})
	if err != nil {
		return nil, fmt.Sprintf("starting the %s language server (%s): %v", lang, argv[0], err)
	}
	return c, ""
}

// ready is the server for the file, told its text and what changed in the
// workspace since its last answer; or why there is none. A server found
// dead here (it died since, or was stopped because it could not be told
// what changed) is started again, once: the call has not been asked yet.
func (t *Tools) ready(ctx context.Context, req api.ToolRequest, tgt *toolkit.Target, text string) (*lsp.Client, string, error) {
	for attempt := 0; ; attempt++ {
		c, msg := t.lspClient(ctx, req, tgt)
		if c == nil {
			return nil, msg, nil
		}
		err := c.Sync(tgt.Abs, text)
		if err == nil {
			return c, "", nil
		}
		if !errors.Is(err, lsp.ErrServerExited) || attempt > 0 {
			return nil, "", err
		}
	}
}

// lspFailure is a server's failure as the model sees it; a cancelled
// activity fails as the activity.
func lspFailure(ctx context.Context, err error) (api.ToolResult, error) {
	if ctx.Err() != nil {
		return api.ToolResult{}, ctx.Err()
	}
	if errors.Is(err, lsp.ErrServerExited) {
		return toolkit.ErrorResult("LSP: the language server stopped while answering (%v); ask again: a new one is started", err), nil
	}
	return toolkit.ErrorResult("LSP: %v", err), nil
}

// readSource is the file's text, refused as Read refuses it (not a regular
// text file) or when too large to send. Read whole at its size, or kept
// from an earlier call while the file is unchanged (lspTexts).
func readSource(tgt *toolkit.Target, name string) (string, error) {
	fi, err := toolkit.RegularFile(tgt, name)
	if err != nil {
		return "", err
	}
	tooLarge := fmt.Errorf("%s is larger than %d MiB; LSP answers about source files", name, maxLSPFile>>20)
	if fi.Size() > maxLSPFile {
		return "", tooLarge
	}
	text, err := lspTexts.read(tgt.Root, tgt.Rel, fi, func(b []byte) error {
		if len(b) > maxLSPFile {
			return tooLarge
		}
		if toolkit.LooksBinary(b[:min(len(b), toolkit.BinarySniffLen)]) {
			return fmt.Errorf("%s looks like a binary file (%d bytes); LSP answers about source files", name, len(b))
		}
		return nil
	})
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return "", fmt.Errorf("%s: %w", name, err) // the read's, not the checks'
	}
	return text, err
}

// run asks the server and renders its answer.
func (in lspInput) run(ctx context.Context, c *lsp.Client, tgt *toolkit.Target, text string, v *view) (string, error) {
	var pos lsp.Position
	if in.Line != nil {
		col := 1
		if in.Column != nil {
			col = *in.Column
		}
		p, ok := lsp.Convert(text, *in.Line, col)
		if !ok {
			return fmt.Sprintf("%s has no line %d", in.FilePath, *in.Line), nil
		}
		pos = p
	}
	switch in.Operation {
	case "definition":
		locs, err := c.Definition(ctx, tgt.Abs, pos)
		return v.locations(locs, "no definition found at "+in.where()), err
	case "references":
		locs, err := c.References(ctx, tgt.Abs, pos)
		return v.locations(locs, "no references found at "+in.where()), err
	case "hover":
		return v.hover(ctx, c, tgt.Abs, pos, in.where())
	case "symbols":
		syms, err := c.Symbols(ctx, tgt.Abs)
		return v.symbols(syms, in.Line), err
	}
	diags, complete, err := c.Diagnostics(ctx, tgt.Abs, lspDiagnosticsWait)
	return v.diagnostics(tgt.Show, diags, complete), err
}

// where is the position asked about, as the model wrote it.
func (in lspInput) where() string {
	return fmt.Sprintf("%s:%d:%d", in.FilePath, *in.Line, *in.Column)
}

// readText is a file's text for showing results' lines ("" when it cannot
// be read or is too large: the location is still shown, without its line).
func readText(root *pathguard.Root, rel string) string {
	fi, err := root.Stat(rel)
	if err != nil {
		return ""
	}
	return textOf(root, rel, fi)
}

// textOf is readText of the file whose Stat was fi.
func textOf(root *pathguard.Root, rel string, fi fs.FileInfo) string {
	if !fi.Mode().IsRegular() || fi.Size() > maxLSPFile {
		return ""
	}
	text, err := lspTexts.read(root, rel, fi, func(b []byte) error {
		if len(b) > maxLSPFile {
			return errors.New("too large")
		}
		return nil
	})
	if err != nil {
		return ""
	}
	return text
}

// nthLine is line n (0-based) of text without its line ending, "" past
// the end.
func nthLine(text string, n int) string {
	for ; n > 0; n-- {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			return ""
		}
		text = text[i+1:]
	}
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	return strings.TrimSuffix(text, "\r")
}
