package approval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// RetentionSettings is the "retention" section of settings: how long
// custos keeps what it writes into its state directory, and an optional
// cap on the whole. Only the user's own settings may set it (UserOnly): it
// decides what of every workspace is removed, and a workspace must not
// shorten the life of the audits that judge it.
//
//	"retention": {"jobFiles": "720h", "caches": "336h", "quarantine": "720h", "audits": "8760h", "maxBytes": 10737418240}
type RetentionSettings struct {
	// JobFiles is how long an ended job's transcript and blobs are kept
	// (0: the default, 30 days).
	JobFiles Duration `json:"jobFiles,omitempty"`
	// Caches is how long a workspace's sandbox caches are kept unused
	// (0: 14 days).
	Caches Duration `json:"caches,omitempty"`
	// Quarantine is how long what the host guard set aside is kept (0: 30 days).
	Quarantine Duration `json:"quarantine,omitempty"`
	// Audits is how long an ended job's audit is kept (0: 365 days).
	Audits Duration `json:"audits,omitempty"`
	// MaxBytes caps the state directory (0: no cap): past it the oldest
	// removable entries go first.
	MaxBytes int64 `json:"maxBytes,omitempty"`
}

// Retention defaults: safe for a laptop, long enough that nobody loses a
// conversation they meant to go back to within a month.
const (
	DefaultRetainJobFiles   = 30 * 24 * time.Hour
	DefaultRetainCaches     = 14 * 24 * time.Hour
	DefaultRetainQuarantine = 30 * 24 * time.Hour
	DefaultRetainAudits     = 365 * 24 * time.Hour
)

// WithDefaults fills the durations left unset.
func (r RetentionSettings) WithDefaults() RetentionSettings {
	def := func(d *Duration, v time.Duration) {
		if *d == 0 {
			*d = Duration(v)
		}
	}
	def(&r.JobFiles, DefaultRetainJobFiles)
	def(&r.Caches, DefaultRetainCaches)
	def(&r.Quarantine, DefaultRetainQuarantine)
	def(&r.Audits, DefaultRetainAudits)
	return r
}

// minRetention refuses a retention so short it would remove what a job
// that just ended may still be asked about (a `say` to an ended job goes
// on from its transcript).
const minRetention = time.Hour

// parseRetention reads "retention" strictly: a typo must not leave the
// default in place silently, nor a negative age remove everything.
func parseRetention(raw json.RawMessage) (RetentionSettings, error) {
	var r RetentionSettings
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return RetentionSettings{}, fmt.Errorf("%w: retention: %w", ErrBadSettings, err)
	}
	for _, f := range []struct {
		name string
		d    Duration
	}{{"jobFiles", r.JobFiles}, {"caches", r.Caches}, {"quarantine", r.Quarantine}, {"audits", r.Audits}} {
		if f.d != 0 && time.Duration(f.d) < minRetention {
			return RetentionSettings{}, fmt.Errorf("%w: retention.%s: must be at least %s", ErrBadSettings, f.name, minRetention)
		}
	}
	if r.MaxBytes < 0 {
		return RetentionSettings{}, fmt.Errorf("%w: retention.maxBytes: must not be negative", ErrBadSettings)
	}
	return r, nil
}

// mergeRetention takes what the more specific file sets. Only the user's
// file reaches here with a retention section (UserOnly drops a
// workspace's), so this is the user's word.
func mergeRetention(base, over RetentionSettings) RetentionSettings {
	out := base
	for _, p := range []struct{ dst, src *Duration }{
		{&out.JobFiles, &over.JobFiles}, {&out.Caches, &over.Caches},
		{&out.Quarantine, &over.Quarantine}, {&out.Audits, &over.Audits},
	} {
		if *p.src != 0 {
			*p.dst = *p.src
		}
	}
	if over.MaxBytes != 0 {
		out.MaxBytes = over.MaxBytes
	}
	return out
}
