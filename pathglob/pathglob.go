// Package pathglob is the one meaning of a path pattern in custos: the deny
// and allow rules of the policy (Read(**/.env), Edit(src/**)), the masks the
// sandbox lays over denied files, and the patterns of the Glob and Grep
// tools all compile here, so a rule cannot name one set of files for the
// policy and another for the sandbox.
//
// The syntax is gobwas/glob's with '/' as the separator: * and ? stay within
// one name, ** crosses directories, {a,b} and [...] as usual, \ escapes. As
// in gitignore and Claude Code's rules, a "**/" may also match no directory
// at all: **/.env names .env at the top too, and src/**/x.go names
// src/x.go. (gobwas alone needs a separator on each side of **.)
package pathglob

import (
	"strings"

	"github.com/gobwas/glob"
)

// maxGlobstars bounds how many "**/" of one pattern get a variant without
// them (2^n variants); later ones keep gobwas' meaning.
const maxGlobstars = 4

// Glob is a compiled pattern: it matches when one of its variants does.
type Glob []glob.Glob

// Compile compiles pattern and its variants (see the package comment).
func Compile(pattern string) (Glob, error) {
	var out Glob
	for _, v := range Variants(pattern) {
		g, err := glob.Compile(v, '/')
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// Match reports whether path (slash-separated) matches.
func (g Glob) Match(path string) bool {
	for _, x := range g {
		if x.Match(path) {
			return true
		}
	}
	return false
}

// Variants are pattern and the patterns it also means, each with some of
// its first maxGlobstars "**/" left out.
func Variants(pattern string) []string {
	return variants(pattern, 0, maxGlobstars)
}

func variants(p string, from, budget int) []string {
	j := strings.Index(p[from:], "**/")
	if j < 0 || budget == 0 {
		return []string{p}
	}
	j += from
	keep := variants(p, j+3, budget-1)
	drop := variants(p[:j]+p[j+3:], j, budget-1)
	return append(keep, drop...)
}

// HasMeta reports an unescaped metacharacter: s is a pattern, not a name.
func HasMeta(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*', '?', '[', ']', '{', '}':
			return true
		}
	}
	return false
}

// Escape quotes the metacharacters of a name, so the pattern matches
// exactly that name.
func Escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Unescape is the name a pattern without metacharacters matches.
func Unescape(s string) string { return UnescapeBytes(s, "", false) }

// UnescapeBytes removes the backslash before each byte of escapable (before
// any byte when escapable is empty): the quoting of a pattern, and of a
// word of bash's, which reads a backslash the same way (approval's shell
// analysis unquotes with it). With joinLines, a backslash-newline goes
// whole, as bash joins a continued line.
func UnescapeBytes(s, escapable string, joinLines bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (escapable == "" || strings.IndexByte(escapable, s[i+1]) >= 0) {
			i++
			if joinLines && s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
