package activities

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/custos-dev/custos/activities/api"
)

// defaultReadLimit is how many lines Read returns when the model gives no limit.
const defaultReadLimit = 2000

//go:embed read.md
var readDescription string

// readTool is Read as the model sees it: read.md describes it, and the
// schema names exactly the fields of readInput.
var readTool = toolDef{
	name:        api.ReadActivity,
	description: describe(readDescription),
	schema:      `{"type":"object","properties":{"file_path":{"type":"string","description":"Path of the file, relative to the workspace root"},"offset":{"type":"integer","minimum":1,"description":"1-based line number to start reading from"},"limit":{"type":"integer","minimum":1,"description":"Number of lines to read (default 2000)"}},"required":["file_path"],"additionalProperties":false}`,
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
	if err := decodeInput(req.Input, &in, "file_path"); err != nil {
		return errorResult("Read: %v", err), nil
	}
	offset, limit := 1, defaultReadLimit
	if in.Offset != nil {
		// 0 is accepted as "from the start": models often count from 0.
		if *in.Offset < 0 {
			return errorResult("Read: offset must be a line number >= 1, got %d", *in.Offset), nil
		}
		if *in.Offset > 0 {
			offset = *in.Offset
		}
	}
	if in.Limit != nil {
		if *in.Limit <= 0 {
			return errorResult("Read: limit must be a positive number of lines, got %d", *in.Limit), nil
		}
		limit = *in.Limit
	}

	tgt, err := resolveTarget(req.Workspace, in.FilePath, false)
	if err != nil {
		return errorResult("Read: %v", err), nil
	}
	defer tgt.Close()
	if msg := deniedTarget("Read", tgt, req.ReadDeny, true); msg != "" {
		return errorResult("%s", msg), nil
	}

	fi, err := tgt.root.Stat(tgt.rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errorResult("Read: %s does not exist", in.FilePath), nil
	case err != nil:
		return errorResult("Read: %v", err), nil
	case fi.IsDir():
		return errorResult("Read: %s is a directory, not a file; use Glob to list its files", in.FilePath), nil
	case !fi.Mode().IsRegular():
		return errorResult("Read: %s is not a regular file (%s)", in.FilePath, fi.Mode().Type()), nil
	}
	f, err := tgt.root.Open(tgt.rel)
	if err != nil {
		return errorResult("Read: %v", err), nil
	}
	defer f.Close()

	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(binarySniffLen)
	if looksBinary(head) {
		return errorResult("Read: %s looks like a binary file (%d bytes); Read shows text files only", in.FilePath, fi.Size()), nil
	}

	// Output is cut at whole lines, keeping room for the footer, so the
	// model gets complete numbered lines and an exact offset to continue.
	budget := maxOutput(req) - 200
	if budget < 0 {
		budget = 0
	}
	var out strings.Builder
	lineNo, lastShown, wanted := 0, 0, 0
	cut := false
	for {
		if lineNo%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return api.ToolResult{}, err
			}
		}
		line, dropped, err := readLine(br, maxLineRunes*4)
		if err != nil && !errors.Is(err, io.EOF) {
			return errorResult("Read: %s: %v", in.FilePath, err), nil
		}
		if errors.Is(err, io.EOF) && line == "" && dropped == 0 {
			break
		}
		lineNo++
		if lineNo >= offset && lineNo < offset+limit {
			if dropped > 0 {
				line += fmt.Sprintf("… [line truncated, %d more bytes]", dropped)
			}
			formatted := fmt.Sprintf("%6d\t%s\n", lineNo, truncateLine(line))
			wanted += len(formatted)
			if !cut && out.Len()+len(formatted) <= budget {
				out.WriteString(formatted)
				lastShown = lineNo
			} else {
				cut = true
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}

	switch {
	case lineNo == 0:
		return api.ToolResult{Output: fmt.Sprintf("(%s is empty)", in.FilePath)}, nil
	case offset > lineNo:
		return api.ToolResult{Output: fmt.Sprintf("(%s has %d lines; offset %d is past the end)", in.FilePath, lineNo, offset)}, nil
	}
	text := out.String()
	if cut {
		text += strings.TrimPrefix(truncMarker(out.Len(), wanted), "\n") + "\n"
	}
	if cut || offset > 1 || lastShown < lineNo {
		if lastShown < offset {
			// Not even one line fit (a tiny MaxOutput).
			text += fmt.Sprintf("[%s has %d lines; no line fit in the output budget]\n", in.FilePath, lineNo)
		} else {
			text += fmt.Sprintf("[showing lines %d-%d of %d", offset, lastShown, lineNo)
			if lastShown < lineNo {
				text += fmt.Sprintf("; continue with offset=%d", lastShown+1)
			}
			text += "]\n"
		}
	}
	return api.ToolResult{Output: text, Truncated: cut}, nil
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
				take = len(cutUTF8(string(chunk), keep-len(b)))
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
