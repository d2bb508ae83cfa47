// Package toolkit holds what the activities' tools share: results and
// input decoding, output caps, the guarded file target and its reads and
// writes, deny-rule checks, heartbeats, the blob store of large strings,
// a full disk's classification and the tools' definitions. activities and
// its tool packages (lsptool, mcptool, model) import it; it imports none of
// them.
package toolkit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/sandbox/pathguard"
)

// Limits shared by the file tools.
const (
	// MaxLineRunes cuts long lines in Read and Grep output (minified files
	// would otherwise fill the whole budget with one line).
	MaxLineRunes = 2000
	// BinarySniffLen is how much of a file is checked for NUL bytes, the
	// same heuristic git and grep use to call a file binary.
	BinarySniffLen = 8000
)

// ErrorResult is a failed tool call as the model sees it.
func ErrorResult(format string, args ...any) api.ToolResult {
	return api.ToolResult{Output: fmt.Sprintf(format, args...), IsError: true}
}

// DecodeInput decodes the model's JSON arguments strictly into v: not JSON,
// trailing data, unknown fields, wrong types and missing (or null) required
// fields are all errors, phrased so the model can fix its call.
func DecodeInput(raw json.RawMessage, v any, required ...string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return errors.New("missing arguments: expected a JSON object")
	}
	// Presence is checked on the raw object: Go's decoder cannot tell a
	// missing string from an empty one, and for Write's content or Edit's
	// new_string "" is valid. Unknown fields are reported first: a
	// misspelled name ("cmd") is the more useful message.
	if raw[0] != '{' || !json.Valid(raw) {
		// The decoder's own words for what is wrong (json.Valid, which
		// allocates nothing, passes every object a call sends).
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return fmt.Errorf("arguments are not a JSON object: %w", err)
		}
	}
	given, err := exactFields(raw, v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid arguments: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("invalid arguments: trailing data after the JSON object")
	}
	var missing []string
	for _, name := range required {
		if !given[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing required parameter(s): %s", strings.Join(missing, ", "))
	}
	return nil
}

// exactFields refuses what Go's decoder would take and the policy would
// not see: a field spelled other than exactly as v names it ("COMMAND" for
// "command", which the decoder matches without regard to case) and a field
// given twice (the decoder keeps the last value; the rule engine and the
// person may have judged another). The workflow refuses these before
// anyone is asked (api.CheckArguments); this holds the tools to it too.
// given is the fields present with a value other than null.
func exactFields(raw json.RawMessage, v any) (given map[string]bool, err error) {
	names := fieldNames(reflect.TypeOf(v))
	given = map[string]bool{}
	if raw[0] != '{' {
		return given, nil // null, the one other value DecodeInput lets by
	}
	// raw is one valid JSON object (json.Valid): its members are read
	// by a scan of their bounds, not decoded token by token.
	bad := errMalformedObject
	for i := 1; ; {
		i = skipJSONSpace(raw, i)
		if i < len(raw) && raw[i] == ',' {
			i = skipJSONSpace(raw, i+1)
		}
		if i >= len(raw) {
			return nil, bad
		}
		if raw[i] == '}' {
			return given, nil
		}
		end := jsonStringEnd(raw, i)
		if raw[i] != '"' || end > len(raw) {
			return nil, bad
		}
		name := string(raw[i+1 : end-1])
		if bytes.IndexByte(raw[i:end], '\\') >= 0 {
			if err := json.Unmarshal(raw[i:end], &name); err != nil {
				return nil, fmt.Errorf("invalid arguments: %w", err)
			}
		}
		i = skipJSONSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return nil, bad
		}
		i = skipJSONSpace(raw, i+1)
		vend := jsonValueEnd(raw, i)
		null := string(raw[i:vend]) == "null"
		i = vend
		if _, dup := given[name]; dup {
			return nil, fmt.Errorf("invalid arguments: field %q is given more than once", name)
		}
		if !names[name] {
			return nil, fmt.Errorf("invalid arguments: unknown field %q", name)
		}
		given[name] = !null
	}
}

// errMalformedObject: the scan of an object json.Valid passed ran off it
// (never expected; refused rather than trusted).
var errMalformedObject = errors.New("invalid arguments: malformed object")

// skipJSONSpace is the index of the first byte from i that is not JSON
// white space.
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// jsonStringEnd is the index after the string that starts at b[i] (a
// quote), past len(b) when it does not end.
func jsonStringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b) + 1
}

// jsonValueEnd is the index after the value that starts at b[i] (b is
// valid JSON): a string, an object or array with all it holds, or a
// literal up to the comma, brace or space after it.
func jsonValueEnd(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			i = min(jsonStringEnd(b, i), len(b))
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return i
}

// fieldNamesOf keeps the JSON names of the tools' input structs, found
// once per type (they are fixed at compile time).
var fieldNamesOf sync.Map // reflect.Type -> map[string]bool

// fieldNames are the JSON names of the fields of the struct t points to
// (none for any other type); the map is shared: read it, never write.
func fieldNames(t reflect.Type) map[string]bool {
	if names, ok := fieldNamesOf.Load(t); ok {
		return names.(map[string]bool)
	}
	names := map[string]bool{}
	if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		for f := range t.Elem().Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			names[name] = true
		}
	}
	fieldNamesOf.Store(t, names)
	return names
}

func MaxOutput(req api.ToolRequest) int {
	if req.MaxOutput > 0 {
		return req.MaxOutput
	}
	return api.DefaultMaxOutput
}

// TruncMarker is appended (or inserted) where output was cut.
func TruncMarker(shown, total int) string {
	return fmt.Sprintf("\n[output truncated: %d of %d bytes shown]", shown, total)
}

// CapHead keeps the beginning of s so that the result, marker included, is
// at most max bytes (for max large enough to hold the marker), cutting on a
// UTF-8 boundary.
func CapHead(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	n := max - len(TruncMarker(max, len(s)))
	if n < 0 {
		n = 0
	}
	head := CutUTF8(s, n)
	return head + TruncMarker(len(head), len(s)), true
}

// CapHeadTail keeps the beginning and the end of s, for command output where
// the end (the failing test, the error summary) matters as much as the start.
func CapHeadTail(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	n := max - len(TruncMarker(max, len(s))) - 2
	if n < 0 {
		n = 0
	}
	head := CutUTF8(s, n/2)
	tailStart := len(s) - (n - len(head))
	for tailStart < len(s) && !utf8.RuneStart(s[tailStart]) {
		tailStart++
	}
	tail := s[tailStart:]
	return head + TruncMarker(len(head)+len(tail), len(s)) + "\n\n" + tail, true
}

// CutUTF8 returns the longest prefix of s of at most n bytes that does not
// split a rune.
func CutUTF8(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// TruncateLine cuts a display line at MaxLineRunes runes.
func TruncateLine(line string) string {
	if utf8.RuneCountInString(line) <= MaxLineRunes {
		return line
	}
	i, n := 0, 0
	for i = range line {
		if n == MaxLineRunes {
			break
		}
		n++
	}
	return line[:i] + fmt.Sprintf("… [line truncated, %d chars]", utf8.RuneCountInString(line))
}

func LooksBinary(b []byte) bool {
	if len(b) > BinarySniffLen {
		b = b[:BinarySniffLen]
	}
	return bytes.IndexByte(b, 0) >= 0
}

// Target is a path the guard accepted, with the handles every file tool
// needs: a pathguard.Root on the canonical workspace, so that the actual
// I/O opens exactly the symlink-free name the guard checked (openat2 with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS): a directory swapped for a link
// after the check, to a denied or protected file, fails the open with
// pathguard.ErrPathChanged instead of being followed.
type Target struct {
	Root *pathguard.Root
	WS   string // canonical workspace
	Abs  string // canonical absolute path
	Rel  string // relative to the canonical workspace, OS separators
	Show string // relative, slash-separated: what the model is shown
}

func (f *Target) Close() { _ = f.Root.Close() }

// ResolveTarget runs the path guard and opens the workspace root.
func ResolveTarget(workspace, p string, write bool) (*Target, error) {
	root, abs, err := pathguard.ResolveOpen(workspace, p, write)
	if err != nil {
		return nil, err
	}
	canonWS := root.Name()
	rel, err := filepath.Rel(canonWS, abs)
	if err != nil {
		_ = root.Close()
		return nil, fmt.Errorf("%s: %w", p, pathguard.ErrOutsideWorkspace)
	}
	return &Target{Root: root, WS: canonWS, Abs: abs, Rel: rel, Show: filepath.ToSlash(rel)}, nil
}

// SearchRoot resolves the directory a search (Glob, Grep) starts from: path,
// or the workspace itself when path is empty.
func SearchRoot(workspace, path string) (*Target, error) {
	if path == "" {
		path = "."
	}
	return ResolveTarget(workspace, path, false)
}

// WriteAtomic replaces rel inside root with data: a temporary file in the
// same directory, fsynced, then renamed over the target, so a reader (or a
// crash) sees either the old or the new content, never half of it. The
// target's permission bits are kept when it exists. Rename replaces the
// final name itself and never follows a symlink there.
func WriteAtomic(root *pathguard.Root, rel string, data []byte) (created bool, err error) {
	mode := fs.FileMode(0o644)
	fi, err := root.Lstat(rel)
	switch {
	case err == nil:
		if fi.IsDir() {
			return false, fmt.Errorf("%s is a directory", filepath.ToSlash(rel))
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			// ResolvePath returned a symlink-free path, so this appeared
			// after the check: refuse rather than guess.
			return false, fmt.Errorf("%s became a symlink while being written; refusing", filepath.ToSlash(rel))
		}
		mode = fi.Mode().Perm()
	case errors.Is(err, fs.ErrNotExist):
		created = true
	default:
		return false, err
	}
	dir := filepath.Dir(rel)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("create parent directories: %w", err)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+filepath.Base(rel)+".custos-tmp-"+hex.EncodeToString(rnd[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, fmt.Errorf("create temporary file: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = f.Close()
			_ = root.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return false, fmt.Errorf("write: %w", err)
	}
	// Chmod on the descriptor: not subject to the umask, and unaffected by
	// anything done to the name in the meantime.
	if err := f.Chmod(mode); err != nil {
		return false, fmt.Errorf("chmod: %w", err)
	}
	if err := f.Sync(); err != nil {
		return false, fmt.Errorf("sync: %w", err)
	}
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("close: %w", err)
	}
	if err := root.Rename(tmp, rel); err != nil {
		_ = root.Remove(tmp)
		committed = true
		return false, fmt.Errorf("rename into place: %w", err)
	}
	committed = true
	return created, nil
}

// ReadRegular reads rel from root, refusing directories, non-regular files
// (a FIFO would block the activity forever) and files over limit. The final
// component is checked with Lstat and the opened descriptor compared with
// it, the O_NOFOLLOW-style guarantee that what was checked is what is read.
func ReadRegular(root *pathguard.Root, rel string, limit int64) ([]byte, fs.FileInfo, error) {
	fi, err := root.Lstat(rel)
	if err != nil {
		return nil, nil, err
	}
	if fi.IsDir() {
		return nil, nil, fmt.Errorf("%s is a directory", filepath.ToSlash(rel))
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file (%s)", filepath.ToSlash(rel), fi.Mode().Type())
	}
	if fi.Size() > limit {
		return nil, nil, fmt.Errorf("%s is too large (%d bytes, limit %d)", filepath.ToSlash(rel), fi.Size(), limit)
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	ofi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !os.SameFile(fi, ofi) {
		return nil, nil, fmt.Errorf("%s changed while being opened; try again", filepath.ToSlash(rel))
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(data)) > limit {
		return nil, nil, fmt.Errorf("%s is too large (over %d bytes)", filepath.ToSlash(rel), limit)
	}
	return data, ofi, nil
}

// attempt is the activity's attempt number, 1 outside an activity (tools are
// also called directly, e.g. by tests and the CLI).
func Attempt(ctx context.Context) int32 {
	if activity.IsActivity(ctx) {
		return activity.GetInfo(ctx).Attempt
	}
	return 1
}

// RegularFile is the file a tool reads, refused when it is not a regular
// file; name is the path the model gave.
func RegularFile(tgt *Target, name string) (fs.FileInfo, error) {
	fi, err := tgt.Root.Stat(tgt.Rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s does not exist", name)
	case err != nil:
		return nil, err
	case fi.IsDir():
		return nil, fmt.Errorf("%s is a directory, not a file; use Glob to list its files", name)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file (%s)", name, fi.Mode().Type())
	}
	return fi, nil
}
