package inbox

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/internal/answerkey"
	"github.com/custos-dev/custos/stream"
	"github.com/custos-dev/custos/workflows/jobapi"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

var templates = template.Must(template.New("").ParseFS(templateFS, "templates/*.html"))

// Options configure a Handler.
type Options struct {
	// Prefix is the path the page is served under, with both slashes
	// ("/custos/"). Default "/custos/".
	Prefix string
	// SessionCookie names the cookie that identifies the browser's session
	// (the Web UI gate's, or the Gate's): answers must carry a token
	// derived from its value, so a page cannot answer for another session.
	// Required: without it every POST is refused.
	SessionCookie string
	// DefaultBy is the name answers go with when the person sets none on
	// the page (the worker's OS user on the embedded server).
	DefaultBy string
	// Identify, when set, names the person from the request (a deployed
	// worker's token list): that name is used and the page's name field is
	// off. ok false means the request names nobody: it is refused.
	Identify func(r *http.Request) (name string, ok bool)
	// AnswerKey is the workers' answer key (internal/answerkey). With
	// Identify, the page vouches for the person it identified: their
	// answers count towards the approvals a call may need (settings
	// "approvals", where their token's name is their identity). Typed
	// names never count.
	AnswerKey []byte
	// Stream, when set, is where this process's model activities publish
	// answers as they are written: the job page shows them.
	Stream *stream.Hub
	Logger *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Handler serves the page, its event stream, its static files and the
// answers.
type Handler struct {
	o         Options
	collector *Collector
	temporal  client.Client
	csrfKey   []byte
	mux       *http.ServeMux
	origin    *http.CrossOriginProtection
}

// NewHandler serves the snapshot of k and answers through c.
func NewHandler(k *Collector, c client.Client, o Options) (*Handler, error) {
	if o.Prefix == "" {
		o.Prefix = "/custos/"
	}
	if !strings.HasPrefix(o.Prefix, "/") || !strings.HasSuffix(o.Prefix, "/") {
		return nil, fmt.Errorf("inbox: prefix %q: want a path like /custos/", o.Prefix)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.DefaultBy == "" {
		o.DefaultBy = "someone"
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("inbox: CSRF key: %w", err)
	}
	h := &Handler{o: o, collector: k, temporal: c, csrfKey: key, mux: http.NewServeMux(), origin: http.NewCrossOriginProtection()}
	p := o.Prefix
	h.mux.HandleFunc("GET "+p+"{$}", h.page)
	h.mux.HandleFunc("GET "+p+"list", h.list)
	h.mux.HandleFunc("GET "+p+"events", h.events)
	h.mux.HandleFunc("POST "+p+"decide", h.decide)
	h.mux.HandleFunc("POST "+p+"revoke", h.revoke)
	h.mux.HandleFunc("POST "+p+"message", h.message)
	h.mux.HandleFunc("GET "+p+"jobs/{id}", h.jobPage)
	h.mux.HandleFunc("GET "+p+"jobs/{id}/stream", h.jobStream)
	static, _ := fs.Sub(staticFS, "static")
	h.mux.Handle("GET "+p+"static/", http.StripPrefix(p+"static/", http.FileServerFS(static)))
	return h, nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// No inline script or style, nothing from elsewhere, no framing: text
	// the model chose that got past escaping still could not run.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-store")
	if h.o.Identify != nil {
		if _, ok := h.o.Identify(r); !ok {
			http.Error(w, "custos inbox: not signed in", http.StatusUnauthorized)
			return
		}
	}
	h.mux.ServeHTTP(w, r)
}

// csrfToken is the session's token: an HMAC of its cookie, so it needs no
// store and means nothing for another session. "" without a session.
func (h *Handler) csrfToken(r *http.Request) string {
	c, err := r.Cookie(h.o.SessionCookie)
	if h.o.SessionCookie == "" || err != nil || c.Value == "" {
		return ""
	}
	m := hmac.New(sha256.New, h.csrfKey)
	m.Write([]byte(c.Value))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfHeader carries the token on POSTs: a header a page on another
// origin cannot set without a CORS preflight this handler never grants.
const csrfHeader = "X-Custos-CSRF"

// checkPost refuses a POST from another origin (Sec-Fetch-Site, Origin) or
// without the session's token.
func (h *Handler) checkPost(w http.ResponseWriter, r *http.Request) bool {
	if err := h.origin.Check(r); err != nil {
		http.Error(w, "custos inbox: cross-origin request refused", http.StatusForbidden)
		return false
	}
	want := h.csrfToken(r)
	got := r.Header.Get(csrfHeader)
	if want == "" || !hmac.Equal([]byte(want), []byte(got)) {
		http.Error(w, "custos inbox: missing or stale page token: reload the page", http.StatusForbidden)
		return false
	}
	return true
}

// by is who an answer is from: the verified name, else the name the
// person typed (unverified), else the default.
func (h *Handler) by(r *http.Request, typed string) string {
	if h.o.Identify != nil {
		name, _ := h.o.Identify(r)
		return name
	}
	if typed = strings.TrimSpace(typed); typed != "" {
		return display.Line(typed, maxName)
	}
	return h.o.DefaultBy
}

func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	v := pageView{Prefix: h.o.Prefix, CSRF: h.csrfToken(r), By: h.o.DefaultBy,
		List: newListView(h.collector.Fresh(r.Context()), h.o.Now())}
	if h.o.Identify != nil {
		v.By, _ = h.o.Identify(r)
		v.ByFixed = true
	}
	h.render(w, "page", v)
}

// list is the list alone, for a page whose event stream is not available
// (it polls), and for tests.
func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	h.render(w, "list", newListView(h.collector.Fresh(r.Context()), h.o.Now()))
}

func (h *Handler) render(w http.ResponseWriter, name string, v any) {
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, name, v); err != nil {
		h.o.Logger.Error("inbox: rendering", "template", name, "error", err)
		http.Error(w, "custos inbox: rendering failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

// RenderList renders the list of a snapshot as the page embeds it (for
// the benchmark of a page with many calls).
func RenderList(w io.Writer, s Snapshot, now time.Time) error {
	return templates.ExecuteTemplate(w, "list", newListView(s, now))
}

// heartbeat keeps idle event streams open through proxies and lets the
// handler notice a browser that went away.
const heartbeat = 15 * time.Second

// events is a server-sent event stream: the rendered list whenever the
// snapshot changes (and once at the start), as "list" events.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "custos inbox: streaming unsupported", http.StatusInternalServerError)
		return
	}
	changed, stop := h.collector.Subscribe()
	defer stop()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	var sent uint64
	for {
		if s := h.collector.Snapshot(); s.Version != sent || sent == 0 {
			if err := writeEvent(w, s, h.o.Now()); err != nil {
				return
			}
			sent = s.Version
			flusher.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		case <-tick.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// writeEvent writes one "list" event: the rendered list, a data line per
// line (SSE data cannot hold a bare line feed).
func writeEvent(w io.Writer, s Snapshot, now time.Time) error {
	var b bytes.Buffer
	if err := RenderList(&b, s, now); err != nil {
		return err
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "event: list\nid: %d\n", s.Version)
	for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		out.WriteString("data: ")
		out.WriteString(strings.TrimRight(l, "\r"))
		out.WriteByte('\n')
	}
	out.WriteByte('\n')
	_, err := w.Write(out.Bytes())
	return err
}

// maxBody bounds a POST's body: 500 answers with reasons fit easily.
const maxBody = 1 << 20

// decideRequest is what the page POSTs to decide.
type decideRequest struct {
	By      string   `json:"by"`
	Answers []Answer `json:"answers"`
}

func (h *Handler) decide(w http.ResponseWriter, r *http.Request) {
	if !h.checkPost(w, r) {
		return
	}
	var req decideRequest
	if err := decodeJSON(w, r, &req); err != nil {
		http.Error(w, "custos inbox: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(req.Answers) == 0 || len(req.Answers) > maxBatch {
		http.Error(w, fmt.Sprintf("custos inbox: answer 1 to %d calls at once, not %d", maxBatch, len(req.Answers)), http.StatusBadRequest)
		return
	}
	by := h.by(r, req.By)
	out := answerAll(r.Context(), h.temporal, req.Answers, by, h.vouch(by))
	// The answered calls leave every open page at once, not at the next
	// tick; in the background, so the person's outcome does not wait for a
	// round of status queries (the page hides what it answered meanwhile).
	h.collector.Kick()
	writeJSON(w, map[string]any{"outcomes": out})
}

// vouch signs the identity of a person the gate's token named, or is nil
// when the page knows nobody for sure (a typed name, no key).
func (h *Handler) vouch(by string) func(string, *jobapi.ApprovalDecision) {
	if h.o.Identify == nil || len(h.o.AnswerKey) == 0 {
		return nil
	}
	return func(job string, d *jobapi.ApprovalDecision) {
		sig, err := answerkey.Sign(h.o.AnswerKey, answerkey.Claim{Job: job, Call: d.CallID, Decision: d.Decision, Channel: Channel, ID: by})
		if err == nil {
			d.Verified = &jobapi.VerifiedIdentity{ID: by, Sig: sig}
		}
	}
}

type revokeRequest struct {
	By    string `json:"by"`
	Job   string `json:"job"`
	Grant string `json:"grant"`
}

func (h *Handler) revoke(w http.ResponseWriter, r *http.Request) {
	if !h.checkPost(w, r) {
		return
	}
	var req revokeRequest
	if err := decodeJSON(w, r, &req); err != nil || req.Job == "" || req.Grant == "" {
		http.Error(w, "custos inbox: want {job, grant}", http.StatusBadRequest)
		return
	}
	o := revoke(r.Context(), h.temporal, req.Job, req.Grant, h.by(r, req.By))
	h.collector.Kick()
	writeJSON(w, map[string]any{"outcomes": []Outcome{o}})
}

func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("malformed request: %w", err)
	}
	if dec.More() {
		return errors.New("malformed request: more than one JSON value")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func secret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("inbox: random secret: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
