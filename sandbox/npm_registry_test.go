package sandbox

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/netpolicy"
	"github.com/custos-dev/custos/sandbox/provision"
)

// npmTarball is a package tarball as a registry serves it.
func npmTarball(t *testing.T, files map[string]string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: "package/" + name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1e9, 0)}))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

// npmRegistry serves one package, tiny-add 1.0.0, as a registry does; it
// returns its port, the tarball and what it was asked for.
func npmRegistry(t *testing.T) (port string, tgz []byte, seen func() string) {
	tgz = npmTarball(t, map[string]string{
		"package.json": `{"name":"tiny-add","version":"1.0.0","main":"index.js"}`,
		"index.js":     "module.exports = (a, b) => a + b;\n",
	})
	sum := sha512.Sum512(tgz)
	integrity := "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	var mu sync.Mutex
	var hits []string
	seen = func() string { mu.Lock(); defer mu.Unlock(); return strings.Join(hits, " ") }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.URL.Path)
		mu.Unlock()
		host := "http://" + r.Host
		switch r.URL.Path {
		case "/tiny-add":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{
				"name": "tiny-add", "dist-tags": map[string]string{"latest": "1.0.0"},
				"versions": map[string]any{"1.0.0": map[string]any{
					"name": "tiny-add", "version": "1.0.0",
					"dist": map[string]string{"tarball": host + "/tiny-add/-/tiny-add-1.0.0.tgz", "integrity": integrity},
				}},
			})
		case "/tiny-add/-/tiny-add-1.0.0.tgz":
			_, _ = w.Write(tgz)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	var err error
	_, port, err = net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	return port, tgz, seen
}

// TestNpmInstallThroughAllowedRegistry: with the registry's domain allowed,
// `npm install` downloads through the allowlist proxy into the workspace's
// own npm cache (never the host's), and `npm test` runs what it installed.
func TestNpmInstallThroughAllowedRegistry(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("npm is not installed (CI must have it)")
		}
		t.Skip("npm is not installed")
	}
	port, tgz, seen := npmRegistry(t)
	resolver := func(ctx context.Context, host string) ([]netip.Addr, error) {
		if host == "registry.test" {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, errors.New("test resolver: no such host " + host)
	}

	home, env, _ := fakeHome(t)
	cache := t.TempDir()
	sb := newBwrap(t, Config{Resolver: resolver, HostEnv: env, CacheDir: cache})
	ws := t.TempDir()
	write(t, ws, ".npmrc", "registry=http://registry.test:"+port+"/\n")
	write(t, ws, "package.json", `{"name":"app","version":"1.0.0","private":true,"scripts":{"test":"node --test"},"devDependencies":{"tiny-add":"1.0.0"}}`)
	write(t, ws, "add.test.js", "const test = require('node:test');\nconst assert = require('node:assert');\nconst add = require('tiny-add');\ntest('adds', () => assert.strictEqual(add(2, 3), 5));\n")
	before := snapshot(t, filepath.Join(home, ".npm"))

	res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash("npm install --no-audit --no-fund && npm test"), Timeout: 3 * time.Minute,
		Network: netpolicy.Policy{AllowedDomains: []string{"registry.test"}, AllowLocalBinding: true}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "stdout: %s\nstderr: %s\nregistry saw: %v", res.Stdout, res.Stderr, seen())
	assert.Contains(t, res.Stdout, "pass 1")
	assert.Contains(t, seen(), "/tiny-add/-/tiny-add-1.0.0.tgz", "downloaded through the proxy")

	// The download landed in the workspace's own npm cache, and the host's
	// npm cache is as it was.
	found := false
	_ = filepath.Walk(filepath.Join(provision.CacheDirFor(cache, ws), "cache", "npm"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(tgz)) {
			found = true
		}
		return nil
	})
	assert.True(t, found, "the tarball is in the workspace's npm cache")
	assert.Equal(t, before, snapshot(t, filepath.Join(home, ".npm")))
}

// TestNpmCiOfflineFromTheHostCache: offline, `npm ci` installs what the
// host's npm cache holds, read-only, and `npm test` runs it; nothing of the
// host's cache changes and the registry is never asked.
func TestNpmCiOfflineFromTheHostCache(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("npm is not installed (CI must have it)")
		}
		t.Skip("npm is not installed")
	}
	port, _, seen := npmRegistry(t)
	home, env, _ := fakeHome(t)
	ws := t.TempDir()
	write(t, ws, ".npmrc", "registry=http://127.0.0.1:"+port+"/\n")
	write(t, ws, "package.json", `{"name":"app","version":"1.0.0","private":true,"scripts":{"test":"node --test"},"devDependencies":{"tiny-add":"1.0.0"}}`)
	write(t, ws, "add.test.js", "const test = require('node:test');\nconst assert = require('node:assert');\nconst add = require('tiny-add');\ntest('adds', () => assert.strictEqual(add(2, 3), 5));\n")
	// On the host, as the user did once: the install fills ~/.npm.
	install := exec.Command("npm", "install", "--no-audit", "--no-fund")
	install.Dir = ws
	install.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(home, ".npm"), "HOME="+home)
	out, err := install.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.RemoveAll(filepath.Join(ws, "node_modules")))
	asked := seen()
	before := snapshot(t, filepath.Join(home, ".npm"))

	sb := newBwrap(t, Config{HostEnv: env})
	res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash("npm ci --no-audit --no-fund && npm test"), Timeout: 3 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "stdout: %s\nstderr: %s", res.Stdout, res.Stderr)
	assert.Contains(t, res.Stdout, "pass 1")
	assert.Equal(t, asked, seen(), "offline: the registry was not asked")
	assert.Equal(t, before, snapshot(t, filepath.Join(home, ".npm")), "the host's npm cache is unchanged")
}
