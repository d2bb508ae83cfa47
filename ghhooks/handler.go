// Package ghhooks lets a GitHub issue comment start or continue a custos
// job: the worker's POST /hooks/github endpoint verifies GitHub's
// signature, reads issue_comment events that mention custos on the
// configured repositories, and starts the issue's job (or sends it the
// comment as a message, as `starter say` does); a Notifier posts the job's
// answers back on the issue. What GitHub sends is conversation, never
// authority: the job gets the user's own mode and rules.
package ghhooks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Path is where the endpoint is served.
const Path = "/hooks/github"

// MaxBody is the largest delivery read (GitHub caps payloads at 25 MB;
// an issue comment's is far smaller).
const MaxBody = 1 << 20

// GitHub's headers.
const (
	HeaderSignature = "X-Hub-Signature-256"
	HeaderEvent     = "X-GitHub-Event"
	HeaderDelivery  = "X-GitHub-Delivery"
)

// Dispatcher starts or continues an issue's job (Jobs on Temporal).
type Dispatcher interface {
	// Dispatch asks admit before it starts a run, and returns its error.
	Dispatch(ctx context.Context, c Comment, admit Admit) (Outcome, error)
	// Running lists the GitHub-started jobs open now.
	Running(ctx context.Context) ([]string, error)
}

// Handler serves Path.
type Handler struct {
	cfg    Config
	jobs   Dispatcher
	logger *slog.Logger
	seen   *recent
	lim    limiter
	// busy posts "custos is busy" on an issue (nil without a token).
	busy     *Notifier
	busySent *recent
	bg       sync.WaitGroup
}

// NewHandler serves cfg's repositories through jobs. A cfg without a
// secret refuses every delivery (and says so in the log now).
func NewHandler(cfg Config, jobs Dispatcher, logger *slog.Logger) *Handler {
	if logger == nil {
		logger = slog.Default()
	}
	if cfg.Secret == "" {
		logger.Error("github hooks: triggers.github.secret is not set in the user's settings: every delivery is refused")
	}
	h := &Handler{cfg: cfg, jobs: jobs, logger: logger, seen: newRecent(1024), busySent: newRecent(1024),
		lim: limiter{pending: map[string]time.Time{}, told: map[string]time.Time{}}}
	if cfg.Token != "" {
		h.busy = NewNotifier(cfg, nil)
	}
	return h
}

// Sign is X-Hub-Signature-256 of body under secret, as GitHub computes it.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify says whether sig is body's signature under secret, in constant
// time.
func Verify(secret, sig string, body []byte) bool {
	if secret == "" {
		return false
	}
	return hmac.Equal([]byte(sig), []byte(Sign(secret, body)))
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "only POST", http.StatusMethodNotAllowed)
		return
	}
	if h.cfg.Secret == "" {
		h.logger.Warn("github hooks: delivery refused: no triggers.github.secret", "delivery", r.Header.Get(HeaderDelivery))
		http.Error(w, "custos has no webhook secret configured: every delivery is refused", http.StatusUnauthorized)
		return
	}
	sig := r.Header.Get(HeaderSignature)
	if sig == "" {
		http.Error(w, "no "+HeaderSignature, http.StatusUnauthorized)
		return
	}
	if r.ContentLength > MaxBody {
		http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		http.Error(w, "cannot read the payload", http.StatusBadRequest)
		return
	}
	if len(body) > MaxBody {
		http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
		return
	}
	if !Verify(h.cfg.Secret, sig, body) {
		h.logger.Warn("github hooks: bad signature", "delivery", r.Header.Get(HeaderDelivery), "remote", r.RemoteAddr)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	h.serveVerified(w, r, body)
}

// serveVerified handles a delivery whose signature holds.
func (h *Handler) serveVerified(w http.ResponseWriter, r *http.Request, body []byte) {
	event, delivery := r.Header.Get(HeaderEvent), r.Header.Get(HeaderDelivery)
	log := h.logger.With("event", event, "delivery", delivery)
	if event == "ping" {
		log.Info("github hooks: ping")
		reply(w, http.StatusOK, map[string]string{"action": "pong"})
		return
	}
	if event != "issue_comment" {
		h.ignore(w, log, "not an issue_comment event")
		return
	}
	if delivery == "" || len(delivery) > 100 {
		http.Error(w, "no usable "+HeaderDelivery, http.StatusBadRequest)
		return
	}
	payload, err := formPayload(r, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c, why, err := h.comment(payload)
	if err != nil {
		http.Error(w, "not an issue_comment payload: "+err.Error(), http.StatusBadRequest)
		return
	}
	if why != "" {
		h.ignore(w, log, why)
		return
	}
	c.Delivery = delivery
	h.dispatch(w, r.Context(), log, c)
}

func (h *Handler) dispatch(w http.ResponseWriter, ctx context.Context, log *slog.Logger, c Comment) {
	if h.seen.has(c.Delivery) {
		log.Info("github hooks: redelivery counted once", "job", JobID(c.Repo, c.Issue))
		reply(w, http.StatusAccepted, Outcome{Job: JobID(c.Repo, c.Issue), Action: Duplicate, Detail: "this delivery was counted already"})
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	job := JobID(c.Repo, c.Issue)
	out, err := h.jobs.Dispatch(ctx, c, h.admit)
	if err != nil || (out.Action != Started && out.Action != Resumed) {
		h.lim.forget(job)
	}
	var busy *BusyError
	if errors.As(err, &busy) {
		// Not a delivery taken: a redelivery once a job ended may start.
		log.Warn("github hooks: refused: custos is busy", "repo", c.Repo, "issue", c.Issue, "by", c.Author, "job", job, "open", busy.Open, "max", busy.Max)
		h.tellBusy(c, busy)
		reply(w, http.StatusOK, Outcome{Job: job, Action: Busy, Detail: busy.Error()})
		return
	}
	if err != nil {
		log.Error("github hooks: cannot start or continue the job", "repo", c.Repo, "issue", c.Issue, "err", err)
		http.Error(w, "custos could not start or continue the job; redeliver later", http.StatusBadGateway)
		return
	}
	h.seen.add(c.Delivery)
	log.Info("github hooks: comment taken", "repo", c.Repo, "issue", c.Issue, "by", c.Author, "job", out.Job, "action", out.Action, "detail", out.Detail)
	reply(w, http.StatusAccepted, out)
}

// limiter bounds the GitHub-started jobs open at once: starts are
// decided one at a time, on what visibility lists and the starts this
// endpoint made that visibility may not show yet.
type limiter struct {
	mu      sync.Mutex
	pending map[string]time.Time // job → when this endpoint admitted its start
	told    map[string]time.Time // job → when its issue was told custos is busy
}

// pendingFor is how long an admitted start counts without visibility's
// word (visibility shows a start within seconds).
const pendingFor = time.Minute

// busyQuiet is how long an issue told custos is busy is not told again.
const busyQuiet = time.Hour

// admit lets job start a run while fewer than the configured maximum of
// GitHub-started jobs are open; it fails closed when they cannot be
// counted.
func (h *Handler) admit(ctx context.Context, job string) error {
	h.lim.mu.Lock()
	defer h.lim.mu.Unlock()
	ids, err := h.jobs.Running(ctx)
	if err != nil {
		return fmt.Errorf("count the open GitHub jobs: %w", err)
	}
	open := map[string]bool{}
	for _, id := range ids {
		open[id] = true
		delete(h.lim.pending, id) // visibility has it: its word counts now
	}
	now := time.Now()
	for id, at := range h.lim.pending {
		if now.Sub(at) > pendingFor {
			delete(h.lim.pending, id)
			continue
		}
		open[id] = true
	}
	delete(open, job)
	if len(open) >= h.cfg.Max() {
		return &BusyError{Open: len(open), Max: h.cfg.Max()}
	}
	h.lim.pending[job] = now
	return nil
}

func (l *limiter) forget(job string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.pending, job)
}

// tellBusy posts on c's issue that custos is busy, once per delivery and
// at most once an hour per issue, in the background (GitHub wants its
// answer within 10 s); without a token it posts nothing.
func (h *Handler) tellBusy(c Comment, busy *BusyError) {
	job := JobID(c.Repo, c.Issue)
	h.lim.mu.Lock()
	quiet := h.busy == nil || h.busySent.has(c.Delivery) || time.Since(h.lim.told[job]) < busyQuiet
	if !quiet {
		h.busySent.add(c.Delivery)
		h.lim.told[job] = time.Now()
	}
	h.lim.mu.Unlock()
	if quiet {
		return
	}
	h.bg.Add(1)
	go func() {
		defer h.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := h.busy.Busy(ctx, c.Repo, c.Issue, c.Delivery, busy); err != nil {
			h.logger.Error("github hooks: cannot say on the issue that custos is busy", "repo", c.Repo, "issue", c.Issue, "err", err)
		}
	}()
}

func (h *Handler) ignore(w http.ResponseWriter, log *slog.Logger, why string) {
	log.Info("github hooks: ignored", "why", why)
	reply(w, http.StatusOK, map[string]string{"action": "ignored", "why": why})
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// formPayload is the JSON of a delivery: the body, or its payload field
// when the hook sends application/x-www-form-urlencoded.
func formPayload(r *http.Request, body []byte) ([]byte, error) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return body, nil
	}
	v, err := url.ParseQuery(string(body))
	if err != nil || v.Get("payload") == "" {
		return nil, fmt.Errorf("a form delivery without a payload field")
	}
	return []byte(v.Get("payload")), nil
}
