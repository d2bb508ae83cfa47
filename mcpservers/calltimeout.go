package mcpservers

import (
	"encoding/json"
	"fmt"
	"time"
)

// DefaultCallTimeout bounds a call of a server whose entry sets no
// "callTimeout"; MaxCallTimeout is the most an entry may set.
const (
	DefaultCallTimeout = 10 * time.Minute
	MaxCallTimeout     = 24 * time.Hour
)

// parseCallTimeout reads an entry's "callTimeout": a duration with its
// unit ("90s", "5m", "1h30m"). A bare number is refused rather than
// guessed at: other clients' "timeout" keys count seconds or milliseconds.
func parseCallTimeout(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf(`"callTimeout" is a duration with its unit, such as "90s" or "5m", not %s`, raw)
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > MaxCallTimeout {
		return 0, fmt.Errorf(`"callTimeout" %q is not a duration between 1ms and %s (such as "90s" or "5m")`, s, MaxCallTimeout)
	}
	return d, nil
}

// callTimeout is how long one call of srv may take.
func (s Server) callTimeout() time.Duration {
	if s.CallTimeout > 0 {
		return s.CallTimeout
	}
	return DefaultCallTimeout
}
