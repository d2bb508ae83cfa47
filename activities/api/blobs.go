package api

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
)

// A model answer may be larger than Temporal lets an event be (it warns at
// 256 KB and refuses 2 MB). The model activity keeps such an answer out of
// history: every large string it holds (the text, or a Write's content, an
// Edit's old_string and new_string) is stored in a content-addressed blob
// file beside the transcript, BlobDir, and replaced in the message by a
// marker naming the blob's SHA-256 and size. The workflow, the audit and
// the transcript hold the reduced message; the activities that need the
// whole text (the model's next call, the tool, the hooks, the preview)
// read the blob back and check its hash. A call that cannot travel reduced
// (a Bash command, a path, or a call cut at the model's length limit) comes
// back refused: its arguments are replaced by an object with the key
// RefusedKey whose value tells the model why, and the workflow answers the
// call with that instead of running it.

// Sizes of the reduction.
const (
	// BlobFieldMin is the size from which a string of a model answer is
	// stored as a blob.
	BlobFieldMin = 8 << 10
	// MaxAnswerInline bounds a reduced answer's message as it travels
	// through history; calls past it are refused whole.
	MaxAnswerInline = 64 << 10
	// MaxBlobField is the largest string one call may carry (a Write's
	// content): past it the call is refused ("write it in parts").
	MaxBlobField = 16 << 20
	// TextHeadInline is how much of a large text answer stays in the
	// message (the rest is in its blob).
	TextHeadInline = 4 << 10
)

// RefusedKey marks the arguments of a call the model activity refused:
// {"custos_refused": "why", ...}.
const RefusedKey = "custos_refused"

// BlobDir is where the blobs of a job's answers are kept: beside its
// transcript (files.Transcript), so they are wherever it is.
func BlobDir(files JobFiles) string {
	return filepath.Join(filepath.Dir(files.Transcript), "blobs")
}

// BlobDirOf is the BlobDir of job jobID whose files are files (empty for
// jobs that began before transcripts left the workspace).
func BlobDirOf(files JobFiles, workspace, jobID string) string {
	return BlobDir(files.Or(workspace, jobID))
}

// BlobMarker stands for a string of n bytes stored as blob sum.
func BlobMarker(sum string, n int) string {
	return fmt.Sprintf("[custos-blob sha256:%s %d bytes]", sum, n)
}

var markerRe = regexp.MustCompile(`\[custos-blob sha256:([0-9a-f]{64}) ([0-9]+) bytes\]`)

// ParseBlobMarker reads a string that is exactly a BlobMarker.
func ParseBlobMarker(s string) (sum string, n int, ok bool) {
	if len(s) > 120 {
		return "", 0, false
	}
	m := markerRe.FindStringSubmatch(s)
	if m == nil || m[0] != s {
		return "", 0, false
	}
	n, err := strconv.Atoi(m[2])
	return m[1], n, err == nil
}

// TextMarkerSuffix ends a text answer whose rest is in a blob: the text is
// its head, then this line.
func TextMarkerSuffix(sum string, n int) string {
	return "\n\n[custos: this answer has " + strconv.Itoa(n) + " bytes; the whole text is " + BlobMarker(sum, n) + "]"
}

var textMarkerRe = regexp.MustCompile(`\n\n\[custos: this answer has [0-9]+ bytes; the whole text is \[custos-blob sha256:([0-9a-f]{64}) ([0-9]+) bytes\]\]$`)

// ParseTextMarker finds the blob of a reduced text answer.
func ParseTextMarker(s string) (sum string, n int, ok bool) {
	m := textMarkerRe.FindStringSubmatch(s)
	if m == nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(m[2])
	return m[1], n, err == nil
}

// BlobFields are the string arguments of a tool that may be stored as a
// blob: only file contents, never what the approval pipeline judges (paths,
// commands, patterns).
func BlobFields(tool string) []string {
	switch tool {
	case WriteActivity:
		return []string{"content"}
	case EditActivity:
		return []string{"old_string", "new_string"}
	}
	return nil
}

// RefusedReason is why the model activity refused a call, if it did.
func RefusedReason(input json.RawMessage) (string, bool) {
	if len(input) == 0 || input[0] != '{' {
		return "", false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return "", false
	}
	raw, ok := m[RefusedKey]
	if !ok {
		return "", false
	}
	var why string
	if json.Unmarshal(raw, &why) != nil {
		return "", false
	}
	return why, true
}

// RefusedArguments are the arguments of a refused call.
func RefusedArguments(why string, bytes int) string {
	b, _ := json.Marshal(map[string]any{RefusedKey: why, "bytes": bytes})
	return string(b)
}
