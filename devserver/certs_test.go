package devserver

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEnsureCertsMakesAPrivateSet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "tls")
	now := time.Now()
	f, err := EnsureCerts(dir, now)
	require.NoError(t, err)
	require.Equal(t, TLSFilesIn(dir), f)

	info, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "directory")
	for _, name := range f.all() {
		info, err := os.Stat(name)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), name)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 5, "the CA key is never written; no temp files are left")

	ca := readCert(t, f.CA)
	require.True(t, ca.IsCA)
	server, client := readCert(t, f.ServerCert), readCert(t, f.ClientCert)
	for _, c := range []*x509.Certificate{ca, server, client} {
		pub, ok := c.PublicKey.(*ecdsa.PublicKey)
		require.True(t, ok, "ECDSA key in %s", c.Subject)
		require.Equal(t, elliptic.P256(), pub.Curve)
		require.True(t, c.NotAfter.Before(now.Add(3*365*24*time.Hour)), "validity of %s", c.Subject)
	}
	require.Equal(t, []string{"localhost"}, server.DNSNames)
	require.Len(t, server.IPAddresses, 2)
	require.True(t, server.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)))
	require.True(t, server.IPAddresses[1].Equal(net.IPv6loopback))
	require.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, client.ExtKeyUsage)

	// The client certificate authenticates to a server with the server
	// certificate; a self-made certificate does not.
	serverTLS := serverConfig(t, f)
	clientTLS, err := f.ClientTLS()
	require.NoError(t, err)
	require.NoError(t, handshake(t, serverTLS, clientTLS))
	other, err := EnsureCerts(filepath.Join(t.TempDir(), "other"), now)
	require.NoError(t, err)
	intruder, err := other.ClientTLS()
	require.NoError(t, err)
	intruder.RootCAs = clientTLS.RootCAs // even trusting our server
	require.Error(t, handshake(t, serverTLS, intruder), "a client certificate of another CA")
	noCert := clientTLS.Clone()
	noCert.Certificates = nil
	require.Error(t, handshake(t, serverTLS, noCert), "no client certificate")
}

// TestEnsureCertsKeepsOrReplaces: a good set is kept byte for byte; one that
// is incomplete, leaked, near expiry or damaged is replaced whole (a new CA);
// one that belongs to someone else is refused.
func TestEnsureCertsKeepsOrReplaces(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name    string
		spoil   func(t *testing.T, f TLSFiles)
		at      time.Time
		replace bool
		err     string
	}{
		{name: "good set", spoil: func(*testing.T, TLSFiles) {}, at: now},
		{name: "a year on, still valid for a while", spoil: func(*testing.T, TLSFiles) {}, at: now.Add(300 * 24 * time.Hour)},
		{name: "near expiry", spoil: func(*testing.T, TLSFiles) {}, at: now.Add(340 * 24 * time.Hour), replace: true},
		{name: "client key missing", spoil: func(t *testing.T, f TLSFiles) { require.NoError(t, os.Remove(f.ClientKey)) }, at: now, replace: true},
		{name: "key readable by others", spoil: func(t *testing.T, f TLSFiles) { require.NoError(t, os.Chmod(f.ServerKey, 0o644)) }, at: now, replace: true},
		{name: "CA group-readable", spoil: func(t *testing.T, f TLSFiles) { require.NoError(t, os.Chmod(f.CA, 0o640)) }, at: now, replace: true},
		{name: "garbage CA", spoil: func(t *testing.T, f TLSFiles) { require.NoError(t, os.WriteFile(f.CA, []byte("x"), 0o600)) }, at: now, replace: true},
		{name: "client cert of another set", spoil: func(t *testing.T, f TLSFiles) {
			other, err := EnsureCerts(filepath.Join(t.TempDir(), "o"), now)
			require.NoError(t, err)
			copyFile(t, other.ClientCert, f.ClientCert)
			copyFile(t, other.ClientKey, f.ClientKey)
		}, at: now, replace: true},
		{name: "symlinked key", spoil: func(t *testing.T, f TLSFiles) {
			require.NoError(t, os.Rename(f.ClientKey, f.ClientKey+".real"))
			require.NoError(t, os.Symlink(f.ClientKey+".real", f.ClientKey))
		}, at: now, err: "not a regular file"},
		{name: "key owned by another user", spoil: func(t *testing.T, f TLSFiles) {
			requireRoot(t)
			require.NoError(t, os.Chown(f.ClientKey, nobodyUID, nobodyUID))
		}, at: now, err: "belongs to uid"},
		{name: "directory owned by another user", spoil: func(t *testing.T, f TLSFiles) {
			requireRoot(t)
			require.NoError(t, os.Chown(f.Dir, nobodyUID, nobodyUID))
		}, at: now, err: "belongs to uid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "tls")
			f, err := EnsureCerts(dir, now)
			require.NoError(t, err)
			before := readFile(t, f.CA)
			tc.spoil(t, f)
			_, err = EnsureCerts(dir, tc.at)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			after := readFile(t, f.CA)
			require.Equal(t, tc.replace, !bytes.Equal(before, after), "CA replaced")
			for _, name := range f.all() {
				info, err := os.Stat(name)
				require.NoError(t, err)
				require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), name)
			}
			_, err = tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
			require.NoError(t, err)
		})
	}
}

func TestEnsureCertsTightensItsDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	require.NoError(t, os.Mkdir(dir, 0o755))
	_, err := EnsureCerts(dir, time.Now())
	require.NoError(t, err)
	info, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm())
}

func readCert(t *testing.T, name string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(readFile(t, name))
	require.NotNil(t, block, "PEM in %s", name)
	c, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return c
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return b
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, os.WriteFile(to, readFile(t, from), 0o600))
}

func serverConfig(t *testing.T, f TLSFiles) *tls.Config {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(f.ServerCert, f.ServerKey)
	require.NoError(t, err)
	pool, err := f.caPool()
	require.NoError(t, err)
	return &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
}

// handshake runs a TLS handshake over a real loopback connection and
// returns the client's error, including a rejection the server sends after
// the client thinks it is done (TLS 1.3 reports client-certificate failures
// on the first read).
func handshake(t *testing.T, server, client *tls.Config) error {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", server)
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer func() { _ = c.Close() }()
		if c.(*tls.Conn).Handshake() == nil {
			_, _ = c.Write([]byte("ok"))
		}
	}()
	c, err := tls.Dial("tcp", l.Addr().String(), client)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2)
	_, err = c.Read(buf)
	return err
}
