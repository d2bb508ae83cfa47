package approval

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSandboxToolchainsNarrowOnly: sandbox.toolchains from a more specific
// file (the workspace's) can only narrow the less specific (the user's);
// unset narrows nothing, an empty list turns provisioning off.
func TestSandboxToolchainsNarrowOnly(t *testing.T) {
	list := func(xs ...string) *[]string { l := append([]string{}, xs...); return &l }
	cases := []struct {
		name     string
		user, ws *[]string
		want     *[]string
	}{
		{"neither sets it", nil, nil, nil},
		{"the user's alone", list("go", "node"), nil, list("go", "node")},
		{"the workspace's alone narrows everything", nil, list("go"), list("go")},
		{"the workspace narrows the user's", list("go", "node"), list("node"), list("node")},
		{"the workspace cannot widen", list("go"), list("go", "rust"), list("go")},
		{"the workspace turns it off", list("go"), list(), list()},
		{"the user turned it off", list(), list("go"), list()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := MergeSettings(Settings{Sandbox: SandboxSettings{Toolchains: c.user}}, Settings{Sandbox: SandboxSettings{Toolchains: c.ws}})
			assert.Equal(t, c.want, got.Sandbox.Toolchains)
		})
	}
}

func TestSandboxToolchainsParse(t *testing.T) {
	s, err := ParseSettings([]byte(`{"sandbox":{"toolchains":["go","python"]}}`), "/w")
	require.NoError(t, err)
	require.NotNil(t, s.Sandbox.Toolchains)
	assert.Equal(t, []string{"go", "python"}, *s.Sandbox.Toolchains)

	s, err = ParseSettings([]byte(`{"sandbox":{"toolchains":[]}}`), "/w")
	require.NoError(t, err)
	require.NotNil(t, s.Sandbox.Toolchains, "an empty list is set: no toolchain")
	assert.Empty(t, *s.Sandbox.Toolchains)

	_, err = ParseSettings([]byte(`{"sandbox":{"toolchains":["go","cobol"]}}`), "/w")
	require.ErrorIs(t, err, ErrBadSettings)
	assert.Contains(t, err.Error(), `sandbox.toolchains[1]: unknown toolchain "cobol"`)
}

// TestUntrustedWorkspaceMayNarrowToolchains: sandbox.toolchains only
// narrows, so an untrusted workspace's settings keep it.
func TestUntrustedWorkspaceMayNarrowToolchains(t *testing.T) {
	goOnly := []string{"go"}
	out, ignored := Restrict(Settings{Sandbox: SandboxSettings{Toolchains: &goOnly}})
	require.NotNil(t, out.Sandbox.Toolchains)
	assert.Equal(t, goOnly, *out.Sandbox.Toolchains)
	assert.Empty(t, ignored)
}
