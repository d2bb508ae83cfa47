package testenv

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/custos-dev/custos/approval"
)

func TestDecisionsLeaveOutEvents(t *testing.T) {
	recs := []approval.AuditRecord{
		{Seq: 1, CallID: "w1", Decision: approval.Allow, Layer: approval.LayerHuman},
		{Seq: 2, CallID: "w1", Event: "signal-ignored"},
		{Seq: 3, CallID: "b1", Decision: approval.Deny, Layer: approval.LayerRules},
	}
	got := Decisions(recs)
	assert.Len(t, got, 2)
	assert.Equal(t, 1, got["w1"].Seq)
	assert.Equal(t, approval.Deny, got["b1"].Decision)
}

func TestStopOfNoEnv(t *testing.T) {
	var e *Env
	e.Stop() // TestMain stops the shared Env even when no test started it
	(&Env{}).Stop()
}
