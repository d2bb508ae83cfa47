// Package netpolicy is where a sandboxed command may connect: the one type
// the settings files, the approval pipeline, the tools' requests and the
// sandbox's egress proxy all hold, and how a host name is matched against
// it. It does no I/O: the workflow decides with it, the proxy enforces it.
package netpolicy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Policy is the network a sandboxed command gets: none unless a domain is
// allowed, and then only through custos' egress proxy.
type Policy struct {
	// AllowedDomains are "example.com" (that host) or "*.example.com"
	// (any subdomain, not the apex) patterns a command may reach.
	AllowedDomains []string `json:"allowedDomains,omitempty"`
	// DeniedDomains win over AllowedDomains.
	DeniedDomains []string `json:"deniedDomains,omitempty"`
	// AllowLocalBinding lets a command listen on the sandbox's own
	// loopback (a test server talking to itself).
	AllowLocalBinding bool `json:"allowLocalBinding,omitempty"`
}

// Join is p with q's domains added and its local binding allowed if
// either allows it: what a command gets from the flags and the settings
// together.
func (p Policy) Join(q Policy) Policy {
	return Policy{
		AllowedDomains:    append(append([]string{}, p.AllowedDomains...), q.AllowedDomains...),
		DeniedDomains:     append(append([]string{}, p.DeniedDomains...), q.DeniedDomains...),
		AllowLocalBinding: p.AllowLocalBinding || q.AllowLocalBinding,
	}
}

// Allows reports whether p lets a command reach host (lower case) through
// the proxy: a denied pattern wins over an allowed one.
func (p Policy) Allows(host string) bool {
	for _, d := range p.DeniedDomains {
		if Match(strings.ToLower(d), host) {
			return false
		}
	}
	for _, d := range p.AllowedDomains {
		if Match(strings.ToLower(d), host) {
			return true
		}
	}
	return false
}

// Match reports whether host matches pattern ("example.com", or
// "*.example.com" for any subdomain of it, not the apex), both lower case.
func Match(pattern, host string) bool {
	if suffix, ok := strings.CutPrefix(pattern, "*."); ok {
		return strings.HasSuffix(host, "."+suffix)
	}
	return host == pattern
}

// ValidatePattern accepts "example.com", "*.example.com" and an IP
// literal, returned in lower case without a trailing dot, and rejects
// anything else clearly.
func ValidatePattern(p string) (string, error) {
	p = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(p), "."))
	if p == "" {
		return "", errors.New("empty domain pattern")
	}
	rest := strings.TrimPrefix(p, "*.")
	if rest == "" || strings.ContainsAny(rest, "*/:@ \t?#[]") {
		if _, err := netip.ParseAddr(strings.Trim(p, "[]")); err == nil {
			return strings.Trim(p, "[]"), nil
		}
		return "", fmt.Errorf("invalid domain pattern %q (want example.com or *.example.com)", p)
	}
	return p, nil
}
