package devserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/custos-dev/custos/internal/testbin"
)

// ownerEnv is an embedded server with its UI, started by this (root) user in
// a directory every user may enter, so that the only walls between another
// user and the server are the ones the server builds itself: its private
// certificate directory, mutual TLS and the UI gate.
type ownerEnv struct {
	base     string // 0755
	temporal string // the Temporal CLI, runnable by nobody
	srv      *Server
	jobID    string
}

func newOwnerEnv(t *testing.T) *ownerEnv {
	t.Helper()
	requireRoot(t)
	if _, err := exec.LookPath("runuser"); err != nil {
		t.Fatalf("runuser (util-linux) is needed to play another user: %v", err)
	}
	base, err := os.MkdirTemp("", "custos-owner-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	e := &ownerEnv{base: base, temporal: runnableTemporalCLI(t, base)}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.srv, err = Start(ctx, Options{DBFile: filepath.Join(base, "temporal.db"), Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.srv.Stop() })
	require.Equal(t, filepath.Join(base, "tls"), e.srv.TLSFiles().Dir)

	// A job waiting on its task queue (no worker needed): what an intruder
	// would signal and the UI would list.
	c, err := client.DialContext(ctx, client.Options{
		HostPort: e.srv.FrontendAddr(), Logger: sdklog.NewStructuredLogger(quietLogger()),
		ConnectionOptions: client.ConnectionOptions{TLS: e.srv.ClientTLS()},
	})
	require.NoError(t, err)
	defer c.Close()
	e.jobID = "owners-job"
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: e.jobID, TaskQueue: "nobody-serves-this"}, "AgentWorkflow")
	require.NoError(t, err)
	// Listing goes through visibility, which trails the start a little.
	require.Eventually(t, func() bool {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: "WorkflowId = '" + e.jobID + "'"})
		return err == nil && len(resp.GetExecutions()) == 1
	}, 30*time.Second, 100*time.Millisecond, "the job never showed in the list")
	return e
}

// runnableTemporalCLI puts the real Temporal CLI where nobody can run it
// (GOPATH/bin is under /root).
func runnableTemporalCLI(t *testing.T, base string) string {
	t.Helper()
	bin := filepath.Join(base, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	dst := filepath.Join(bin, "temporal")
	testbin.LinkOrCopy(t, testbin.Temporal(t), dst)
	return dst
}

// run runs a command as user ("" = this process's user, the owner) with a
// small fixed environment, and returns its combined output.
func (e *ownerEnv) run(user, name string, args ...string) (string, error) {
	argv := append([]string{name}, args...)
	if user != "" {
		argv = append([]string{"runuser", "-u", user, "--"}, argv...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// HOME in base: neither user's Temporal CLI config plays a part.
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + e.base}
	cmd.Dir = e.base
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// signal is the attack the owner check stops: another local user's
// Temporal CLI signal that would answer the job's pending approval.
func (e *ownerEnv) signal(user string, flags ...string) (string, error) {
	args := append([]string{"workflow", "signal", "--workflow-id", e.jobID, "--name", "approval",
		"--input", `{"callId":"w1","decision":"allow","by":"intruder"}`, "--command-timeout", "10s"}, flags...)
	return e.run(user, e.temporal, args...)
}

// TestOnlyOwnerReachesFrontend: another local user cannot talk to the
// frontend, whichever way they spell the connection, while the owner's
// Temporal CLI with the printed flags works. Each denial has its control:
// the same command succeeds for the owner, or fails for the owner too when
// the cause is the server's requirement rather than file permissions.
func TestOnlyOwnerReachesFrontend(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	e := newOwnerEnv(t)
	addr := e.srv.FrontendAddr()
	ownerFlags := e.srv.TLSFiles().TemporalCLIFlags(addr)

	// The owner: the printed flags work (list and the signal itself).
	out, err := e.run("", e.temporal, append([]string{"workflow", "list", "--command-timeout", "10s"}, ownerFlags...)...)
	require.NoError(t, err, out)
	assert.Contains(t, out, e.jobID)
	out, err = e.signal("", ownerFlags...)
	require.NoError(t, err, "the owner signals with the printed flags: %s", out)

	// An intruder's own certificate set, readable by nobody: the server
	// must not trust another CA.
	intruderDir := filepath.Join(e.base, "intruder")
	intruder, err := EnsureCerts(intruderDir, time.Now())
	require.NoError(t, err)
	require.NoError(t, os.Chmod(intruderDir, 0o755))
	for _, f := range intruder.all() {
		require.NoError(t, os.Chmod(f, 0o644))
	}

	for _, tc := range []struct {
		name  string
		flags []string
		// ownerToo: the owner fails the same way (the server demands a
		// certificate of its own CA, whoever asks).
		ownerToo bool
		want     string // in nobody's output
	}{
		{name: "plain gRPC", flags: []string{"--address", addr}, ownerToo: true},
		{name: "TLS without a client certificate", flags: []string{"--address", addr, "--tls", "--tls-disable-host-verification"}, ownerToo: true},
		{name: "a certificate of another CA", ownerToo: true, flags: []string{"--address", addr,
			"--tls-cert-path", intruder.ClientCert, "--tls-key-path", intruder.ClientKey, "--tls-disable-host-verification"}},
		{name: "the owner's printed flags", flags: ownerFlags, want: "permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := e.signal("nobody", tc.flags...)
			require.Error(t, err, "nobody got through: %s", out)
			if tc.want != "" {
				assert.Contains(t, out, tc.want)
			}
			out, err = e.signal("", tc.flags...)
			if tc.ownerToo {
				require.Error(t, err, "the owner, same flags: %s", out)
			} else {
				require.NoError(t, err, "the owner, same flags: %s", out)
			}
		})
	}

	// The frontend's HTTP API (same handlers as gRPC) is behind the same
	// mutual TLS; curl shows it both ways.
	httpAPI := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(e.srv.ports.frontendHTTP)) + "/api/v1/namespaces/default/workflows"
	f := e.srv.TLSFiles()
	out, err = e.run("", "curl", "-sS", "--fail", "--cacert", f.CA, "--cert", f.ClientCert, "--key", f.ClientKey, "--resolve",
		"localhost:"+strconv.Itoa(e.srv.ports.frontendHTTP)+":127.0.0.1", strings.Replace(httpAPI, "127.0.0.1", "localhost", 1))
	require.NoError(t, err, "owner's curl on the HTTP API: %s", out)
	assert.Contains(t, out, e.jobID)
	for _, url := range []string{httpAPI, strings.Replace(httpAPI, "https:", "http:", 1)} {
		out, err = e.run("nobody", "curl", "-sS", "-k", "--fail", url)
		require.Error(t, err, "nobody's curl %s: %s", url, out)
		assert.NotContains(t, out, e.jobID)
	}

	// History, matching and the internal worker service listen on loopback
	// too; their APIs are as dangerous. They want the same certificates.
	// gRPC servers insist on ALPN h2, so both probes offer it: what differs
	// is only the certificate.
	owner := e.srv.ClientTLS()
	owner.NextProtos = []string{"h2"}
	noCert := owner.Clone()
	noCert.Certificates = nil
	for name, port := range map[string]int{
		"frontend": e.srv.ports.frontend, "frontend HTTP": e.srv.ports.frontendHTTP,
		"history": e.srv.ports.history, "matching": e.srv.ports.matching, "worker": e.srv.ports.worker,
	} {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		assert.NoError(t, tlsProbe(addr, owner), "%s with the owner's certificate", name)
		assert.Error(t, tlsProbe(addr, noCert), "%s without a client certificate", name)
		assert.Error(t, plainProbe(addr), "%s in plain text", name)
	}
}

// tlsProbe connects with cfg and reports whether the server accepted it: a
// rejected client certificate comes back as an alert on the first read (TLS
// 1.3); an accepted one gets the server's HTTP/2 preface, or silence.
func tlsProbe(addr string, cfg *tls.Config) error {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	_, err = c.Read(make([]byte, 1))
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		return nil
	}
	return fmt.Errorf("server closed the connection: %w", err)
}

// plainProbe speaks HTTP/2 in plain text (what an insecure gRPC client
// sends) and reports an error unless the server answers with HTTP/2 frames.
func plainProbe(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")); err != nil {
		return err
	}
	// An HTTP/2 server answers with a SETTINGS frame: type 4 in byte 3.
	head := make([]byte, 9)
	if _, err := io.ReadFull(c, head); err != nil {
		return fmt.Errorf("no HTTP/2 answer: %w", err)
	}
	if head[3] != 4 {
		return fmt.Errorf("not an HTTP/2 SETTINGS frame: % x", head)
	}
	return nil
}

// TestOnlyOwnerReachesWebUI: without the one-time link's cookie the UI and
// its API answer 401 (to nobody's curl and to anyone); the owner's link works
// once and its cookie opens the UI and the API; the ui-server behind the
// gate cannot be reached around it.
func TestOnlyOwnerReachesWebUI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	e := newOwnerEnv(t)
	ui := e.srv.UIAddr()
	require.True(t, strings.HasPrefix(ui, "http://127.0.0.1:"), ui)
	login := e.srv.UILoginURL()
	require.True(t, strings.HasPrefix(login, ui+"/?token="), login)
	workflows := ui + "/api/v1/namespaces/default/workflows"

	// The owner's browser opens the printed link: a session cookie and a
	// redirect to the page without the token.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(login)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/", resp.Header.Get("Location"))
	cookies := resp.Cookies()
	require.Len(t, cookies, 1)
	session := cookies[0]
	assert.True(t, session.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, session.SameSite)
	assert.Equal(t, "/", session.Path)
	cookieArg := session.Name + "=" + session.Value

	// The link was for one use.
	resp, err = http.Get(login)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "second use of the printed link")

	// nobody, with curl, every way in but the cookie: 401 and no data.
	for _, tc := range []struct{ name, url, cookie string }{
		{"page", ui + "/", ""},
		{"namespaces API", ui + "/api/v1/namespaces", ""},
		{"workflows API", workflows, ""},
		{"the used link", login, ""},
		{"a guessed token", ui + "/?token=guess", ""},
		{"a forged cookie", workflows, session.Name + "=forged"},
		{"a cookie of another name", workflows, "custos-ui=" + session.Value + "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"-sS", "-w", "\n%{http_code}", tc.url}
			if tc.cookie != "" {
				args = append(args, "-b", tc.cookie)
			}
			out, err := e.run("nobody", "curl", args...)
			require.NoError(t, err, out)
			assert.True(t, strings.HasSuffix(out, "401"), "nobody got %s", out)
			assert.NotContains(t, out, e.jobID)
		})
	}
	// The control: the same curl as nobody, with the owner's cookie, gets
	// the job list, so what stopped nobody above was the missing cookie.
	out, err := e.run("nobody", "curl", "-sS", "--fail", "-b", cookieArg, workflows)
	require.NoError(t, err, out)
	assert.Contains(t, out, e.jobID)

	// The owner's browser session: page and API.
	owner := loginUI(t, e.srv)
	assert.Contains(t, strings.ToLower(httpGet(t, owner, ui+"/")), "<html")
	assert.Contains(t, httpGet(t, owner, workflows), e.jobID)

	// A page on another site that rebinds its name to 127.0.0.1 does not
	// get in, cookie or not.
	req, err := http.NewRequest(http.MethodGet, workflows, nil)
	require.NoError(t, err)
	req.Host = "attacker.example:" + strconv.Itoa(e.srv.ports.ui)
	req.AddCookie(session)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	// A link minted by another process of the owner (`starter ui-url`)
	// works once too.
	minted, err := MintUILoginURL(e.srv.TLSFiles().Dir)
	require.NoError(t, err)
	resp, err = noRedirect.Get(minted)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "minted link")
	require.Len(t, resp.Cookies(), 1)
	resp, err = noRedirect.Get(minted)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "minted link, second use")

	// Around the gate: the ui-server's own port wants the owner's client
	// certificate. nobody's curl fails; the gate (owner's certificate) works.
	backend := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(e.srv.ports.uiBackend)) + "/api/v1/namespaces"
	out, err = e.run("nobody", "curl", "-sS", "-k", "--fail", backend)
	require.Error(t, err, "nobody reached the ui-server around the gate: %s", out)
	f := e.srv.TLSFiles()
	out, err = e.run("", "curl", "-sS", "-k", "--fail", "--cert", f.ClientCert, "--key", f.ClientKey, backend)
	require.NoError(t, err, "owner's certificate on the ui-server's port: %s", out)
	assert.Contains(t, out, "default")

	// Once the server stops, `starter ui-url` has nothing to mint for.
	require.NoError(t, e.srv.Stop())
	_, err = MintUILoginURL(e.srv.TLSFiles().Dir)
	require.ErrorContains(t, err, "no Web UI has run")
}
