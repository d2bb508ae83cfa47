package api

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// A short output is kept whole; a long one keeps its first and last keep
// bytes, whole runes, and says how much was cut between them.
func TestExcerpt(t *testing.T) {
	assert.Equal(t, "short", Excerpt("short", 4))
	long := strings.Repeat("é", 10) + strings.Repeat("x", 100) + strings.Repeat("ü", 10)
	got := Excerpt(long, 5)
	assert.True(t, utf8.ValidString(got), got)
	assert.True(t, strings.HasPrefix(got, "éé\n[… "), got)
	assert.True(t, strings.HasSuffix(got, "\nüü"), got)
	assert.Contains(t, got, "bytes cut: the first 4 and last 4 bytes of 140 are shown")
}

// Bounded cuts at a rune's boundary and says it cut.
func TestBounded(t *testing.T) {
	s, cut := Bounded("abc", 3)
	assert.Equal(t, "abc", s)
	assert.False(t, cut)
	s, cut = Bounded("aéb", 2)
	assert.Equal(t, "a", s)
	assert.True(t, cut)
}
