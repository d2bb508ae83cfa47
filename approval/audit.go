package approval

import (
	"encoding/json"
	"time"

	"github.com/custos-dev/custos/hooks"
)

// AuditRecord is one approval decision (layer 6), or a notable event around
// decisions. The workflow produces them (Time from workflow.Now), the session
// activity appends them to the job's audit file (audit/<job>.jsonl in the
// state directory, api.JobFiles) and the "audit" query returns them.
type AuditRecord struct {
	// Seq orders records within a job; the file sink uses it to stay
	// idempotent when Temporal retries a save.
	Seq      int             `json:"seq"`
	Time     time.Time       `json:"time"`
	JobID    string          `json:"jobId"`
	CallID   string          `json:"callId,omitempty"`
	Tool     string          `json:"tool,omitempty"`
	Input    json.RawMessage `json:"input,omitempty"`
	Decision Decision        `json:"decision,omitempty"`
	Layer    Layer           `json:"layer,omitempty"`
	// Rule is the matched rule (or the rule an Always/Never answer added);
	// System marks a system rule, which nothing overrides.
	Rule   string `json:"rule,omitempty"`
	System bool   `json:"system,omitempty"`
	// Hook names the hook that decided or rewrote the input.
	Hook   string `json:"hook,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Modified is set when a hook rewrote the input; Input is then the new
	// input and OriginalInput what the model asked for.
	Modified      bool            `json:"modified,omitempty"`
	OriginalInput json.RawMessage `json:"originalInput,omitempty"`
	// Approver is who answered at layer 5 ("timeout" when nobody did);
	// Channel where the answer came from (cli, slack, web-ui, temporal …).
	Approver string `json:"approver,omitempty"`
	Channel  string `json:"channel,omitempty"`
	// WaitMillis is how long the call waited for a person.
	WaitMillis int64 `json:"waitMillis,omitempty"`
	// Mode is the job's permission mode when the call was decided, and
	// HookDecision what the layer-4 hook named in Hook said (allow, deny,
	// ask; "" for a rewrite alone): `policy replay` judges a call again with
	// both. Records from before they were kept have neither.
	Mode         Mode           `json:"mode,omitempty"`
	HookDecision hooks.Decision `json:"hookDecision,omitempty"`
	// Env is, on the job's first record (the "sandbox" event), what the
	// policy knew of where the job runs (approval.Env), for `policy replay`.
	Env *Env `json:"env,omitempty"`
	// Event marks records that are not decisions: "signal-ignored",
	// "answer-refused", "mode-changed", "mode-refused", "rule-learned",
	// "notify-failed", "grant-given", "grant-ended", "escalated".
	Event string `json:"event,omitempty"`
	// Grant is the grant a call was allowed by (Layer human, Approver the
	// person who gave it), or the grant a grant-given/grant-ended record
	// is about.
	Grant *GrantInfo `json:"grant,omitempty"`
	// By names the person whose own call this was (starter tool), through
	// the same six layers as the model's; "" for the model's calls.
	By string `json:"by,omitempty"`
}
