package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/custos-dev/custos/workflows/jobapi"
)

// watch names a subagent's parent and its Task call beside the child's ID.
func TestWatchNamesASubagentsParent(t *testing.T) {
	assert.Equal(t, "", subagentOf(jobapi.Status{}))
	st := jobapi.Status{Parent: &jobapi.ParentRef{Job: "job-1", CallID: "t0", Depth: 1}}
	assert.Equal(t, " subagent of job job-1 (its call t0):", subagentOf(st))
	st.Parent.Job = "job\x1b[2J"
	assert.NotContains(t, subagentOf(st), "\x1b", "the parent's ID is shown escaped")
}
