package inbox

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// A deployed worker (one that connects to a Temporal server of its own
// rather than starting the embedded one) has no Web UI gate to sit behind:
// it serves the page on an address of its own, guarded by tokens the
// operator sets, each naming its person. It is never on unless the
// operator sets both an address and tokens, and it refuses an address
// beyond loopback without TLS (a token or cookie in clear text would let
// anyone on the path answer approvals).

// Environment of a deployed worker's inbox.
const (
	EnvAddr       = "CUSTOS_INBOX_ADDR"        // host:port; unset: no inbox
	EnvTokens     = "CUSTOS_INBOX_TOKENS"      // name=token,name=token
	EnvTokensFile = "CUSTOS_INBOX_TOKENS_FILE" // a file of "name token" lines (# comments)
	EnvTLSCert    = "CUSTOS_INBOX_TLS_CERT"
	EnvTLSKey     = "CUSTOS_INBOX_TLS_KEY"
)

// minTokenLen keeps guessable tokens out: 32 characters is 190 bits of
// base64, what `openssl rand -base64 32` prints.
const minTokenLen = 32

// GateConfig is a deployed inbox's configuration.
type GateConfig struct {
	Addr              string
	Tokens            map[string]string // token → name
	CertFile, KeyFile string
}

// GateConfigFromEnv reads the configuration; enabled is false when
// CUSTOS_INBOX_ADDR is unset.
func GateConfigFromEnv(getenv func(string) string) (cfg GateConfig, enabled bool, err error) {
	cfg.Addr = strings.TrimSpace(getenv(EnvAddr))
	if cfg.Addr == "" {
		return cfg, false, nil
	}
	cfg.CertFile, cfg.KeyFile = getenv(EnvTLSCert), getenv(EnvTLSKey)
	lines := strings.Split(getenv(EnvTokens), ",")
	if f := getenv(EnvTokensFile); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return cfg, true, fmt.Errorf("inbox: %s: %w", EnvTokensFile, err)
		}
		lines = append(lines, strings.Split(string(b), "\n")...)
	}
	if cfg.Tokens, err = parseTokens(lines); err != nil {
		return cfg, true, err
	}
	return cfg, true, cfg.Validate()
}

// parseTokens reads "name=token" or "name token" entries.
func parseTokens(lines []string) (map[string]string, error) {
	out := map[string]string{}
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		name, tok, ok := strings.Cut(l, "=")
		if !ok {
			f := strings.Fields(l)
			ok = len(f) == 2
			if ok {
				name, tok = f[0], f[1]
			}
		}
		name, tok = strings.TrimSpace(name), strings.TrimSpace(tok)
		if !ok || name == "" {
			return nil, fmt.Errorf("inbox: token entry %q: want name=token", redactEntry(l))
		}
		if len(tok) < minTokenLen {
			return nil, fmt.Errorf("inbox: the token of %s is shorter than %d characters (make one with: openssl rand -base64 32)", name, minTokenLen)
		}
		if _, dup := out[tok]; dup {
			return nil, fmt.Errorf("inbox: two people share one token (%s and %s)", out[tok], name)
		}
		out[tok] = name
	}
	return out, nil
}

func redactEntry(l string) string {
	if len(l) > 8 {
		return l[:4] + "…"
	}
	return "…"
}

// Validate refuses an inbox nobody can safely use: no tokens, half a TLS
// pair, or plain HTTP beyond loopback.
func (c GateConfig) Validate() error {
	if len(c.Tokens) == 0 {
		return fmt.Errorf("inbox: %s is set but no tokens are (%s or %s): the page is never open to everyone", EnvAddr, EnvTokens, EnvTokensFile)
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return fmt.Errorf("inbox: set both %s and %s, or neither", EnvTLSCert, EnvTLSKey)
	}
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("inbox: %s=%q: %w", EnvAddr, c.Addr, err)
	}
	if c.CertFile == "" && !loopback(host) {
		return fmt.Errorf("inbox: %s=%q is not a loopback address and no TLS certificate is set (%s, %s): tokens would cross the network in clear text", EnvAddr, c.Addr, EnvTLSCert, EnvTLSKey)
	}
	return nil
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// GateCookie is the session cookie of a deployed inbox.
const GateCookie = "custos-inbox"

// Gate trades an operator-set token (in the link, ?token=…) for a session
// cookie, as the Web UI gate does with its one-time tokens, except that
// these tokens last: the operator hands them out and takes them back by
// changing the list. The session maps to the token's name, which becomes
// the verified `by` of the person's answers.
type Gate struct {
	tokens map[[sha256.Size]byte]string
	secure bool
	next   http.Handler

	mu       sync.Mutex
	sessions map[[sha256.Size]byte]session
}

// session is a signed-in browser: whose, and until when.
type session struct {
	name  string
	until time.Time
}

// sessionTTL bounds a session: a lost laptop's cookie stops working within
// a working day, and the person opens their link again.
const sessionTTL = 12 * time.Hour

// NewGate guards next with cfg's tokens; secure marks the cookie Secure
// (served over TLS).
func NewGate(cfg GateConfig, secure bool) *Gate {
	g := &Gate{tokens: map[[sha256.Size]byte]string{}, secure: secure, sessions: map[[sha256.Size]byte]session{}}
	for tok, name := range cfg.Tokens {
		g.tokens[sha256.Sum256([]byte(tok))] = name
	}
	return g
}

// Wrap sets the guarded handler (built with g.Identify, so it is made
// after the gate).
func (g *Gate) Wrap(next http.Handler) *Gate { g.next = next; return g }

// Identify names the person of a request by its session cookie.
func (g *Gate) Identify(r *http.Request) (string, bool) {
	c, err := r.Cookie(GateCookie)
	if err != nil {
		return "", false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s, ok := g.sessions[sha256.Sum256([]byte(c.Value))]
	if !ok || time.Now().After(s.until) {
		return "", false
	}
	return s.name, true
}

// tokenName looks a token up in constant time per entry.
func (g *Gate) tokenName(tok string) (string, bool) {
	h := sha256.Sum256([]byte(tok))
	for k, name := range g.tokens {
		if subtle.ConstantTimeCompare(k[:], h[:]) == 1 {
			return name, true
		}
	}
	return "", false
}

func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if tok := r.URL.Query().Get("token"); tok != "" {
		g.login(w, r, tok)
		return
	}
	if _, ok := g.Identify(r); !ok {
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, "custos inbox: open the link with your token (?token=…) that the operator gave you", http.StatusUnauthorized)
		return
	}
	g.next.ServeHTTP(w, r)
}

func (g *Gate) login(w http.ResponseWriter, r *http.Request, tok string) {
	name, ok := g.tokenName(tok)
	if !ok {
		http.Error(w, "custos inbox: unknown token", http.StatusUnauthorized)
		return
	}
	sess, err := secret()
	if err != nil {
		http.Error(w, "custos inbox: "+err.Error(), http.StatusInternalServerError)
		return
	}
	now := time.Now()
	g.mu.Lock()
	for k, s := range g.sessions { // ended ones go, so the map stays small
		if now.After(s.until) {
			delete(g.sessions, k)
		}
	}
	g.sessions[sha256.Sum256([]byte(sess))] = session{name: name, until: now.Add(sessionTTL)}
	g.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: GateCookie, Value: sess, Path: "/", HttpOnly: true, Secure: g.secure,
		SameSite: http.SameSiteStrictMode, MaxAge: int(sessionTTL / time.Second)})
	q := r.URL.Query()
	q.Del("token")
	clean := url.URL{Path: "/" + strings.TrimLeft(r.URL.Path, "/\\"), RawQuery: q.Encode()}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, clean.RequestURI(), http.StatusSeeOther)
}

// ServeGate serves h behind a Gate on cfg.Addr until ctx ends; it returns
// the address it listens on once it does.
func ServeGate(ctx context.Context, cfg GateConfig, g *Gate, logger *slog.Logger) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return "", fmt.Errorf("inbox: listen on %s (%s): %w", cfg.Addr, EnvAddr, err)
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		var err error
		if cfg.CertFile != "" {
			err = srv.ServeTLS(ln, cfg.CertFile, cfg.KeyFile)
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("inbox: server stopped", "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr().String(), nil
}
