package activities

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/sandbox"
)

// TestToolchainNamesAgree: the names settings accept (approval, which may
// not import the sandbox) are the names the sandbox provisions.
func TestToolchainNamesAgree(t *testing.T) {
	assert.Equal(t, sandbox.AllToolchains, approval.Toolchains)
}

// TestBashPassesToolchainSettings: sandbox.toolchains reaches the sandbox
// request, unset as unset and an empty list as "none".
func TestBashPassesToolchainSettings(t *testing.T) {
	none := []string{}
	goOnly := []string{"go"}
	for _, c := range []struct {
		name    string
		tc      *[]string
		wantSet bool
		want    []string
	}{{"unset", nil, false, nil}, {"none", &none, true, []string{}}, {"go", &goOnly, true, []string{"go"}}} {
		t.Run(c.name, func(t *testing.T) {
			req := bashCommand{command: "true"}.sandboxRequest(api.ToolRequest{Workspace: "/w", Sandbox: approval.SandboxSettings{Toolchains: c.tc}}, nil, 100)
			assert.Equal(t, c.wantSet, req.ToolchainsSet)
			assert.Equal(t, c.want, req.Toolchains)
		})
	}
}
