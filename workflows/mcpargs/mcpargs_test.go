package mcpargs

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/custos-dev/custos/activities/api"
)

func TestSortedKeysReadsTopLevelKeysOnce(t *testing.T) {
	got := SortedKeys(json.RawMessage(`{"b":{"z":1},"a":[1,2],"b":2}`))
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("SortedKeys = %v", got)
	}
	if SortedKeys(json.RawMessage(`[1]`)) != nil {
		t.Error("SortedKeys of an array named keys")
	}
}

func TestDescribeLabelsArgumentsFromTheSchema(t *testing.T) {
	tool := api.MCPTool{Server: "mem", Tool: "add", Description: "adds\nmore",
		InputSchema: json.RawMessage(`{"properties":{"k":{"title":"The key"}}}`)}
	got := Describe(tool, json.RawMessage(`{"k":"x","v":1}`))
	want := "add (MCP server \"mem\"): adds …\n  k (The key): \"x\"\n  v: 1"
	if got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	if Fingerprint(tool) == Fingerprint(api.MCPTool{Description: "other"}) {
		t.Error("two tools share a fingerprint")
	}
}
