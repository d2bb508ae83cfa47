package devserver

import (
	"net/http"
	"net/http/cookiejar"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// loginUI returns an HTTP client that has opened srv's login URL, as the
// owner's browser does, and so carries the session cookie.
func loginUI(t *testing.T, srv *Server) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar}
	url, err := srv.NewUILoginURL()
	require.NoError(t, err)
	resp, err := c.Get(url)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, "login URL %s", url)
	return c
}

// nobodyUID is the account the tests play another local user with.
const nobodyUID = 65534

// requireRoot: tests that act as another user need root (runuser, chown).
// In CI they must run, so there a missing privilege fails the test.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("this test plays another local user and needs root (runuser, chown)")
	}
	t.Skip("needs root to play another local user")
}
