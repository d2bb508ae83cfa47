package model

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/stream"
)

// errNotAStream is a 200 whose body was not a chat completion stream, or a
// stream that ended before the answer did: garbage, as an undecodable plain
// answer is.
var errNotAStream = errors.New("not a chat completion stream")

// completeStream makes the call with stream: true, publishes the content
// to w as it arrives and puts the answer back together into the response a
// plain call would have returned, usage and finish reason included.
func (m *Model) completeStream(ctx context.Context, creq openai.ChatCompletionRequest, w *stream.Writer) (openai.ChatCompletionResponse, error) {
	var got atomic.Int64
	// Heartbeat as the plain call does; the progress says how far the
	// answer got, which a person reading the pending activity can use, and
	// where a follower on another host reads the text (modelProgress).
	stop := toolkit.HeartbeatEvery(ctx, 5*time.Second, func() any {
		if n := got.Load(); n > 0 {
			return modelProgress(ctx, fmt.Sprintf("the model is answering (%d bytes)", n))
		}
		return modelProgress(ctx, "waiting for the model")
	})
	defer stop()
	creq.Stream = true
	creq.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	head := &bodyHead{}
	defer head.close()
	ctx = context.WithValue(ctx, bodyHeadKey{}, head)
	s, err := m.Client.CreateChatCompletionStream(ctx, creq)
	if err != nil {
		return openai.ChatCompletionResponse{}, err
	}
	defer s.Close()
	var acc accumulator
	for {
		r, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return openai.ChatCompletionResponse{}, err
		}
		head.stop() // an event came: this is a stream
		text, thought := acc.add(r)
		if thought != "" {
			got.Add(int64(len(thought)))
			w.Think(thought)
		}
		if text != "" {
			got.Add(int64(len(text)))
			w.Write(text)
		}
	}
	resp, err := acc.response()
	if acc.choices == 0 {
		// No event at all: judge the body as the plain call would, so
		// the job tells the same error (and takes a plain answer from a
		// server that does not stream).
		return plainAnswer(head, w)
	}
	return resp, err
}

// plainAnswer decodes the body a stream request got as a plain answer:
// a completion the endpoint sent instead of a stream (told by its
// Content-Type or first byte, whatever its size), else the start of a
// body that held no event, judged as the plain call would judge it.
func plainAnswer(head *bodyHead, w *stream.Writer) (openai.ChatCompletionResponse, error) {
	var resp openai.ChatCompletionResponse
	switch {
	case head.plain != nil:
		// As go-openai decodes a plain answer: the same words for the
		// same body.
		if err := json.NewDecoder(head.plain).Decode(&resp); err != nil {
			return openai.ChatCompletionResponse{}, err
		}
	case head.over || head.stopped || head.eventStream:
		return openai.ChatCompletionResponse{}, fmt.Errorf("%w: no chunk with a choice", errNotAStream)
	default:
		if err := json.Unmarshal(head.b, &resp); err != nil {
			return openai.ChatCompletionResponse{}, err
		}
	}
	if len(resp.Choices) > 0 {
		w.Think(resp.Choices[0].Message.ReasoningContent)
		w.Write(resp.Choices[0].Message.Content)
	}
	return resp, nil
}

// accumulator puts a streamed answer back together: content appended,
// tool calls keyed by their index with their arguments appended.
type accumulator struct {
	resp    openai.ChatCompletionResponse
	msg     openai.ChatCompletionMessage
	finish  openai.FinishReason
	choices int // chunks that carried a choice
}

// add takes one chunk and returns its new content text and reasoning
// (reasoning_content, which the answer keeps as a plain answer keeps it).
func (a *accumulator) add(r openai.ChatCompletionStreamResponse) (text, thought string) {
	if a.resp.ID == "" {
		a.resp.ID, a.resp.Object, a.resp.Created, a.resp.Model = r.ID, "chat.completion", r.Created, r.Model
		a.resp.SystemFingerprint = r.SystemFingerprint
	}
	if r.Usage != nil {
		a.resp.Usage = *r.Usage
	}
	for _, ch := range r.Choices {
		if ch.Index != 0 {
			continue // custos asks for one choice
		}
		a.choices++
		d := ch.Delta
		if d.Role != "" {
			a.msg.Role = d.Role
		}
		a.msg.Content += d.Content
		a.msg.Refusal += d.Refusal
		a.msg.ReasoningContent += d.ReasoningContent
		text += d.Content
		thought += d.ReasoningContent
		for i, tc := range d.ToolCalls {
			a.addCall(i, tc)
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
	}
	return text, thought
}

// addCall merges a tool call delta. The index says which call; a server
// that leaves it out sends each call whole, in order.
func (a *accumulator) addCall(pos int, tc openai.ToolCall) {
	i := pos
	if tc.Index != nil {
		i = *tc.Index
	}
	if i < 0 || i > 1024 {
		return
	}
	for len(a.msg.ToolCalls) <= i {
		a.msg.ToolCalls = append(a.msg.ToolCalls, openai.ToolCall{})
	}
	c := &a.msg.ToolCalls[i]
	if tc.ID != "" {
		c.ID = tc.ID
	}
	if tc.Type != "" {
		c.Type = tc.Type
	}
	// OpenAI sends the name whole in the call's first delta; some servers
	// repeat it in every delta, which must not double it.
	if tc.Function.Name != "" && tc.Function.Name != c.Function.Name {
		c.Function.Name += tc.Function.Name
	}
	c.Function.Arguments += tc.Function.Arguments
}

// response is the whole answer, or errNotAStream when the body held no
// choice at all or the stream ended without a finish reason (cut short).
func (a *accumulator) response() (openai.ChatCompletionResponse, error) {
	if a.choices == 0 {
		return openai.ChatCompletionResponse{}, fmt.Errorf("%w: no chunk with a choice", errNotAStream)
	}
	if a.finish == "" {
		return openai.ChatCompletionResponse{}, fmt.Errorf("%w: it ended before the answer did (no finish_reason)", errNotAStream)
	}
	msg := a.msg
	if msg.Role == "" {
		msg.Role = openai.ChatMessageRoleAssistant
	}
	for i := range msg.ToolCalls {
		msg.ToolCalls[i].Index = nil // as in a plain answer
	}
	resp := a.resp
	resp.Choices = []openai.ChatCompletionChoice{{Index: 0, Message: msg, FinishReason: a.finish}}
	return resp, nil
}

// headKeeper sorts the body of a stream request's answer (the request
// whose context asks for it, bodyHeadKey): a plain completion is kept
// whole for plainAnswer and go-openai's stream reader gets an empty body;
// of anything else it keeps the start, which that reader keeps to itself
// when it is not an event.
type headKeeper struct{ openai.HTTPDoer }

type bodyHeadKey struct{}

// bodyHead is what a stream request's answer turned out to be: plain, a
// completion to decode (the endpoint did not stream); eventStream, a body
// its Content-Type calls a stream; b, up to maxHead bytes of a body that
// is not a completion, over when there was more.
type bodyHead struct {
	plain         io.Reader
	closePlain    func() error
	eventStream   bool
	b             []byte
	over, stopped bool
}

// stop ends the keeping and frees what was kept.
func (h *bodyHead) stop() { h.b, h.stopped = nil, true }

// close closes the body of a plain completion.
func (h *bodyHead) close() {
	if h.closePlain != nil {
		_ = h.closePlain()
	}
}

// maxHead is as much of a body that is not a completion as a stream
// request keeps, to say why it is not an answer.
const maxHead = 1 << 20

func (k headKeeper) Do(req *http.Request) (*http.Response, error) {
	resp, err := k.HTTPDoer.Do(req)
	h, ok := req.Context().Value(bodyHeadKey{}).(*bodyHead)
	if !ok || err != nil || resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		return resp, err // an error body is go-openai's to read
	}
	resp.Body = h.sort(resp)
	return resp, nil
}

// sort reads what the endpoint sent by its Content-Type: text/event-stream
// is a stream; anything else (application/json, none, a proxy's own) is a
// completion when its first byte other than white space opens a JSON
// object, and is read as a stream otherwise (data: lines sent as JSON).
// It returns the body go-openai's stream reader is to read.
func (h *bodyHead) sort(resp *http.Response) io.ReadCloser {
	body := resp.Body
	type readCloser struct {
		io.Reader
		io.Closer
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" {
		h.eventStream = true
		return readCloser{io.TeeReader(body, h), body}
	}
	br := bufio.NewReader(body)
	var lead []byte
	for {
		c, err := br.ReadByte()
		if err != nil {
			break
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			_ = br.UnreadByte()
			break
		}
		lead = append(lead, c)
	}
	r := io.MultiReader(bytes.NewReader(lead), br)
	if next, err := br.Peek(1); err == nil && next[0] == '{' {
		h.plain, h.closePlain = r, body.Close
		return io.NopCloser(strings.NewReader(""))
	}
	return readCloser{io.TeeReader(r, h), body}
}

func (h *bodyHead) Write(p []byte) (int, error) {
	if h.stopped {
		return len(p), nil
	}
	n := min(len(p), maxHead-len(h.b))
	h.b = append(h.b, p[:n]...)
	if n < len(p) {
		h.over = true
	}
	return len(p), nil
}
