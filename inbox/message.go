package inbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/display"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// MessageChannel is what the page's messages name as where they came from.
const MessageChannel = "inbox"

// messageRequest is what the page POSTs to message: the job's next
// message. ID, made by the page, makes a resent request count once.
type messageRequest struct {
	By   string `json:"by"`
	Job  string `json:"job"`
	Text string `json:"text"`
	ID   string `json:"id,omitempty"`
}

// maxMessageID bounds the page's message ID.
const maxMessageID = 100

// message sends a job its next message, from the page's person, through
// the message Update, and says what became of it. A message is
// conversation: the page sends its text as typed and reads nothing in it.
func (h *Handler) message(w http.ResponseWriter, r *http.Request) {
	if !h.checkPost(w, r) {
		return
	}
	var req messageRequest
	if err := decodeJSON(w, r, &req); err != nil || req.Job == "" {
		http.Error(w, "custos inbox: want {job, text}", http.StatusBadRequest)
		return
	}
	o := Outcome{Job: req.Job}
	switch {
	case strings.TrimSpace(req.Text) == "":
		o.Text = "not sent: the message is empty"
	case len(req.Text) > jobapi.MaxMessageBytes:
		o.Text = fmt.Sprintf("not sent: the message has %d bytes, more than a job takes (%d)", len(req.Text), jobapi.MaxMessageBytes)
	case len(req.ID) > maxMessageID:
		o.Text = "not sent: malformed message ID"
	default:
		m := jobapi.Message{Text: req.Text, By: h.by(r, req.By), Channel: MessageChannel}
		if req.ID != "" {
			m.ID = MessageChannel + ":" + req.ID
		}
		o = sendMessage(r.Context(), h.temporal, req.Job, m)
	}
	h.collector.Kick()
	writeJSON(w, map[string]any{"outcomes": []Outcome{o}})
}

// sendMessage is the message Update, waited for.
func sendMessage(ctx context.Context, c client.Client, job string, m jobapi.Message) Outcome {
	o := Outcome{Job: job}
	ctx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	var res jobapi.MessageResult
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: job, UpdateName: jobapi.MessageUpdate,
		UpdateID: m.ID, Args: []any{m}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if err != nil {
		o.Text = messageRefusal(err, job)
		return o
	}
	o.Applied, o.Text = true, messageText(job, m.By, res)
	return o
}

// messageText says where a message stands: "message 3 to job j, by alice
// via inbox: queued; the job reads it after what it runs now (2 waiting)".
func messageText(job, by string, r jobapi.MessageResult) string {
	s := fmt.Sprintf("message %d to job %s, by %s", r.Seq, display.Line(job, maxName), who(by, MessageChannel))
	switch r.Delivery {
	case "next":
		return s + ": delivered; the job works on it now"
	case "queued":
		return s + fmt.Sprintf(": queued; the job reads it after what it runs now (%d waiting)", r.Queued)
	case "duplicate":
		return s + ": already received, counted once"
	}
	return s + ": sent"
}

// messageRefusal says why a message was not taken.
func messageRefusal(err error, job string) string {
	if jobEnded(err) {
		return fmt.Sprintf("not delivered: job %s has ended", display.Line(job, maxName))
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return display.Line(ae.Message(), maxReason)
	}
	return "not delivered: could not reach the job: " + display.Line(err.Error(), maxReason)
}
