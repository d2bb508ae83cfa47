package activities

import (
	"encoding/json"
	"testing"
	"time"
)

// The workflow sizes a Bash activity's deadline by the rule the tool
// applies: a timeout the tool would refuse gets the default, since the tool
// answers it at once.
func TestBashTimeout(t *testing.T) {
	for _, tc := range []struct {
		input string
		want  time.Duration
	}{
		{`{"command":"ls"}`, 2 * time.Minute},
		{`{"command":"ls","timeout":5000}`, 5 * time.Second},
		{`{"command":"ls","timeout":600000}`, 10 * time.Minute},
		{`{"command":"ls","timeout":600001}`, 2 * time.Minute}, // refused by the tool
		{`{"command":"ls","timeout":0}`, 2 * time.Minute},      // refused by the tool
		{`{"command":"ls","timeout":1.5}`, 2 * time.Minute},    // not milliseconds: refused
		{`not json`, 2 * time.Minute},
	} {
		if got := BashTimeout(json.RawMessage(tc.input)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.input, got, tc.want)
		}
	}
}
