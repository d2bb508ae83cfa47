package retention

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server's home unused past its retention goes, whether or not the open
// jobs are known; a young one stays, and one whose server runs (holds the
// lock) is left by Apply; du counts each in its workspace.
func TestServerHomesCollectedAndCounted(t *testing.T) {
	state := t.TempDir()
	ws := "workspaces/proj-0123456789ab/mcp-homes/"
	put(t, state, "workspaces/proj-0123456789ab/workspace", 0, 0, "/src/proj")
	put(t, state, ws+"old/home/memory.jsonl", 700, 40*day)
	put(t, state, ws+"old/lock", 0, 40*day)
	put(t, state, ws+"young/home/memory.jsonl", 300, 40*day)
	put(t, state, ws+"young/lock", 0, 2*day)
	put(t, state, ws+"held/home/memory.jsonl", 100, 40*day)
	held := put(t, state, ws+"held/lock", 0, 40*day)

	plan, err := PlanPass(Input{State: state, Now: now, Policy: policy, OpenKnown: false})
	require.NoError(t, err)
	assert.Equal(t, []string{ws + "held", ws + "old"}, removed(state, plan))
	assert.Equal(t, int64(800), plan.Freed[ServerHomes])

	lock, err := os.Open(held)
	require.NoError(t, err)
	defer lock.Close()
	require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_SH))
	res := Apply(plan, nil)
	assert.Equal(t, 1, res.Removed[ServerHomes])
	assert.Equal(t, []string{filepath.Join(state, ws+"held")}, res.Skipped)
	assert.NoDirExists(t, filepath.Join(state, ws+"old"))
	assert.FileExists(t, filepath.Join(state, ws+"held/home/memory.jsonl"))

	u, err := Measure(state, false)
	require.NoError(t, err)
	require.Len(t, u.Workspaces, 1)
	assert.Equal(t, "/src/proj", u.Workspaces[0].Workspace)
	assert.Equal(t, int64(400), u.Workspaces[0].Bytes[ServerHomes])
	assert.Equal(t, int64(400), u.Kinds[ServerHomes])
}
