package workers

import (
	"encoding/json"
	"testing"

	"github.com/custos-dev/custos/hooks"
)

func TestDenyProtectedWrite(t *testing.T) {
	reg, err := DefaultHooks()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool, path string
		deny       bool
	}{
		{"Write", ".custos/settings.json", true},
		{"Edit", ".git/hooks/pre-commit", true},
		{"Write", "/ws/.git/config", true},
		{"Write", "src/../.custos/x", true},
		{"Write", "src/main.go", false},
		{"Write", "/elsewhere/.custos/x", false}, // outside: the path guard refuses it
		{"Read", ".custos/settings.json", false}, // reading is not writing
	} {
		in, _ := json.Marshal(map[string]string{"file_path": tc.path})
		p := hooks.Payload{Point: hooks.ToolApprovalPre, Tool: tc.tool, Input: in, Workspace: "/ws"}
		r, ok := hooks.Dispatch(reg.Handlers(hooks.ToolApprovalPre, tc.tool), p)
		if got := ok && r.Decision == "deny"; got != tc.deny {
			t.Errorf("%s %s: denied = %v, want %v (%+v)", tc.tool, tc.path, got, tc.deny, r)
		}
	}
}
