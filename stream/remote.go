package stream

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// A worker serves its hub's text over HTTP to followers on other hosts.
// The model activity asks a Server for a grant while it writes an answer
// and says where it runs (the stream's URL and the grant's token) in its
// heartbeat details, which any client of the Temporal server can read
// while the activity runs and which never enter history when it succeeds.
// A follower connects with the token and gets the job's chunks as JSON
// lines until the answer ends; the grant dies with the activity.

// Server serves a Hub's chunks to holders of a grant. Safe for concurrent
// use.
type Server struct {
	Hub *Hub
	// URL is where followers reach ServeHTTP (the advertised address).
	URL string

	mu     sync.Mutex
	grants map[[32]byte]*grant
}

type grant struct {
	job   string
	done  chan struct{}
	conns int
}

// maxConns bounds the followers of one grant.
const maxConns = 32

// Grant opens the job's text to whoever holds the token until revoke is
// called (after the answer's last chunk was published).
func (s *Server) Grant(job string) (token string, revoke func()) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	token = hex.EncodeToString(b)
	key := sha256.Sum256([]byte(token))
	g := &grant{job: job, done: make(chan struct{})}
	s.mu.Lock()
	if s.grants == nil {
		s.grants = map[[32]byte]*grant{}
	}
	s.grants[key] = g
	s.mu.Unlock()
	var once sync.Once
	return token, func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.grants, key)
			s.mu.Unlock()
			close(g.done)
		})
	}
}

// take finds the grant of token for job and counts a follower.
func (s *Server) take(token, job string) (*grant, bool) {
	key := sha256.Sum256([]byte(token))
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.grants[key]
	if g == nil || g.job != job || g.conns >= maxConns {
		return nil, false
	}
	g.conns++
	return g, true
}

func (s *Server) release(g *grant) {
	s.mu.Lock()
	g.conns--
	s.mu.Unlock()
}

// ServeHTTP answers GET ?job=ID with "Authorization: Bearer TOKEN": the
// job's chunks, one JSON object a line, until the grant ends or the
// follower goes. Anything else is refused without saying why.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	g, ok2 := s.take(token, r.URL.Query().Get("job"))
	if !ok || !ok2 {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	defer s.release(g)
	sub := s.Hub.Subscribe(g.job)
	defer sub.Close()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	send := func() bool {
		for _, c := range sub.Take() {
			if enc.Encode(c) != nil {
				return false
			}
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	send() // the answer so far
	for {
		select {
		case <-r.Context().Done():
			return
		case <-g.done:
			send()
			return
		case <-sub.Ready():
			if !send() {
				return
			}
		}
	}
}

// ErrRefused is Fetch's error when the worker refuses the token (the
// answer ended, or the token is not its).
var ErrRefused = errors.New("stream: refused")

// Fetch reads job's chunks from a Server at url with token and hands each
// to fn, until the answer's grant ends, ctx ends or the connection fails.
func Fetch(ctx context.Context, hc *http.Client, url, job, token string, fn func(Chunk)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("stream %s: %w", url, err)
	}
	q := req.URL.Query()
	q.Set("job", job)
	req.URL.RawQuery = q.Encode()
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("stream %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s", ErrRefused, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var c Chunk
		if json.Unmarshal(sc.Bytes(), &c) != nil || c.Job != job {
			continue
		}
		fn(c)
	}
	return sc.Err()
}

// Relayer publishes chunks read from another hub (Fetch) into this one, as
// the model activity publishes its own: a follower of this hub sees the
// same answers, restarts and ends.
type Relayer struct {
	h    *Hub
	job  string
	w    *Writer
	open [2]int
}

// NewRelayer relays job's chunks into h.
func NewRelayer(h *Hub, job string) *Relayer { return &Relayer{h: h, job: job} }

// Put publishes c.
func (r *Relayer) Put(c Chunk) {
	// A snapshot (the text so far, first to a new subscriber) opens the
	// answer like its first delta; a restart or another attempt ends the
	// open one, which was cut off.
	if key := [2]int{c.Turn, c.Attempt}; r.w == nil || key != r.open || c.Restart {
		if r.w != nil {
			r.w.End(true)
		}
		r.w, r.open = r.h.Begin(r.job, c.Turn, c.Attempt), key
	}
	if c.Thought {
		r.w.Think(c.Text)
	} else {
		r.w.Write(c.Text)
	}
	if c.Done {
		r.w.End(c.Failed)
		r.w = nil
	}
}

// Cut ends an answer left open (its connection ended before it did).
func (r *Relayer) Cut() {
	if r.w != nil {
		r.w.End(true)
		r.w = nil
	}
}
