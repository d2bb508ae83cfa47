package approval

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// SubagentSettings is the "subagents" section of settings:
//
//	"subagents": {"maxParallel": 4}
type SubagentSettings struct {
	// MaxParallel is how many subagents (Task calls) a job runs at once;
	// more wait their turn (0: the default, 4).
	MaxParallel int `json:"maxParallel,omitempty"`
}

// parseSubagents reads "subagents" strictly.
func parseSubagents(raw json.RawMessage) (SubagentSettings, error) {
	var s SubagentSettings
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return SubagentSettings{}, fmt.Errorf("%w: subagents: %w", ErrBadSettings, err)
	}
	if s.MaxParallel < 0 {
		return SubagentSettings{}, fmt.Errorf("%w: subagents.maxParallel: must not be negative", ErrBadSettings)
	}
	return s, nil
}

// mergeSubagents: the smaller limit wins, so a workspace only narrows.
func mergeSubagents(base, over SubagentSettings) SubagentSettings {
	return SubagentSettings{MaxParallel: tighter(base.MaxParallel, over.MaxParallel)}
}

// parseRetentionAndSubagents reads the "retention" and "subagents"
// sections, each when present.
func parseRetentionAndSubagents(top map[string]json.RawMessage, s *Settings) error {
	if raw, ok := top["retention"]; ok && string(raw) != "null" {
		r, err := parseRetention(raw)
		if err != nil {
			return err
		}
		s.Retention = r
	}
	if raw, ok := top["subagents"]; ok && string(raw) != "null" {
		sa, err := parseSubagents(raw)
		if err != nil {
			return err
		}
		s.Subagents = sa
	}
	return nil
}
