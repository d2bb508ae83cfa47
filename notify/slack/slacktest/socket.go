package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gorilla/websocket"
)

// AppToken is the app-level token the fake accepts for Socket Mode.
const AppToken = "xapp-1-slacktest"

// Socket Mode, as Slack speaks it: apps.connections.open (with the app-level
// token) answers a WebSocket URL; on it Slack sends "hello", then envelopes
// {"envelope_id","type":"interactive"|"slash_commands","payload"}, and the
// app acknowledges each with {"envelope_id"}.

func (s *Server) connectionsOpen(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: "apps.connections.open", Token: bearer(r)})
	s.touch()
	s.mu.Unlock()
	if bearer(r) != AppToken {
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "url": "ws://" + s.ln.Addr().String() + "/socket"})
}

func (s *Server) socket(w http.ResponseWriter, r *http.Request) {
	// Slack's clients announce themselves as coming from api.slack.com.
	up := websocket.Upgrader{CheckOrigin: func(r *http.Request) bool { return r.Header.Get("Origin") == "https://api.slack.com" }}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	_ = s.wsWriteTo(conn, map[string]any{"type": "hello", "num_connections": 1,
		"connection_info": map[string]any{"app_id": "A0CUSTOS"},
		"debug_info":      map[string]any{"host": "slacktest", "approximate_connection_time": 3600}})
	s.mu.Lock()
	s.ws = conn
	s.touch()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.ws == conn {
			s.ws = nil
		}
		s.mu.Unlock()
	}()
	// Slack pings every few seconds; clients reconnect when it stops.
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.wsMu.Lock()
				err := conn.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(5*time.Second))
				s.wsMu.Unlock()
				if err != nil {
					return
				}
			}
		}
	}()
	for {
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if err := conn.ReadJSON(&ack); err != nil {
			return
		}
		s.mu.Lock()
		s.acks = append(s.acks, ack.EnvelopeID)
		s.touch()
		s.mu.Unlock()
	}
}

func (s *Server) wsWrite(v any) error {
	s.mu.Lock()
	conn := s.ws
	s.mu.Unlock()
	if conn == nil {
		return fmt.Errorf("slacktest: no Socket Mode connection")
	}
	return s.wsWriteTo(conn, v)
}

func (s *Server) wsWriteTo(conn *websocket.Conn, v any) error {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	return conn.WriteJSON(v)
}

// SocketSend sends an envelope (type "interactive" with an interaction
// payload, or "slash_commands" with a command's fields) over the Socket
// Mode connection, waiting up to a minute for the app to connect. It
// returns the envelope's ID.
func (s *Server) SocketSend(envType string, payload json.RawMessage) (string, error) {
	if !s.Wait(time.Minute, func(s *Server) bool { s.mu.Lock(); defer s.mu.Unlock(); return s.ws != nil }) {
		return "", fmt.Errorf("slacktest: the app never connected over Socket Mode")
	}
	s.mu.Lock()
	s.nextEnvelope++
	id := fmt.Sprintf("env-%d", s.nextEnvelope)
	s.mu.Unlock()
	return id, s.wsWrite(map[string]any{"envelope_id": id, "type": envType, "payload": payload, "accepts_response_payload": false})
}

// Acked reports whether the app acknowledged the envelope.
func (s *Server) Acked(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.acks, id)
}

func bearer(r *http.Request) string {
	const p = "Bearer "
	if h := r.Header.Get("Authorization"); len(h) > len(p) && h[:len(p)] == p {
		return h[len(p):]
	}
	return ""
}
