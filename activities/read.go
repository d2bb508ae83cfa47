package activities

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
)

// defaultReadLimit is how many lines Read returns when the model gives no limit.
const defaultReadLimit = 2000

//go:embed read.md
var readDescription string

// readTool is Read as the model sees it: read.md describes it, and the
// schema names exactly the fields of readInput.
var readTool = toolkit.ToolDef{
	Name:        api.ReadActivity,
	Description: toolkit.Describe(readDescription),
	Schema:      api.ReadSchema,
}

type readInput struct {
	FilePath string `json:"file_path"`
	Offset   *int   `json:"offset,omitempty"`
	Limit    *int   `json:"limit,omitempty"`
}

// Read returns a text file's lines numbered like `cat -n`, from offset
// (1-based) for limit lines.
func (t *Tools) Read(ctx context.Context, req api.ToolRequest) (api.ToolResult, error) {
	var in readInput
	if err := toolkit.DecodeInput(req.Input, &in, "file_path"); err != nil {
		return toolkit.ErrorResult("Read: %v", err), nil
	}
	w, err := in.window()
	if err != nil {
		return toolkit.ErrorResult("Read: %v", err), nil
	}
	tgt, err := toolkit.ResolveTarget(req.Workspace, in.FilePath, false)
	if err != nil {
		return toolkit.ErrorResult("Read: %v", err), nil
	}
	defer tgt.Close()
	if msg := toolkit.DeniedTarget("Read", tgt, req.ReadDeny, true); msg != "" {
		return toolkit.ErrorResult("%s", msg), nil
	}
	f, br, err := openText(tgt, in.FilePath)
	if err != nil {
		return toolkit.ErrorResult("Read: %v", err), nil
	}
	defer f.Close()
	// The budget keeps room for the footer.
	page, err := readPage(ctx, br, w, max(toolkit.MaxOutput(req)-200, 0))
	if err != nil {
		if errors.Is(err, ctx.Err()) {
			return api.ToolResult{}, err // cancelled: the activity's failure, not the model's
		}
		return toolkit.ErrorResult("Read: %s: %v", in.FilePath, err), nil
	}
	return page.result(in.FilePath), nil
}

// readWindow is the lines Read shows: limit lines from line offset (1-based).
type readWindow struct {
	offset, limit int
}

// window checks offset and limit, and fills in their defaults.
func (in readInput) window() (readWindow, error) {
	w := readWindow{offset: 1, limit: defaultReadLimit}
	if in.Offset != nil {
		// 0 is accepted as "from the start": models often count from 0.
		if *in.Offset < 0 {
			return w, fmt.Errorf("offset must be a line number >= 1, got %d", *in.Offset)
		}
		if *in.Offset > 0 {
			w.offset = *in.Offset
		}
	}
	if in.Limit != nil {
		if *in.Limit <= 0 {
			return w, fmt.Errorf("limit must be a positive number of lines, got %d", *in.Limit)
		}
		w.limit = *in.Limit
	}
	return w, nil
}

// openText opens the file Read shows, refusing what is not a regular text
// file; name is the path the model gave.
func openText(tgt *toolkit.Target, name string) (*os.File, *bufio.Reader, error) {
	fi, err := toolkit.RegularFile(tgt, name)
	if err != nil {
		return nil, nil, err
	}
	f, err := tgt.Root.Open(tgt.Rel)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(toolkit.BinarySniffLen)
	if toolkit.LooksBinary(head) {
		_ = f.Close()
		return nil, nil, fmt.Errorf("%s looks like a binary file (%d bytes); Read shows text files only", name, fi.Size())
	}
	return f, br, nil
}

// filePage is what Read takes from a file: the window's lines, numbered, as
// many as fit the budget, and where they stand in the file.
type filePage struct {
	readWindow
	budget    int
	out       strings.Builder
	lines     int  // lines read so far; in the end, the file's
	lastShown int  // the last line in out
	wanted    int  // the bytes of the window's lines, shown or not
	cut       bool // a line of the window did not fit
}

// readPage reads the file to its end, keeping the window's lines within
// budget bytes. Output is cut at whole lines, so the model gets complete
// numbered lines and an exact offset to continue. The error is the
// context's when it ended, else the read's.
func readPage(ctx context.Context, br *bufio.Reader, w readWindow, budget int) (*filePage, error) {
	p := &filePage{readWindow: w, budget: budget}
	for {
		if p.lines%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		line, dropped, err := readLine(br, toolkit.MaxLineRunes*4)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if errors.Is(err, io.EOF) && line == "" && dropped == 0 {
			return p, nil
		}
		p.lines++
		if p.lines >= w.offset && p.lines < w.offset+w.limit {
			p.add(line, dropped)
		}
		if errors.Is(err, io.EOF) {
			return p, nil
		}
	}
}

// add numbers the line just read, of which dropped bytes were not kept, and
// keeps it if it and the lines before it fit the budget.
func (p *filePage) add(line string, dropped int) {
	if dropped > 0 {
		line += fmt.Sprintf("… [line truncated, %d more bytes]", dropped)
	}
	formatted := fmt.Sprintf("%6d\t%s\n", p.lines, toolkit.TruncateLine(line))
	p.wanted += len(formatted)
	if !p.cut && p.out.Len()+len(formatted) <= p.budget {
		p.out.WriteString(formatted)
		p.lastShown = p.lines
	} else {
		p.cut = true
	}
}

// result is Read's answer for the file the model named name: the lines,
// then, unless they are the whole file, a footer saying which they are and
// where to continue.
func (p *filePage) result(name string) api.ToolResult {
	switch {
	case p.lines == 0:
		return api.ToolResult{Output: fmt.Sprintf("(%s is empty)", name)}
	case p.offset > p.lines:
		return api.ToolResult{Output: fmt.Sprintf("(%s has %d lines; offset %d is past the end)", name, p.lines, p.offset)}
	}
	text := p.out.String()
	if p.cut {
		text += strings.TrimPrefix(toolkit.TruncMarker(p.out.Len(), p.wanted), "\n") + "\n"
	}
	if p.cut || p.offset > 1 || p.lastShown < p.lines {
		if p.lastShown < p.offset {
			// Not even one line fit (a tiny MaxOutput).
			text += fmt.Sprintf("[%s has %d lines; no line fit in the output budget]\n", name, p.lines)
		} else {
			text += fmt.Sprintf("[showing lines %d-%d of %d", p.offset, p.lastShown, p.lines)
			if p.lastShown < p.lines {
				text += fmt.Sprintf("; continue with offset=%d", p.lastShown+1)
			}
			text += "]\n"
		}
	}
	return api.ToolResult{Output: text, Truncated: p.cut}
}

// readLine reads one line without its "\n", keeping at most keep bytes of it
// (cut on a rune boundary) and reporting how many more bytes were dropped,
// so a gigabyte-long line costs no more memory than a short one.
func readLine(br *bufio.Reader, keep int) (line string, dropped int, err error) {
	var b []byte
	for {
		chunk, e := br.ReadSlice('\n')
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			chunk = chunk[:len(chunk)-1]
		}
		if dropped == 0 && len(b)+len(chunk) <= keep {
			b = append(b, chunk...)
		} else {
			// Once anything is dropped, everything after it is dropped too,
			// so the kept part is a true prefix; cut it on a rune boundary.
			take := 0
			if dropped == 0 {
				take = len(toolkit.CutUTF8(string(chunk), keep-len(b)))
				b = append(b, chunk[:take]...)
			}
			dropped += len(chunk) - take
		}
		if errors.Is(e, bufio.ErrBufferFull) {
			continue
		}
		return string(b), dropped, e
	}
}
