package devserver

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:8233":       true,
		"127.0.0.1":            true,
		"127.1.2.3:80":         true,
		"localhost:8233":       true,
		"LOCALHOST":            true,
		"[::1]:8233":           true,
		"::1":                  true,
		"":                     false,
		"attacker.example":     false,
		"localhost.attacker":   false,
		"127.0.0.1.nip.io:823": false,
		"10.0.0.1:8233":        false,
		"[::]:8233":            false,
		"0.0.0.0:8233":         false,
	} {
		assert.Equal(t, want, loopbackHost(host), "%q", host)
	}
}

// TestUIGateLogin drives the gate's login with requests: a token works once,
// the redirect keeps the page and its other parameters but never leaves the
// site, and a used or unknown token without a session is refused.
func TestUIGateLogin(t *testing.T) {
	g := newUIGate("127.0.0.1:1", &tls.Config{}, 8233, "", quietLogger())
	for _, tc := range []struct{ path, location string }{
		{"/?token=%s", "/"},
		{"/namespaces/default/workflows?token=%s&query=x", "/namespaces/default/workflows?query=x"},
		{"//attacker.example/?token=%s", "/attacker.example/"},
		{"/\\attacker.example?token=%s", "/attacker.example"},
	} {
		tok, err := g.newToken()
		require.NoError(t, err)
		target := fmt.Sprintf(tc.path, tok)

		w := httptest.NewRecorder()
		g.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8233"+target, nil))
		require.Equal(t, http.StatusSeeOther, w.Code, target)
		assert.Equal(t, tc.location, w.Header().Get("Location"), target)
		cookies := w.Result().Cookies()
		require.Len(t, cookies, 1)
		assert.Equal(t, "custos-ui-8233", cookies[0].Name)

		// Again, without the cookie: used up.
		w = httptest.NewRecorder()
		g.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8233"+target, nil))
		assert.Equal(t, http.StatusUnauthorized, w.Code, "second use of %s", target)

		// Again, with the cookie: just the redirect, no new session.
		w = httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8233"+target, nil)
		req.AddCookie(cookies[0])
		g.ServeHTTP(w, req)
		assert.Equal(t, http.StatusSeeOther, w.Code)
		assert.Equal(t, tc.location, w.Header().Get("Location"))
		assert.Empty(t, w.Result().Cookies())
	}
	w := httptest.NewRecorder()
	g.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8233/?token=", nil))
	assert.Equal(t, http.StatusUnauthorized, w.Code, "empty token")
}

// TestUIGateMount: a handler mounted under a prefix is served behind the
// same cookie, sees the cookie (it binds its CSRF tokens to it), and is
// refused without it, naming the command that mints its link; other paths
// still go to the UI.
func TestUIGateMount(t *testing.T) {
	g := newUIGate("127.0.0.1:1", &tls.Config{}, 8233, "", quietLogger())
	g.mounted.Store(&mount{prefix: "/custos/", handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("custos-ui-8233")
		require.NoError(t, err)
		_, _ = fmt.Fprintf(w, "inbox %s %t", r.URL.Path, c.Value != "")
	})})
	tok, err := g.newToken()
	require.NoError(t, err)
	w := httptest.NewRecorder()
	g.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8233/custos/?token="+tok, nil))
	require.Equal(t, http.StatusSeeOther, w.Code)
	assert.Equal(t, "/custos/", w.Header().Get("Location"))
	cookie := w.Result().Cookies()[0]

	for _, tc := range []struct {
		path   string
		cookie bool
		code   int
		body   string
	}{
		{"/custos/", true, http.StatusOK, "inbox /custos/ true"},
		{"/custos/events", true, http.StatusOK, "inbox /custos/events true"},
		{"/custos", true, http.StatusOK, "inbox /custos true"},
		{"/custos/", false, http.StatusUnauthorized, "starter inbox-url"},
		{"/namespaces/default/workflows", false, http.StatusUnauthorized, "starter ui-url"},
		{"/custosx", true, http.StatusBadGateway, "backend unavailable"}, // the UI's, through the proxy
	} {
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8233"+tc.path, nil)
		if tc.cookie {
			req.AddCookie(cookie)
		}
		w := httptest.NewRecorder()
		g.ServeHTTP(w, req)
		assert.Equal(t, tc.code, w.Code, tc.path)
		assert.Contains(t, w.Body.String(), tc.body, tc.path)
	}
}
