package sandbox

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMatchDomain(t *testing.T) {
	tests := []struct {
		pattern, host string
		want          bool
	}{
		{"example.com", "example.com", true},
		{"example.com", "api.example.com", false},
		{"*.example.com", "api.example.com", true},
		{"*.example.com", "a.b.example.com", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "evilexample.com", false},
		{"example.com", "example.com.evil.org", false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, matchDomain(tc.pattern, tc.host), "%s vs %s", tc.pattern, tc.host)
	}
}

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

func TestValidatePattern(t *testing.T) {
	for _, ok := range []string{"example.com", "*.example.com", "Example.COM.", "1.2.3.4"} {
		_, err := validatePattern(ok)
		assert.NoError(t, err, ok)
	}
	for _, bad := range []string{"", "*", "*.", "http://example.com", "ex*ample.com", "a.com/x", "a.com:443", "*.*.com"} {
		_, err := validatePattern(bad)
		assert.Error(t, err, bad)
	}
}

// TestProxyProtocols drives the host proxy directly over TCP with raw HTTP
// CONNECT, plain forwarding and SOCKS5, against a real local HTTP server.
func TestProxyProtocols(t *testing.T) {
	port, resolver, hits := allowlistServer(t)
	cfg := Config{Resolver: resolver}.withDefaults()
	p, err := startProxy(cfg, Network{AllowedDomains: []string{"allowed.test"}, AllowLocalBinding: true}, "tcp", "127.0.0.1:0")
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
