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
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/custos-dev/custos/netpolicy"
)

// domainPolicy decides which host names a command may reach.
type domainPolicy struct {
	allowed, denied []string
	allowLocal      bool
}

func newDomainPolicy(n netpolicy.Policy) (*domainPolicy, error) {
	d := &domainPolicy{allowLocal: n.AllowLocalBinding}
	for _, p := range n.AllowedDomains {
		v, err := netpolicy.ValidatePattern(p)
		if err != nil {
			return nil, fmt.Errorf("sandbox: allowed domains: %w", err)
		}
		d.allowed = append(d.allowed, v)
	}
	for _, p := range n.DeniedDomains {
		v, err := netpolicy.ValidatePattern(p)
		if err != nil {
			return nil, fmt.Errorf("sandbox: denied domains: %w", err)
		}
		d.denied = append(d.denied, v)
	}
	return d, nil
}

// checkName applies the name rules: denied beats allowed, and an IP literal
// passes only when it is itself listed (it is then still subject to the
// address check).
func (d *domainPolicy) checkName(host string) error {
	for _, p := range d.denied {
		if netpolicy.Match(p, host) {
			return fmt.Errorf("%s is denied by %q", host, p)
		}
	}
	for _, p := range d.allowed {
		if netpolicy.Match(p, host) {
			return nil
		}
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return fmt.Errorf("IP literal %s is not in the allowlist", host)
	}
	return fmt.Errorf("%s is not in the allowlist", host)
}

var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64 can embed private v4
	netip.MustParsePrefix("2002::/16"),    // 6to4 likewise
}

// publicAddr reports whether a is a globally routable unicast address.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// Proxy is the host side of the network allowlist: HTTP CONNECT, plain HTTP
// forwarding and SOCKS5 on one listener (told apart by the first byte).
type Proxy struct {
	ln       net.Listener
	dir      string
	policy   *domainPolicy
	resolve  Resolver
	log      *slog.Logger
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closed   bool
	dialTime time.Duration
}

// Resolver looks a host name up for the proxy; nil is the system's DNS.
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// Start listens on network/addr; for "unix" with an empty addr it
// creates a private (0700) directory for the socket. It logs refusals to
// log.
func Start(log *slog.Logger, resolve Resolver, n netpolicy.Policy, network, addr string) (*Proxy, error) {
	pol, err := newDomainPolicy(n)
	if err != nil {
		return nil, err
	}
	p := &Proxy{policy: pol, log: log, conns: map[net.Conn]struct{}{}, dialTime: 10 * time.Second}
	p.resolve = resolve
	if p.resolve == nil {
		p.resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if network == "unix" && addr == "" {
		dir, err := os.MkdirTemp("", "custos-proxy-")
		if err != nil {
			return nil, fmt.Errorf("sandbox: proxy dir: %w", err)
		}
		p.dir = dir
		addr = filepath.Join(dir, "proxy.sock")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		if p.dir != "" {
			os.RemoveAll(p.dir)
		}
		return nil, fmt.Errorf("sandbox: proxy listen: %w", err)
	}
	p.ln = ln
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *Proxy) SocketPath() string { return p.ln.Addr().String() }
func (p *Proxy) Addr() string       { return p.ln.Addr().String() }

func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
	return err
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			p.handle(c)
		}()
	}
}

func (p *Proxy) handle(c net.Conn) {
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	if first[0] == 0x05 {
		p.socks5(c, br)
		return
	}
	p.httpProxy(c, br)
}

// dial checks host against the policy, resolves it, checks every address
// (DNS must not steer an allowed name into the local network) and connects to
// a checked address, never re-resolving.
func (p *Proxy) dial(ctx context.Context, proto, host, port string) (net.Conn, error) {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if err := p.policy.checkName(host); err != nil {
		return nil, p.refuse(proto, host, port, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, p.refuse(proto, host, port, fmt.Errorf("bad port %q", port))
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		rctx, cancel := context.WithTimeout(ctx, p.dialTime)
		addrs, err = p.resolve(rctx, host)
		cancel()
		if err != nil {
			return nil, p.refuse(proto, host, port, fmt.Errorf("resolve: %w", err))
		}
		if len(addrs) == 0 {
			return nil, p.refuse(proto, host, port, errors.New("resolve: no addresses"))
		}
	}
	for _, a := range addrs {
		if !publicAddr(a) && !p.policy.allowLocal {
			return nil, p.refuse(proto, host, port, fmt.Errorf("resolves to non-public address %s", a))
		}
	}
	var lastErr error
	d := net.Dialer{Timeout: p.dialTime}
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			if !p.track(c) {
				return nil, errors.New("proxy closed")
			}
			p.log.Info("sandbox proxy: allowed", "proto", proto, "host", host, "port", port, "addr", a.String())
			return c, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("connect %s:%s: %w", host, port, lastErr)
}

type refusal struct{ err error }

func (r refusal) Error() string { return "refused: " + r.err.Error() }
func (r refusal) Unwrap() error { return r.err }

func (p *Proxy) refuse(proto, host, port string, err error) error {
	p.log.Warn("sandbox proxy: refused", "proto", proto, "host", host, "port", port, "reason", err.Error())
	return refusal{err}
}

func (p *Proxy) httpProxy(c net.Conn, br *bufio.Reader) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	reply := func(code int, msg string) {
		fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", code, http.StatusText(code), len(msg)+1, msg+"\n")
	}
	ctx := context.Background()
	if req.Method == http.MethodConnect {
		host, port, err := net.SplitHostPort(req.Host)
		if err != nil {
			reply(http.StatusBadRequest, "custos sandbox proxy: bad CONNECT target")
			return
		}
		up, err := p.dial(ctx, "connect", strings.Trim(host, "[]"), port)
		if err != nil {
			p.httpError(reply, err)
			return
		}
		defer p.untrack(up)
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
			return
		}
		pipe(c, br, up)
		return
	}
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" {
		reply(http.StatusBadRequest, "custos sandbox proxy: only CONNECT and absolute http:// requests are proxied")
		return
	}
	host, port := req.URL.Hostname(), req.URL.Port()
	if port == "" {
		port = "80"
	}
	up, err := p.dial(ctx, "http", host, port)
	if err != nil {
		p.httpError(reply, err)
		return
	}
	defer p.untrack(up)
	// One request per connection keeps the forwarder trivial and correct:
	// the upstream closes after the response, and so do we.
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Close = true
	req.RequestURI = ""
	if err := req.Write(up); err != nil {
		return
	}
	_, _ = io.Copy(c, up)
}

func (p *Proxy) httpError(reply func(int, string), err error) {
	var r refusal
	if errors.As(err, &r) {
		reply(http.StatusForbidden, "custos sandbox proxy: "+err.Error())
		return
	}
	reply(http.StatusBadGateway, "custos sandbox proxy: "+err.Error())
}

// socks5 implements the CONNECT command of RFC 1928 without authentication.
func (p *Proxy) socks5(c net.Conn, br *bufio.Reader) {
	hdr := make([]byte, 2)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return
	}
	methods := make([]byte, int(hdr[1]))
	if _, err := io.ReadFull(br, methods); err != nil {
		return
	}
	if _, err := c.Write([]byte{5, 0}); err != nil {
		return
	}
	req := make([]byte, 4)
	if _, err := io.ReadFull(br, req); err != nil {
		return
	}
	fail := func(code byte) { _, _ = c.Write([]byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0}) }
	if req[0] != 5 {
		return
	}
	if req[1] != 1 { // only CONNECT
		fail(7)
		return
	}
	var host string
	switch req[3] {
	case 1:
		b := make([]byte, 4)
		if _, err := io.ReadFull(br, b); err != nil {
			return
		}
		host = netip.AddrFrom4([4]byte(b)).String()
	case 4:
		b := make([]byte, 16)
		if _, err := io.ReadFull(br, b); err != nil {
			return
		}
		host = netip.AddrFrom16([16]byte(b)).String()
	case 3:
		l, err := br.ReadByte()
		if err != nil {
			return
		}
		b := make([]byte, int(l))
		if _, err := io.ReadFull(br, b); err != nil {
			return
		}
		host = string(b)
	default:
		fail(8)
		return
	}
	pb := make([]byte, 2)
	if _, err := io.ReadFull(br, pb); err != nil {
		return
	}
	port := strconv.Itoa(int(binary.BigEndian.Uint16(pb)))
	_ = c.SetReadDeadline(time.Time{})
	up, err := p.dial(context.Background(), "socks5", host, port)
	if err != nil {
		var r refusal
		if errors.As(err, &r) {
			fail(2) // connection not allowed by ruleset
		} else {
			fail(5)
		}
		return
	}
	defer p.untrack(up)
	if _, err := c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0}); err != nil {
		return
	}
	pipe(c, br, up)
}

// pipe copies both ways until either side is done; buffered bytes already
// read from the client go first.
func pipe(client net.Conn, br *bufio.Reader, up net.Conn) {
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(up, br)
		if cw, ok := up.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, up)
		if cw, ok := client.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
}
