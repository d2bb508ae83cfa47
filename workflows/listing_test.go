package workflows

import (
	"testing"

	"github.com/custos-dev/custos/workflows/parking"
	"github.com/stretchr/testify/assert"
)

// The listed status of each phase the workflow has.
func TestListingStatus(t *testing.T) {
	for _, tc := range []struct {
		phase     string
		waiting   int
		modelWait bool
		status    string
		why       string
	}{
		{"thinking", 0, false, ListWorking, ""},
		{"running", 0, false, ListWorking, ""},
		{"waiting", 2, false, ListWaitingPerson, ""},
		{PhaseWaitingMessage, 0, false, ListWaitingMessage, ""},
		{PhaseWaitingBudget, 0, false, ListParked, "budget"},
		{parking.PhaseDiskFull, 0, false, ListParked, "disk space"},
		{"waiting for the model endpoint", 0, true, ListParked, "model endpoint"},
		{PhaseDone, 0, false, ListEnded, ""},
		{PhaseEnded, 0, false, ListEnded, ""},
	} {
		s, why := ListingStatus(tc.phase, tc.waiting, tc.modelWait)
		assert.Equal(t, tc.status, s, tc.phase)
		assert.Equal(t, tc.why, why, tc.phase)
	}
}
