package jobapi

import "time"

// Names of the conversation's handlers: after its answer a job waits for
// the next message instead of ending.
const (
	// MessageUpdate and MessageSignal carry a Message: the Update answers
	// with a MessageResult (whether it counted, and where it stands), the
	// signal is for clients that cannot wait (the Web UI's signal form).
	MessageUpdate = "message"
	MessageSignal = "message"
	// InterruptUpdate stops what the job runs now (the model call, the
	// running tools), denies its waiting calls as interrupted and hands
	// the model its text at once: an Interrupt, answered by an
	// InterruptResult.
	InterruptUpdate = "interrupt"
	// EndUpdate ends the job (an End): when it works, what runs is
	// interrupted first.
	EndUpdate = "end"
	// RewindUpdate cuts the conversation at a turn (a Rewind) while the
	// job waits for a message, and audits and announces a rewind of its
	// files: answered by a RewindResult.
	RewindUpdate = "rewind"
)

// Rewind is the rewind Update's input: the turn To whose end the job goes
// back to, whether its Conversation is cut there, and what the rewind of
// its files did (Files, said by the command that did it, for the audit).
type Rewind struct {
	To           int    `json:"to"`
	Conversation bool   `json:"conversation"`
	Files        string `json:"files,omitempty"`
	By           string `json:"by,omitempty"`
	Channel      string `json:"channel,omitempty"`
}

// RewindResult is the conversation after a rewind: Messages in all, the
// last answer the one of turn Turn.
type RewindResult struct {
	Messages int `json:"messages"`
	Turn     int `json:"turn"`
}

// Defaults of a conversation.
const (
	// DefaultIdleLimit is how long a job waits for its next message before
	// it ends by itself (settings "conversation": {"idleLimit": "…"}).
	DefaultIdleLimit = 7 * 24 * time.Hour
	// MaxMessageBytes caps one message's text: it travels in history.
	MaxMessageBytes = 64 << 10
)

// Phases of a job people see in status (State) besides the working ones.
const (
	PhaseWaitingMessage = "waiting for a message"
	PhaseDone           = "done"
	PhaseEnded          = "ended"
)

// Message is a person's turn in the conversation. It is conversation, never
// authority: whatever it says, it changes no mode, rule or pending call.
type Message struct {
	Text string `json:"text"`
	// ID makes sending twice count once (a client's retry): "" gets one.
	ID string `json:"id,omitempty"`
	// By names the person; Channel where the message came from (cli,
	// slack, inbox, temporal …; "temporal" when unset).
	By      string `json:"by,omitempty"`
	Channel string `json:"channel,omitempty"`
	// Refused is set by a channel that verified the person and does not
	// let them speak to this job: recorded, never delivered.
	Refused string `json:"refused,omitempty"`
}

// MessageResult says what became of a message.
type MessageResult struct {
	ID string `json:"id"`
	// Seq numbers the job's messages (the task is 1).
	Seq int `json:"seq"`
	// Delivery is "next" (the job was waiting: the model gets it now),
	// "queued" (the job works: the model gets it with its next call, after
	// the running tools' results) or "duplicate" (an earlier message had
	// this ID; nothing was added).
	Delivery string `json:"delivery"`
	// Queued counts the messages waiting for the model, this one included.
	Queued int `json:"queued"`
}

// Interrupt is the interrupt Update's input: Text, when set, is a message
// the model gets at once.
type Interrupt struct {
	Text    string `json:"text,omitempty"`
	ID      string `json:"id,omitempty"`
	By      string `json:"by,omitempty"`
	Channel string `json:"channel,omitempty"`
}

// InterruptResult says what the interrupt stopped.
type InterruptResult struct {
	// Stopped names what ran: "the model call", "Bash c1", … (empty when
	// the job was waiting for a message: nothing ran).
	Stopped []string `json:"stopped,omitempty"`
	// Denied are the calls that waited for approval and were denied.
	Denied []string `json:"denied,omitempty"`
	// Message is the text's result, when the interrupt carried one.
	Message *MessageResult `json:"message,omitempty"`
}

// End is the end Update's input.
type End struct {
	By      string `json:"by,omitempty"`
	Channel string `json:"channel,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// EndResult is what the end Update answers: the job's last state.
type EndResult struct {
	Turns      int    `json:"turns"`
	LastAnswer string `json:"lastAnswer,omitempty"`
}

// QueuedMessage is a message the model has not seen yet, as the job keeps it.
type QueuedMessage struct {
	Message
	Seq int       `json:"seq"`
	At  time.Time `json:"at"`
	// Interrupt marks a message that came with an interrupt.
	Interrupt bool `json:"interrupt,omitempty"`
}
