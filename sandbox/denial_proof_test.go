package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The denial tests prove their cause: every action that must fail inside the
// sandbox is first run outside it, by the same user on the same host, and
// must succeed there. The helpers here give those actions something real to
// reach: files the test creates in system directories, a DNS resolver and a
// TCP listener on the host's loopback.

// needRoot is for controls that create files in system directories (/root,
// /etc, /usr, /) and act as root outside the sandbox. CI runs as root.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("the sandbox denial controls create files in system directories: CI must run them as root")
	}
	t.Skip("not root: the denial controls cannot create their files in system directories")
}

// runOutside runs script with bash in dir, as the test's own user and
// environment, without any sandbox.
func runOutside(t *testing.T, dir, script string) (int, string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "run %q outside the sandbox", script)
		return ee.ExitCode(), string(out)
	}
	return 0, string(out)
}

// systemProbe creates path (and its parent directory, if missing) with
// world-readable content, and removes both when the test ends. Being
// world-readable, the file can only be unreadable inside the sandbox because
// the sandbox does not show it.
func systemProbe(t *testing.T, path string) {
	t.Helper()
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		require.NoError(t, os.Mkdir(dir, 0o755))
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	require.NoError(t, os.WriteFile(path, []byte("custos probe\n"), 0o644))
	t.Cleanup(func() { os.Remove(path) })
}

// testResolver is a DNS server on the host's loopback that answers every
// query (with the query echoed as a response) and counts them.
type testResolver struct {
	port    int
	queries atomic.Int32
}

func startTestResolver(t *testing.T) *testResolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	r := &testResolver{port: pc.LocalAddr().(*net.UDPAddr).Port}
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if n < 12 {
				continue
			}
			r.queries.Add(1)
			resp := append([]byte(nil), buf[:n]...)
			resp[2], resp[3] = 0x81, 0x80 // response, recursion available, no error
			_, _ = pc.WriteTo(resp, from)
		}
	}()
	return r
}

// queryScript asks the resolver for the A record of custos.test with bash
// alone and succeeds only if the answer (id 0x1234, flags 0x8180) comes back.
func (r *testResolver) queryScript() string {
	return fmt.Sprintf(`exec 3<>/dev/udp/127.0.0.1/%d && `+
		`printf '\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x06custos\x04test\x00\x00\x01\x00\x01' >&3 && `+
		`timeout 5 head -c 4 <&3 | od -An -tx1 | grep -q '12 34 81 80'`, r.port)
}

// testListener is a TCP listener on the host's loopback that counts the
// connections it accepts.
type testListener struct {
	port     int
	accepted atomic.Int32
}

func startTestListener(t *testing.T) *testListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	l := &testListener{port: ln.Addr().(*net.TCPAddr).Port}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			c.Close()
		}
	}()
	return l
}

// settle waits until the counter stops lagging behind what the client
// already saw: the accept loop counts after the client's connect returned.
func settle(t *testing.T, n *atomic.Int32, atLeast int32) int32 {
	t.Helper()
	require.Eventually(t, func() bool { return n.Load() >= atLeast }, 10*time.Second, 5*time.Millisecond,
		"the outside control reached the server, which never counted it")
	return n.Load()
}
