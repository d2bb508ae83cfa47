package netproxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/netpolicy"
)

func TestPublicAddr(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"93.184.216.34", true}, {"2606:2800:220:1::1", true},
		{"127.0.0.1", false}, {"::1", false}, {"10.1.2.3", false}, {"172.16.0.1", false},
		{"192.168.1.1", false}, {"169.254.169.254", false}, {"fe80::1", false}, {"fd00::1", false},
		{"0.0.0.0", false}, {"100.64.0.1", false}, {"::ffff:127.0.0.1", false}, {"224.0.0.1", false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, publicAddr(netip.MustParseAddr(tc.addr)), tc.addr)
	}
}

// TestProxyProtocols drives the host proxy directly over TCP with raw HTTP
// CONNECT, plain forwarding and SOCKS5, against a real local HTTP server.
func TestProxyProtocols(t *testing.T) {
	port, resolver, hits := proxyTestServer(t)
	p, err := Start(slog.New(slog.DiscardHandler), resolver, netpolicy.Policy{AllowedDomains: []string{"allowed.test"}, AllowLocalBinding: true}, "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer p.Close()
	pn, _ := strconv.Atoi(port)

	connectGet := func(host string) (string, error) {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			return "", err
		}
		defer c.Close()
		fmt.Fprintf(c, "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", host, port, host, port)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return "", err
		}
		if resp.StatusCode != 200 {
			return resp.Status, nil
		}
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host)
		b, err := io.ReadAll(br)
		return string(b), err
	}
	socksGet := func(host string) (string, error) {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			return "", err
		}
		defer c.Close()
		req := []byte{5, 1, 0, 5, 1, 0, 3, byte(len(host))}
		req = append(req, host...)
		req = binary.BigEndian.AppendUint16(req, uint16(pn))
		if _, err := c.Write(req); err != nil {
			return "", err
		}
		reply := make([]byte, 12)
		if _, err := io.ReadFull(c, reply); err != nil {
			return "", err
		}
		if reply[3] != 0 {
			return fmt.Sprintf("socks reply %d", reply[3]), nil
		}
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host)
		b, err := io.ReadAll(c)
		return string(b), err
	}
	tests := []struct {
		name string
		get  func(string) (string, error)
		host string
		want string
	}{
		{"connect allowed", connectGet, "allowed.test", "hello from allowed.test"},
		{"connect refused", connectGet, "other.test", "403"},
		{"socks allowed", socksGet, "allowed.test", "hello from allowed.test"},
		{"socks refused", socksGet, "other.test", "socks reply 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := hits.Load()
			out, err := tc.get(tc.host)
			require.NoError(t, err)
			assert.Contains(t, out, tc.want)
			if strings.Contains(tc.want, "hello") {
				assert.Equal(t, before+1, hits.Load())
			} else {
				assert.Equal(t, before, hits.Load())
			}
		})
	}
}

// proxyTestServer is an HTTP server on 127.0.0.1 that the test-only resolver
// names allowed.test, denied.allowed.test and sneaky.test.
func proxyTestServer(t *testing.T) (port string, resolver Resolver, hits *atomic.Int32) {
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
