package approval

import (
	"encoding/json"
	"testing"
)

func TestClassifyRisk(t *testing.T) {
	for _, tc := range []struct {
		tool, command string
		want          Risk
	}{
		{"Read", "", RiskRead},
		{"Grep", "", RiskRead},
		{"Edit", "", RiskWrite},
		{"Bash", "go test ./...", RiskExec},
		{"Bash", "ls && curl -s https://example.com", RiskNetwork},
		{"Bash", "env wget x", RiskNetwork},
		{"Bash", "git status", RiskExec},
		{"Bash", "git push origin main", RiskNetwork},
		{"Bash", "echo hi > /dev/tcp/10.0.0.1/80", RiskNetwork},
		{"Bash", "npm test", RiskExec},
		{"Bash", "npm install left-pad", RiskNetwork},
	} {
		in, _ := json.Marshal(map[string]string{"command": tc.command})
		if got := ClassifyRisk(Call{Tool: tc.tool, Input: in}, Env{Workspace: "/ws"}); got != tc.want {
			t.Errorf("%s %q: risk %s, want %s", tc.tool, tc.command, got, tc.want)
		}
	}
}
