package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// On the real server: `starter mode PARENT plan` while a child waits on the
// model reaches the child (its status says plan, its audit names the
// parent), and the child's Write that follows is refused by plan mode.
func TestSubagentNarrowedByParentsMode(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	release := make(chan struct{})
	var held atomic.Bool
	var n atomic.Int32
	m := newSubModel(map[string]demomodel.Handler{
		"split it": demomodel.Script(demomodel.Calls(subTask("a", "write a", "write a")), demomodel.Say("all done")),
		"write a": func(openai.ChatCompletionRequest) (demomodel.Reply, error) {
			if n.Add(1) == 1 {
				held.Store(true)
				<-release
				return demomodel.Calls(demomodel.ToolCall("w", "Write", map[string]any{"file_path": "a.txt", "content": "A\n"})), nil
			}
			return demomodel.Say("tried"), nil
		},
	})
	_, base := testenv.StartConcurrentModel(t, m.handle)
	t.Cleanup(func() { // a failed test lets the held request go
		select {
		case <-release:
		default:
			close(release)
		}
	})
	testenv.StartWorkers(t, c, base, app.Options{})
	ws := testenv.Workspace(t)
	id := fmt.Sprintf("submode-%d", time.Now().UnixNano())
	child := id + "-task-a"
	testenv.StartJob(t, c, id, jobapi.JobInput{Once: true, Task: "split it", Workspace: ws, Mode: approval.ModeAcceptEdits})
	require.Eventually(t, held.Load, time.Minute, 20*time.Millisecond, "the child never asked the model")

	code, out, errOut := starterAt(t, srv, "mode", id, "plan")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	require.Eventually(t, func() bool {
		st, err := testenv.Status(c, child)
		return err == nil && st.Mode == approval.ModePlan
	}, 30*time.Second, 20*time.Millisecond, "the child's mode became plan")
	close(release)

	res := testenv.Finished(t, c, id, 2*time.Minute)
	assert.Equal(t, "all done", res.Answer)
	_, err := os.Stat(filepath.Join(ws, "a.txt"))
	assert.True(t, os.IsNotExist(err), "the child's Write did not run")
	recs := testenv.Audit(t, c, child)
	assert.Equal(t, approval.LayerMode, testenv.Decisions(recs)["w"].Layer, "plan mode refused the child's Write")
	var changed string
	for _, r := range recs {
		if r.Event == "mode-changed" {
			changed = r.Reason + " by " + r.Approver + " via " + r.Channel
		}
	}
	assert.Regexp(t, `^acceptEdits -> plan by \S+ via its parent `+regexp.QuoteMeta(id)+`$`, changed)
}
