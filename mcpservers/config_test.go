package mcpservers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestToolOfRefusesWhatTheModelCannotCarry(t *testing.T) {
	obj := map[string]any{"type": "object"}
	for _, tc := range []struct {
		name string
		tool *mcp.Tool
		err  string
	}{
		{"ok", &mcp.Tool{Name: "list", InputSchema: obj}, ""},
		{"a name with a space", &mcp.Tool{Name: "list all", InputSchema: obj}, "its name must be"},
		{"a name too long", &mcp.Tool{Name: strings.Repeat("x", 60), InputSchema: obj}, "at most 64"},
		{"no schema", &mcp.Tool{Name: "list"}, "no input schema"},
		{"not an object schema", &mcp.Tool{Name: "list", InputSchema: map[string]any{"type": "string"}}, "not an object schema"},
		{"a huge description", &mcp.Tool{Name: "list", InputSchema: obj, Description: strings.Repeat("d", maxDescriptionBytes+1)}, "over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := toolOf(Server{Name: "srv"}, tc.tool)
			if tc.err == "" {
				require.NoError(t, err)
				assert.Equal(t, "mcp__srv__list", got.FullName)
				assert.True(t, got.Destructive, "no annotations: destructive")
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

func TestHeadersGoToTheEntrysHostAlone(t *testing.T) {
	var leaked atomic.Value
	leaked.Store("")
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("Authorization"))
	}))
	defer other.Close()
	var got atomic.Value
	own := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization"))
		http.Redirect(w, r, other.URL+"/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer own.Close()
	c := &http.Client{Transport: headerTransport{base: http.DefaultTransport, headers: map[string]string{"Authorization": "Bearer s3cret"},
		host: strings.TrimPrefix(own.URL, "http://")}}
	resp, err := c.Get(own.URL + "/mcp")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, "Bearer s3cret", got.Load())
	assert.Equal(t, "", leaked.Load(), "a redirect to another host does not carry the entry's headers")
}

func TestExpand(t *testing.T) {
	t.Setenv("CUSTOS_TEST_SET", "v")
	for _, tc := range []struct{ in, out, err string }{
		{"plain", "plain", ""},
		{"${CUSTOS_TEST_SET}-x", "v-x", ""},
		{"${CUSTOS_TEST_UNSET:-dflt}", "dflt", ""},
		{"${CUSTOS_TEST_UNSET}", "", "CUSTOS_TEST_UNSET is not set"},
		{"$CUSTOS_TEST_SET", "$CUSTOS_TEST_SET", ""},
	} {
		got, err := Expand(tc.in)
		if tc.err != "" {
			require.Error(t, err, tc.in)
			assert.Contains(t, err.Error(), tc.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.out, got)
	}
}
