package inbox

import (
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const tokA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// A deployed worker's inbox is off unless the operator sets an address,
// and refuses to start open to everyone or in clear text beyond loopback.
func TestGateConfigFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		enabled bool
		err     string
	}{
		{"nothing set", nil, false, ""},
		{"loopback with a token", map[string]string{EnvAddr: "127.0.0.1:8234", EnvTokens: "alice=" + tokA}, true, ""},
		{"no tokens", map[string]string{EnvAddr: "127.0.0.1:8234"}, true, "no tokens"},
		{"a short token", map[string]string{EnvAddr: "127.0.0.1:8234", EnvTokens: "alice=short"}, true, "shorter than 32"},
		{"a token without a name", map[string]string{EnvAddr: "127.0.0.1:8234", EnvTokens: tokA}, true, "want name=token"},
		{"two people, one token", map[string]string{EnvAddr: "127.0.0.1:8234", EnvTokens: "alice=" + tokA + ",bob=" + tokA}, true, "share one token"},
		{"the network in clear text", map[string]string{EnvAddr: "0.0.0.0:8234", EnvTokens: "alice=" + tokA}, true, "not a loopback address"},
		{"the network with TLS", map[string]string{EnvAddr: "0.0.0.0:8234", EnvTokens: "alice=" + tokA, EnvTLSCert: "c.pem", EnvTLSKey: "k.pem"}, true, ""},
		{"half a TLS pair", map[string]string{EnvAddr: "127.0.0.1:8234", EnvTokens: "alice=" + tokA, EnvTLSCert: "c.pem"}, true, "both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, enabled, err := GateConfigFromEnv(func(k string) string { return tc.env[k] })
			assert.Equal(t, tc.enabled, enabled)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				assert.NotContains(t, err.Error(), tokA, "errors never show a token")
				return
			}
			require.NoError(t, err)
			if enabled {
				assert.Equal(t, "alice", cfg.Tokens[tokA])
			}
		})
	}
}

// The token in the link becomes a session cookie naming its person, the
// token leaves the address bar, and nothing gets past without either.
func TestGateLogin(t *testing.T) {
	g := NewGate(GateConfig{Tokens: map[string]string{tokA: "alice"}}, false)
	g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, _ := g.Identify(r)
		_, _ = w.Write([]byte("hello " + name))
	}))
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/custos/?token="+tokA, nil))
	require.Equal(t, http.StatusSeeOther, rec.Code)
	assert.Equal(t, "/custos/", rec.Header().Get("Location"))
	cookies := rec.Result().Cookies()
	require.Len(t, cookies, 1)
	assert.True(t, cookies[0].HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, cookies[0].SameSite)

	for _, tc := range []struct {
		name   string
		path   string
		cookie *http.Cookie
		code   int
		body   string
	}{
		{"with the session", "/custos/", cookies[0], http.StatusOK, "hello alice"},
		{"without", "/custos/", nil, http.StatusUnauthorized, "token"},
		{"a forged session", "/custos/", &http.Cookie{Name: GateCookie, Value: "guess"}, http.StatusUnauthorized, "token"},
		{"a wrong token", "/custos/?token=" + strings.Repeat("b", 40), nil, http.StatusUnauthorized, "unknown token"},
	} {
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		if tc.cookie != nil {
			req.AddCookie(tc.cookie)
		}
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		assert.Equal(t, tc.code, rec.Code, tc.name)
		assert.Contains(t, rec.Body.String(), tc.body, tc.name)
	}

	// A session past its end signs nobody in.
	h := sha256.Sum256([]byte(cookies[0].Value))
	g.mu.Lock()
	s := g.sessions[h]
	s.until = time.Now().Add(-time.Second)
	g.sessions[h] = s
	g.mu.Unlock()
	req := httptest.NewRequest(http.MethodGet, "/custos/", nil)
	req.AddCookie(cookies[0])
	rec = httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusUnauthorized, rec.Code, "an ended session")
}
