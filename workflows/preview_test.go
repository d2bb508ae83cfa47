package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/demomodel"
)

// TestPendingEditShowsItsDiff: a waiting Edit carries the unified diff of a
// dry run against the file as it is, and nothing is written before the
// answer; an Edit that would fail says so.
func TestPendingEditShowsItsDiff(t *testing.T) {
	h := newHarness(t, demomodel.Script(
		demomodel.Calls(
			call("e1", "Edit", map[string]any{"file_path": "main.go", "old_string": "return 1", "new_string": "return 2"}),
			call("e2", "Edit", map[string]any{"file_path": "main.go", "old_string": "not in the file", "new_string": "x"}),
			call("w1", "Write", map[string]any{"file_path": "new.txt", "content": "hello\n"}),
		),
		demomodel.Say("done"),
	))
	h.writeFile("main.go", "package main\n\nfunc f() int {\n\treturn 1\n}\n")
	var pending map[string]PendingAsk
	var fileWhileWaiting string
	h.env.RegisterDelayedCallback(func() {
		st := h.status()
		pending = map[string]PendingAsk{}
		for _, p := range st.Pending {
			pending[p.CallID] = p
		}
		fileWhileWaiting = h.file("main.go")
		for _, id := range []string{"e1", "e2", "w1"} {
			h.env.SignalWorkflow(ApprovalSignal, ApprovalDecision{CallID: id, Decision: "deny", By: "test"})
		}
	}, 5*time.Second)
	_, err := h.run()
	require.NoError(t, err)
	require.Len(t, pending, 3)
	assert.Equal(t, `--- a/main.go
+++ b/main.go
@@ -1,5 +1,5 @@
 package main
 
 func f() int {
-	return 1
+	return 2
 }`, pending["e1"].Preview)
	assert.Equal(t, "Dry run failed — the call would fail as it stands:\n"+
		"Edit: old_string not found in main.go. It must match the file exactly, including whitespace and indentation; Read the file to copy the exact text",
		pending["e2"].Preview)
	assert.Equal(t, "new file new.txt\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello", pending["w1"].Preview)
	assert.Equal(t, "package main\n\nfunc f() int {\n\treturn 1\n}\n", fileWhileWaiting, "a dry run writes nothing")
	assert.Equal(t, "", h.file("new.txt"))
}
