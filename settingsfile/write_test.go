package settingsfile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/custos-dev/custos/approval"
)

func TestAddRule(t *testing.T) {
	ws := t.TempDir()
	if err := AddRule(ws, approval.ListAllow, "Bash(npm test)"); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(ws, ".custos", "settings.local.json")
	writeFile(t, f, `{"permissions": {"allow": ["Bash(npm test)"], "defaultMode": "plan"}, "sandbox": {"env": ["A"]}, "other": {"x": 1}}`)
	for i := 0; i < 2; i++ { // idempotent
		if err := AddRule(ws, approval.ListAllow, "Bash(make)"); err != nil {
			t.Fatal(err)
		}
		if err := AddRule(ws, approval.ListDeny, "Bash(curl *)"); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	s, err := approval.ParseSettings(data, ws)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Permissions.Allow, []string{"Bash(npm test)", "Bash(make)"}) ||
		!reflect.DeepEqual(s.Permissions.Deny, []string{"Bash(curl *)"}) || s.Permissions.DefaultMode != approval.ModePlan ||
		!reflect.DeepEqual(s.Sandbox.Env, []string{"A"}) {
		t.Errorf("after AddRule: %+v", s)
	}
	if !strings.Contains(string(data), `"other"`) {
		t.Errorf("AddRule dropped other content: %s", data)
	}
	entries, _ := os.ReadDir(filepath.Dir(f))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !reflect.DeepEqual(names, []string{".gitignore", "settings.local.json"}) {
		t.Errorf("want the rules and the ignore file, no temp files left behind: %v", names)
	}
	for _, tt := range []struct{ list, rule string }{{"maybe", "Bash"}, {approval.ListAllow, "Bash("}, {approval.ListAllow, ""}} {
		if err := AddRule(ws, tt.list, tt.rule); err == nil {
			t.Errorf("AddRule(%q, %q) accepted", tt.list, tt.rule)
		}
	}
	if err := AddRule(ws, "maybe", "Bash"); !errors.Is(err, approval.ErrUnknownList) || !strings.HasPrefix(err.Error(), "settings: unknown rule list") {
		t.Errorf("unknown list: %v", err)
	}
	if err := AddRule(ws, approval.ListAllow, "Bash("); !errors.Is(err, approval.ErrMalformedRule) || !strings.HasPrefix(err.Error(), "settings: AddRule: ") {
		t.Errorf("malformed rule: %v", err)
	}
	if err := AddRule("", approval.ListAllow, "Bash(ls)"); err == nil || err.Error() != "settings: AddRule needs a workspace" {
		t.Errorf("no workspace: %v", err)
	}
	// A broken file is never overwritten.
	writeFile(t, f, `{broken`)
	if err := AddRule(ws, approval.ListAllow, "Bash(ls)"); err == nil {
		t.Error("AddRule overwrote a broken file")
	}
	if data, _ := os.ReadFile(f); string(data) != `{broken` {
		t.Errorf("broken file changed: %s", data)
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
