package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/notify"
)

// Event names, in the payload's "event" field and the X-Custos-Event header.
const (
	EventPending = "pending"
	EventDecided = "decided"
	EventNotice  = "notice"
	// EventEscalation: a call still waits, a step of approval.escalation.
	EventEscalation = "escalation"
	// EventAnswer: the job answered and waits for the next message.
	EventAnswer = "answer"
	// EventMessage: a person's message was added to a job.
	EventMessage = "message"
)

// Bounds of a conversation's text (an answer, a message) as a delivery
// shows it: its lines, and each line's characters.
const (
	maxTextLines     = 2000
	maxTextLineChars = 2000
)

// NoticeEvent is the body of a "notice" delivery.
type NoticeEvent struct {
	Event    string `json:"event"`
	Delivery string `json:"delivery"`
	notify.Notice
}

// PendingEvent is the body of a "pending" delivery: the notify.Pending
// fields (among them "answer", which says how to answer through Temporal)
// with the event and delivery ID.
type PendingEvent struct {
	Event    string `json:"event"`
	Delivery string `json:"delivery"`
	notify.Pending
}

// DecidedEvent is the body of a "decided" delivery.
type DecidedEvent struct {
	Event    string `json:"event"`
	Delivery string `json:"delivery"`
	notify.Decided
}

// Notifier delivers events to every configured URL.
type Notifier struct {
	cfg    Config
	client *http.Client

	// done remembers deliveries a URL accepted, so an activity retried
	// because another URL (or channel) failed does not send them again
	// from this process. Receivers still dedupe on X-Custos-Delivery: a
	// retry on another worker, or after a lost response, sends again.
	mu   sync.Mutex
	done map[string]bool
}

// maxReason bounds a reason as a delivery shows it, in characters.
const maxReason = 2000

// maxDone bounds the memory of accepted deliveries.
const maxDone = 10000

// New builds a notifier.
func New(cfg Config) *Notifier {
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	return &Notifier{cfg: cfg, done: map[string]bool{},
		client: &http.Client{
			Timeout: cfg.Timeout,
			// A redirect would send the signed body somewhere nobody
			// configured; it fails the delivery instead.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}}
}

// Name is the key of the references.
func (n *Notifier) Name() string { return "webhook" }

// Pending delivers a "pending" event. The fields meant to be read by people
// (summary, reason, preview) are display text, rendered by package display:
// escape sequences, control and invisible characters escaped, long text
// shortened to its head and tail. Everything else is data, raw: input is
// the exact JSON the tool runs with, callId and jobId what an answer names;
// a receiver that shows them must escape them itself.
func (n *Notifier) Pending(ctx context.Context, p notify.Pending) (string, error) {
	id := deliveryID(EventPending, p.JobID, p.CallID, p.AskedAt)
	p.Summary, p.Preview, p.Reason = display.SafeLine(p.Summary), display.Safe(p.Preview), display.Line(p.Reason, maxReason)
	return id, n.deliver(ctx, EventPending, id, PendingEvent{Event: EventPending, Delivery: id, Pending: p})
}

// Decided delivers a "decided" event.
func (n *Notifier) Decided(ctx context.Context, d notify.Decided, _ string) error {
	id := deliveryID(EventDecided, d.JobID, d.CallID, d.At)
	d.Refs = nil // other channels' references are nobody else's business
	d.Summary, d.Reason = display.SafeLine(d.Summary), display.Line(d.Reason, maxReason)
	return n.deliver(ctx, EventDecided, id, DecidedEvent{Event: EventDecided, Delivery: id, Decided: d})
}

// Notice delivers a "notice" event (the job waits for the model endpoint,
// or goes on again), an "answer" event (the job answered) or a "message"
// event (someone's message was added to the job). An answer's or a
// message's text is conversation, for people: rendered by package display
// with its lines kept, and nothing in it means anything to custos.
func (n *Notifier) Notice(ctx context.Context, nt notify.Notice) error {
	event := EventNotice
	switch nt.Kind {
	case notify.KindAnswer:
		event = EventAnswer
	case notify.KindMessage:
		event = EventMessage
	}
	if event == EventNotice {
		id := deliveryID(EventNotice, nt.JobID, nt.Kind, nt.At)
		nt.Text, nt.Fix, nt.Error = display.Line(nt.Text, maxReason), display.Line(nt.Fix, maxReason), display.Line(nt.Error, maxReason)
		return n.deliver(ctx, event, id, NoticeEvent{Event: event, Delivery: id, Notice: nt})
	}
	// Two messages may carry the same time (one workflow task adds both):
	// who and what tell them apart, the same on every retry.
	id := deliveryID(event, nt.JobID, nt.Kind+"\x00"+nt.By+"\x00"+nt.Channel+"\x00"+nt.Text, nt.At)
	nt.Text = display.Block(nt.Text, maxTextLines, maxTextLineChars)
	nt.By, nt.Channel = display.Line(nt.By, maxReason), display.Line(nt.Channel, maxReason)
	nt.Fix, nt.Error = display.Line(nt.Fix, maxReason), display.Line(nt.Error, maxReason)
	return n.deliver(ctx, event, id, NoticeEvent{Event: event, Delivery: id, Notice: nt})
}

// EscalationEvent is the body of an "escalation" delivery.
type EscalationEvent struct {
	Event    string `json:"event"`
	Delivery string `json:"delivery"`
	notify.Escalation
}

// Escalate delivers an "escalation" event: to the step's URL when it names
// one (signed with the same secret), else to every configured URL.
func (n *Notifier) Escalate(ctx context.Context, e notify.Escalation) error {
	id := deliveryID(EventEscalation, e.JobID, fmt.Sprintf("%s\x00%d", e.CallID, e.Step), e.AskedAt)
	e.Summary, e.Preview, e.Reason = display.SafeLine(e.Summary), display.Safe(e.Preview), display.Line(e.Reason, maxReason)
	body := EscalationEvent{Event: EventEscalation, Delivery: id, Escalation: e}
	if e.To == "" {
		return n.deliver(ctx, EventEscalation, id, body)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("webhook: encode %s event: %w", EventEscalation, err)
	}
	return n.post(ctx, e.To, EventEscalation, id, b)
}

// deliveryID is stable across retries: the same event of the same call
// always has the same ID.
func deliveryID(event, job, call string, at time.Time) string {
	sum := sha256.Sum256([]byte(event + "\x00" + job + "\x00" + call + "\x00" + strconv.FormatInt(at.UnixNano(), 10)))
	return hex.EncodeToString(sum[:16])
}

// deliver posts body to every URL in parallel; any failure (network error,
// timeout, non-2xx) fails the activity so Temporal retries with backoff.
func (n *Notifier) deliver(ctx context.Context, event, id string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("webhook: encode %s event: %w", event, err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(n.cfg.URLs))
	for i, u := range n.cfg.URLs {
		key := id + " " + u
		n.mu.Lock()
		sent := n.done[key]
		n.mu.Unlock()
		if sent {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = n.post(ctx, u, event, id, body); errs[i] == nil {
				n.mu.Lock()
				if len(n.done) >= maxDone {
					clear(n.done)
				}
				n.done[key] = true
				n.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (n *Notifier) post(ctx context.Context, url, event, id string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", redact(url), err)
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "custos-webhook/1")
	req.Header.Set(HeaderEvent, event)
	req.Header.Set(HeaderDelivery, id)
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, Sign(n.cfg.Secret, ts, body))
	res, err := n.client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", redact(url), err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("webhook %s: %s event answered %s", redact(url), event, res.Status)
	}
	return nil
}

// redact keeps query strings (which often carry a relay's token) out of
// errors, logs and the job's events.
func redact(raw string) string {
	for i, c := range raw {
		if c == '?' {
			return raw[:i] + "?…"
		}
	}
	return raw
}
