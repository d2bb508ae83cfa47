package netpolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMatch(t *testing.T) {
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
		assert.Equal(t, tc.want, Match(tc.pattern, tc.host), "%s vs %s", tc.pattern, tc.host)
	}
}

func TestValidatePattern(t *testing.T) {
	for _, ok := range []string{"example.com", "*.example.com", "Example.COM.", "1.2.3.4"} {
		_, err := ValidatePattern(ok)
		assert.NoError(t, err, ok)
	}
	for _, bad := range []string{"", "*", "*.", "http://example.com", "ex*ample.com", "a.com/x", "a.com:443", "*.*.com"} {
		_, err := ValidatePattern(bad)
		assert.Error(t, err, bad)
	}
}

// Allows: a denied pattern wins over an allowed one; patterns are matched
// whatever their case.
func TestAllows(t *testing.T) {
	p := Policy{AllowedDomains: []string{"*.Example.com", "proxy.golang.org"}, DeniedDomains: []string{"evil.example.com"}}
	tests := map[string]bool{
		"api.example.com": true, "evil.example.com": false, "example.com": false,
		"proxy.golang.org": true, "sum.golang.org": false,
	}
	for host, want := range tests {
		assert.Equal(t, want, p.Allows(host), host)
	}
	assert.False(t, Policy{}.Allows("example.com"), "no network unless a domain is allowed")
}

// Join keeps both sides' domains and allows local binding if either does,
// without writing into either side's slices.
func TestJoin(t *testing.T) {
	a := Policy{AllowedDomains: make([]string, 1, 4), DeniedDomains: []string{"d"}}
	a.AllowedDomains[0] = "a"
	b := Policy{AllowedDomains: []string{"b"}, AllowLocalBinding: true}
	got := a.Join(b)
	assert.Equal(t, Policy{AllowedDomains: []string{"a", "b"}, DeniedDomains: []string{"d"}, AllowLocalBinding: true}, got)
	got.AllowedDomains[0] = "x"
	assert.Equal(t, "a", a.AllowedDomains[0])
}
