// Package slacktest is a local Slack for tests: an HTTP server that speaks
// the Web API's wire format (form-encoded or JSON requests with a bearer
// token, {"ok":…} answers, 429 with Retry-After when rate limiting) for the
// methods custos uses, plus response_url endpoints; it records everything
// it receives and can be told to fail. Sign and Send send interaction
// payloads to a bot exactly as Slack does.
package slacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Failure is a way the next call of a method fails.
type Failure int

const (
	// Fail500 answers HTTP 500 with an HTML body, as Slack does when down.
	Fail500 Failure = iota + 1
	// FailRateLimited answers HTTP 429, Retry-After: 1, error "ratelimited".
	FailRateLimited
	// FailDropResponse does the work (stores the message) and then closes
	// the connection without answering: the client cannot know it worked.
	FailDropResponse
)

// Message is a message in a channel, as last posted or updated.
type Message struct {
	Channel  string
	TS       string
	Text     string
	Blocks   json.RawMessage
	Metadata json.RawMessage
	Updates  int
	// ThreadTS is the thread's first message, for a reply ("" otherwise);
	// Broadcast marks a reply also shown in the channel.
	ThreadTS  string
	Broadcast bool
	// User and BotID are who posted it: the bot (U0CUSTOSBOT, B0CUSTOS)
	// for what came through the Web API, a person for Say.
	User  string
	BotID string
}

// BotUser and BotID are the bot's identity, as auth.test answers it.
const (
	BotUser = "U0CUSTOSBOT"
	BotID   = "B0CUSTOS"
)

// Call is one Web API request as received.
type Call struct {
	Method string
	Token  string
	// Params are the form values, or the JSON body's top-level values
	// (strings as they are, anything else as JSON text).
	Params map[string]string
}

// Reply is what a bot posted to a response_url.
type Reply struct {
	ID           string
	Text         string `json:"text"`
	ResponseType string `json:"response_type"`
	Replace      bool   `json:"replace_original"`
}

// Server is the fake Slack.
type Server struct {
	Token string
	// URL is the Web API base URL (ends in "/api/").
	URL string

	srv      *http.Server
	ln       net.Listener
	mu       sync.Mutex
	channels []string
	groups   map[string][]string
	messages []*Message
	calls    []Call
	replies  []Reply
	failures map[string][]Failure
	nextTS   int64
	nextResp int
	changed  chan struct{}

	ws           *websocket.Conn
	wsMu         sync.Mutex // one writer at a time
	acks         []string
	nextEnvelope int
}

// New starts a fake Slack on a free loopback port that accepts token and
// knows the channels.
func New(token string, channels ...string) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("slacktest: listen: %w", err)
	}
	s := &Server{Token: token, URL: "http://" + ln.Addr().String() + "/api/", ln: ln, channels: channels,
		groups: map[string][]string{}, failures: map[string][]Failure{}, nextTS: time.Now().Unix() * 1e6, changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/apps.connections.open", s.connectionsOpen)
	mux.HandleFunc("GET /socket", s.socket)
	mux.HandleFunc("POST /api/{method}", s.api)
	mux.HandleFunc("POST /response/{id}", s.response)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server and its Socket Mode connection.
func (s *Server) Close() {
	s.mu.Lock()
	if s.ws != nil {
		_ = s.ws.Close()
	}
	s.mu.Unlock()
	_ = s.srv.Close()
}

// SetGroup sets the members of a user group.
func (s *Server) SetGroup(id string, users ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[id] = users
}

// FailNext makes the next calls of method fail, one failure per call.
func (s *Server) FailNext(method string, f ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[method] = append(s.failures[method], f...)
}

// ResponseURL is a fresh response_url for one interaction.
func (s *Server) ResponseURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextResp++
	return fmt.Sprintf("http://%s/response/%d", s.ln.Addr(), s.nextResp)
}

// Messages are copies of the messages, in posting order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, len(s.messages))
	for i, m := range s.messages {
		out[i] = *m
	}
	return out
}

// Calls are the Web API requests received, in order; with methods given,
// only those.
func (s *Server) Calls(methods ...string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if len(methods) == 0 || slices.Contains(methods, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// Replies are what bots posted to response URLs, in order.
func (s *Server) Replies() []Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.replies)
}

// Wait blocks until cond holds (checked after every request) or timeout.
func (s *Server) Wait(timeout time.Duration, cond func(s *Server) bool) bool {
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond(s) {
			return true
		}
		select {
		case <-ch:
		case <-deadline:
			return cond(s)
		}
	}
}

// touch wakes waiters; called with mu held.
func (s *Server) touch() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	method := r.PathValue("method")
	params, err := readParams(r)
	if err != nil {
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_form_data"})
		return
	}
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if token == "" {
		token = params["token"]
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: method, Token: token, Params: params})
	var fail Failure
	if q := s.failures[method]; len(q) > 0 {
		fail, s.failures[method] = q[0], q[1:]
	}
	s.touch()
	s.mu.Unlock()

	switch fail {
	case Fail500:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, "<html><body>Internal Server Error</body></html>")
		return
	case FailRateLimited:
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"ok": false, "error": "ratelimited"})
		return
	}
	if token != s.Token {
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	res := s.method(method, params)
	if fail == FailDropResponse {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
	}
	writeJSON(w, http.StatusOK, res)
}

// method does the work of one Web API method and returns Slack's answer.
func (s *Server) method(method string, p map[string]string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.touch()
	notOK := func(e string) map[string]any { return map[string]any{"ok": false, "error": e} }
	switch method {
	case "auth.test":
		return map[string]any{"ok": true, "url": "https://custos-test.slack.com/", "team": "custos", "user": "custos",
			"team_id": "T0CUSTOS", "user_id": "U0CUSTOSBOT", "bot_id": "B0CUSTOS"}
	case "chat.postMessage":
		if !slices.Contains(s.channels, p["channel"]) {
			return notOK("channel_not_found")
		}
		if p["thread_ts"] != "" {
			if root := s.find(p["channel"], p["thread_ts"]); root == nil || root.ThreadTS != "" {
				return notOK("thread_not_found") // a reply's parent is a message of the channel, not a reply
			}
		}
		m := s.store(&Message{Channel: p["channel"], Text: p["text"], Blocks: json.RawMessage(p["blocks"]), Metadata: json.RawMessage(p["metadata"]),
			ThreadTS: p["thread_ts"], Broadcast: p["thread_ts"] != "" && p["reply_broadcast"] == "true", User: BotUser, BotID: BotID})
		return map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS, "message": s.messageJSON(m, false)}
	case "chat.update":
		m := s.find(p["channel"], p["ts"])
		if m == nil {
			return notOK("message_not_found")
		}
		m.Text, m.Blocks, m.Updates = p["text"], json.RawMessage(p["blocks"]), m.Updates+1
		if p["metadata"] != "" {
			m.Metadata = json.RawMessage(p["metadata"])
		}
		return map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS, "text": m.Text, "message": s.messageJSON(m, false)}
	case "conversations.history":
		if !slices.Contains(s.channels, p["channel"]) {
			return notOK("channel_not_found")
		}
		oldest, _ := strconv.ParseFloat(p["oldest"], 64)
		var msgs []any
		for i := len(s.messages) - 1; i >= 0; i-- { // newest first, as Slack
			m := s.messages[i]
			ts, _ := strconv.ParseFloat(m.TS, 64)
			// The channel's history holds no thread replies but those
			// also sent to the channel.
			if m.Channel == p["channel"] && ts >= oldest && (m.ThreadTS == "" || m.Broadcast) {
				msgs = append(msgs, s.messageJSON(m, withMetadata(p)))
			}
		}
		return map[string]any{"ok": true, "messages": msgs, "has_more": false, "pin_count": 0,
			"response_metadata": map[string]any{"next_cursor": ""}}
	case "conversations.replies":
		return s.thread(p)
	case "usergroups.users.list":
		users, ok := s.groups[p["usergroup"]]
		if !ok {
			return notOK("no_such_subteam")
		}
		return map[string]any{"ok": true, "users": users}
	case "views.open":
		if p["trigger_id"] == "" {
			return notOK("invalid_trigger_id")
		}
		var view map[string]any
		_ = json.Unmarshal([]byte(p["view"]), &view)
		view["id"] = "V0000001"
		return map[string]any{"ok": true, "view": view}
	}
	return notOK("unknown_method")
}

func (s *Server) find(channel, ts string) *Message {
	for _, m := range s.messages {
		if m.Channel == channel && m.TS == ts {
			return m
		}
	}
	return nil
}

// store gives m its timestamp and keeps it; called with mu held.
func (s *Server) store(m *Message) *Message {
	s.nextTS++
	m.TS = fmt.Sprintf("%d.%06d", s.nextTS/1e6, s.nextTS%1e6)
	s.messages = append(s.messages, m)
	return m
}

// thread is conversations.replies: a thread, its first message first,
// then the replies, oldest first (one page: the fake's threads are short).
func (s *Server) thread(p map[string]string) map[string]any {
	root := s.find(p["channel"], p["ts"])
	if root == nil {
		return map[string]any{"ok": false, "error": "thread_not_found"}
	}
	msgs := []any{s.messageJSON(root, withMetadata(p))}
	for _, m := range s.messages {
		if root.ThreadTS == "" && m.Channel == root.Channel && m.ThreadTS == root.TS {
			msgs = append(msgs, s.messageJSON(m, withMetadata(p)))
		}
	}
	if n, err := strconv.Atoi(p["limit"]); err == nil && n > 0 && n < len(msgs) {
		msgs = msgs[:n]
	}
	return map[string]any{"ok": true, "messages": msgs, "has_more": false,
		"response_metadata": map[string]any{"next_cursor": ""}}
}

func withMetadata(p map[string]string) bool {
	return p["include_all_metadata"] == "1" || p["include_all_metadata"] == "true"
}

// messageJSON is m as the Web API shows it; called with mu held.
func (s *Server) messageJSON(m *Message, withMetadata bool) map[string]any {
	out := map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "user": m.User}
	if m.BotID != "" {
		out["bot_id"] = m.BotID
	}
	if len(m.Blocks) > 0 {
		out["blocks"] = m.Blocks
	}
	if withMetadata && len(m.Metadata) > 0 {
		out["metadata"] = m.Metadata
	}
	switch {
	case m.ThreadTS != "":
		out["thread_ts"] = m.ThreadTS
		if m.Broadcast {
			out["subtype"] = "thread_broadcast"
		}
	default:
		n := 0
		for _, r := range s.messages {
			if r.ThreadTS == m.TS && r.Channel == m.Channel {
				n++
			}
		}
		if n > 0 { // a thread's first message names the thread, as Slack does
			out["thread_ts"], out["reply_count"] = m.TS, n
		}
	}
	return out
}

func (s *Server) response(w http.ResponseWriter, r *http.Request) {
	var rep Reply
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&rep); err != nil {
		http.Error(w, "invalid_payload", http.StatusBadRequest)
		return
	}
	rep.ID = r.PathValue("id")
	s.mu.Lock()
	s.replies = append(s.replies, rep)
	s.touch()
	s.mu.Unlock()
	_, _ = io.WriteString(w, "ok")
}

// readParams reads a form-encoded or JSON request body into strings.
func readParams(r *http.Request) (map[string]string, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 10<<20))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, err
		}
		for k, v := range m {
			var str string
			if json.Unmarshal(v, &str) == nil {
				out[k] = str
			} else {
				out[k] = string(v)
			}
		}
		return out, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, err
	}
	for k := range form {
		out[k] = form.Get(k)
	}
	return out, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
