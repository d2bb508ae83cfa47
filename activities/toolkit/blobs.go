package toolkit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/internal/atomicfile"
)

// Blobs keeps the large strings of model answers out of history, one
// file per SHA-256 (see api.BlobDir). Files are written once, atomically,
// and checked against their name when read.
type Blobs struct{ Dir string }

// put stores s and returns its marker.
func (b Blobs) Put(s string) (string, error) {
	sum := sha256.Sum256([]byte(s))
	name := hex.EncodeToString(sum[:])
	path := filepath.Join(b.Dir, name)
	if fi, err := os.Stat(path); err == nil && fi.Size() == int64(len(s)) {
		// Reused: marked fresh, so the state directory's collection
		// (retention) cannot take a blob a live job is about to name in
		// its transcript because an ended job wrote it long ago.
		now := time.Now()
		_ = os.Chtimes(path, now, now)
		return name, nil
	}
	if err := os.MkdirAll(b.Dir, 0o700); err != nil {
		return "", fmt.Errorf("blob dir: %w", err)
	}
	if err := atomicfile.Write(path, []byte(s), 0o600); err != nil {
		return "", fmt.Errorf("blob: %w", err)
	}
	return name, nil
}

// get reads blob sum back, checking its size and hash.
func (b Blobs) Get(sum string, n int) (string, error) {
	data, err := os.ReadFile(filepath.Join(b.Dir, sum))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("blob sha256:%s is missing from %s", sum, b.Dir)
	}
	if err != nil {
		return "", fmt.Errorf("read blob: %w", err)
	}
	got := sha256.Sum256(data)
	if hex.EncodeToString(got[:]) != sum || len(data) != n {
		return "", fmt.Errorf("blob sha256:%s in %s is damaged (%d bytes, hash %x)", sum, b.Dir, len(data), got[:6])
	}
	return string(data), nil
}

// expandArguments puts back the blobs of a call's top-level string fields.
// Arguments without markers come back as they are.
func (b Blobs) ExpandArguments(args string) (string, error) {
	if !strings.Contains(args, "[custos-blob sha256:") {
		return args, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &m) != nil {
		return args, nil
	}
	changed := false
	for k, raw := range m {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			continue
		}
		sum, n, ok := api.ParseBlobMarker(s)
		if !ok {
			continue
		}
		full, err := b.Get(sum, n)
		if err != nil {
			return "", fmt.Errorf("field %q: %w", k, err)
		}
		enc, _ := json.Marshal(full)
		m[k], changed = enc, true
	}
	if !changed {
		return args, nil
	}
	out, err := json.Marshal(m)
	return string(out), err
}

// expandText puts back the whole text of a reduced text answer.
func (b Blobs) ExpandText(s string) (string, error) {
	sum, n, ok := api.ParseTextMarker(s)
	if !ok {
		return s, nil
	}
	return b.Get(sum, n)
}

// ConversationBlobs are the blobs of a job's answers, beside its transcript.
func ConversationBlobs(c api.Conversation) Blobs {
	return Blobs{Dir: api.BlobDirOf(c.Files, c.Workspace, c.JobID)}
}

// JobBlobs is the blob store dir names, or that of a job whose files are
// in its workspace.
func JobBlobs(dir, workspace, jobID string) Blobs {
	if dir == "" {
		dir = api.BlobDirOf(api.JobFiles{}, workspace, jobID)
	}
	return Blobs{Dir: dir}
}

// ExpandInput is expandArguments for a tool's input.
func ExpandInput(bs Blobs, input json.RawMessage) (json.RawMessage, error) {
	out, err := bs.ExpandArguments(string(input))
	return json.RawMessage(out), err
}

// WithBlobs is req with the blobs of its input read back, or the tool
// result that says why they cannot be.
func WithBlobs(tool string, req api.ToolRequest) (api.ToolRequest, *api.ToolResult) {
	in, err := ExpandInput(JobBlobs(req.Blobs, req.Workspace, req.JobID), req.Input)
	if err != nil {
		res := ErrorResult("%s: the call's content could not be read back: %v", tool, err)
		return req, &res
	}
	req.Input = in
	return req, nil
}
