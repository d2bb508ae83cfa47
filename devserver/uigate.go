package devserver

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// uiGate is the Web UI's front door, the way Jupyter guards its notebooks:
// the URL printed at start carries a one-time token; the first request with
// it gets a session cookie (HttpOnly, SameSite=Strict) and a redirect to the
// same page without the token; every later request needs the cookie. Without
// either, the UI and its API answer 401. Behind the gate the ui-server listens
// on its own loopback port that requires the owner's client certificate, so
// it cannot be reached around the gate either.
type uiGate struct {
	proxy  *httputil.ReverseProxy
	cookie string // cookie name; carries the port, since cookies ignore ports
	logger *slog.Logger
	// tokenDir is where other processes of the owner leave minted tokens
	// (uitoken.go); "" for none.
	tokenDir string

	// mounted is a handler of custos' own (the approval inbox) served
	// behind the same cookie instead of the proxy, under its prefix; nil
	// until Server.Mount. Atomic: it is set after the gate serves, once
	// the caller has a Temporal client to give the handler.
	mounted atomic.Pointer[mount]

	mu       sync.Mutex
	tokens   map[[sha256.Size]byte]bool // unused login tokens, by hash
	sessions map[[sha256.Size]byte]bool // session cookie values, by hash
}

// tokenParam is the query parameter of the login URL, as in Jupyter.
const tokenParam = "token"

func newUIGate(backend string, clientTLS *tls.Config, port int, tokenDir string, logger *slog.Logger) *uiGate {
	target := &url.URL{Scheme: "https", Host: backend}
	g := &uiGate{
		cookie:   "custos-ui-" + strconv.Itoa(port),
		logger:   logger,
		tokenDir: tokenDir,
		tokens:   map[[sha256.Size]byte]bool{},
		sessions: map[[sha256.Size]byte]bool{},
	}
	g.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// The ui-server builds links and checks origins from the Host
			// the browser used.
			r.Out.Host = r.In.Host
			g.dropSessionCookie(r.Out)
		},
		// Kept-alive connections: each new one costs a handshake (and a
		// log line from the ui-server's certificate loader).
		Transport: &http.Transport{TLSClientConfig: clientTLS, MaxIdleConnsPerHost: 16, IdleConnTimeout: 5 * time.Minute},
		// The UI streams nothing long-lived, but flushing at once costs
		// nothing and keeps any event stream live.
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			g.logger.Warn("devserver: Web UI backend", "path", r.URL.Path, "error", err)
			http.Error(w, "custos Web UI: backend unavailable", http.StatusBadGateway)
		},
	}
	return g
}

// newToken mints a login token that works once.
func (g *uiGate) newToken() (string, error) {
	tok, err := randomSecret()
	if err != nil {
		return "", err
	}
	g.mu.Lock()
	g.tokens[sha256.Sum256([]byte(tok))] = true
	g.mu.Unlock()
	return tok, nil
}

func randomSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("devserver: random secret: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func (g *uiGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A page on another site can point a name it controls at 127.0.0.1 (DNS
	// rebinding); only loopback names reach the UI.
	if !loopbackHost(r.Host) {
		http.Error(w, "custos Web UI: unexpected Host "+strconv.Quote(r.Host), http.StatusForbidden)
		return
	}
	if r.URL.Query().Has(tokenParam) {
		g.login(w, r)
		return
	}
	m := g.mounted.Load()
	if !g.hasSession(r) {
		unauthorized(w, m.owns(r.URL.Path))
		return
	}
	if m.owns(r.URL.Path) {
		// The mounted handler sees the gate's cookie: it binds its CSRF
		// tokens to the session (Server.SessionCookie).
		m.handler.ServeHTTP(w, r)
		return
	}
	g.proxy.ServeHTTP(w, r)
}

// mount is a handler served under a path prefix ("/custos/").
type mount struct {
	prefix  string
	handler http.Handler
}

func (m *mount) owns(path string) bool {
	return m != nil && (strings.HasPrefix(path, m.prefix) || path+"/" == m.prefix)
}

// login trades a valid token for a session, then sends the browser to the
// same URL without the token, so it stays out of history and bookmarks.
func (g *uiGate) login(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tok := q.Get(tokenParam)
	q.Del(tokenParam)
	clean := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	// "//host/..." (or "/\\host") would send the browser to another site.
	clean.Path = "/" + strings.TrimLeft(clean.Path, "/\\")

	if g.useToken(tok) {
		sess, err := randomSecret()
		if err != nil {
			http.Error(w, "custos Web UI: "+err.Error(), http.StatusInternalServerError)
			return
		}
		g.mu.Lock()
		g.sessions[sha256.Sum256([]byte(sess))] = true
		g.mu.Unlock()
		http.SetCookie(w, &http.Cookie{
			Name: g.cookie, Value: sess, Path: "/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode,
			// Plain HTTP on loopback: a Secure cookie would never come back.
		})
	} else if !g.hasSession(r) {
		// A used, wrong or foreign token: no way in without a session.
		unauthorized(w, g.mounted.Load().owns(r.URL.Path))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, clean.RequestURI(), http.StatusSeeOther)
}

// useToken reports whether tok is an unused login token, and uses it up.
func (g *uiGate) useToken(tok string) bool {
	if tok == "" {
		return false
	}
	h := sha256.Sum256([]byte(tok))
	g.mu.Lock()
	ok := g.tokens[h]
	delete(g.tokens, h)
	g.mu.Unlock()
	return ok || useMintedToken(g.tokenDir, tok, time.Now())
}

func (g *uiGate) hasSession(r *http.Request) bool {
	for _, c := range r.CookiesNamed(g.cookie) {
		h := sha256.Sum256([]byte(c.Value))
		g.mu.Lock()
		ok := g.sessions[h]
		g.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// dropSessionCookie keeps the gate's cookie away from the ui-server: it
// needs the UI's own cookies (CSRF), not the key to the door.
func (g *uiGate) dropSessionCookie(r *http.Request) {
	cookies := r.Cookies()
	r.Header.Del("Cookie")
	for _, c := range cookies {
		if c.Name != g.cookie {
			r.AddCookie(c)
		}
	}
}

func unauthorized(w http.ResponseWriter, mounted bool) {
	w.Header().Set("Cache-Control", "no-store")
	cmd := "starter ui-url"
	if mounted {
		cmd = "starter inbox-url"
	}
	http.Error(w, "custos Web UI: open the URL the custos worker printed at start (it carries a one-time token), "+
		"or get a new one with: "+cmd, http.StatusUnauthorized)
}

// loopbackHost reports whether a Host header names this machine's loopback
// interface: localhost or a loopback IP, with or without a port.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
