package pathglob

import "testing"

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"**/.env", ".env", true}, // ** may be no directory
		{"**/.env", "a/b/.env", true},
		{"**/.env", "a/.envrc", false},
		{"src/**", "src/a/b.go", true},
		{"src/**", "srcx/a", false},
		{"src/**/x.go", "src/x.go", true},
		{"src/**/x.go", "src/a/b/x.go", true},
		{"src/*.go", "src/a/b.go", false}, // * stays within a name
		{"*.go", "a.go", true},
		{"{a,b}/c", "b/c", true},
		{"[ab]/c", "c/c", false},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{"**/secrets/**", "secrets/k", true},
		{"**/secrets/**", "x/secrets/k", true},
	}
	for _, tc := range tests {
		g, err := Compile(tc.pattern)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.pattern, err)
		}
		if got := g.Match(tc.path); got != tc.want {
			t.Errorf("%q matches %q = %v, want %v", tc.pattern, tc.path, got, tc.want)
		}
	}
	if _, err := Compile("[a"); err == nil {
		t.Error("Compile of an unclosed class: no error")
	}
}

func TestVariants(t *testing.T) {
	got := Variants("**/a/**/b")
	want := []string{"**/a/**/b", "**/a/b", "a/**/b", "a/b"}
	if len(got) != len(want) {
		t.Fatalf("Variants = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Variants = %q, want %q", got, want)
		}
	}
	if n := len(Variants("**/**/**/**/**/**/x")); n != 1<<maxGlobstars {
		t.Errorf("six globstars: %d variants, want %d", n, 1<<maxGlobstars)
	}
}

func TestEscape(t *testing.T) {
	for _, name := range []string{"plain", "a*b", "q?[x]{y}", `back\slash`} {
		e := Escape(name)
		if HasMeta(e) {
			t.Errorf("Escape(%q) = %q still has a metacharacter", name, e)
		}
		if got := Unescape(e); got != name {
			t.Errorf("Unescape(Escape(%q)) = %q", name, got)
		}
		g, err := Compile(e)
		if err != nil || !g.Match(name) {
			t.Errorf("Escape(%q) = %q does not match the name (%v)", name, e, err)
		}
	}
	if !HasMeta("a*") || HasMeta(`a\*`) {
		t.Error("HasMeta: a* is a pattern, a\\* is not")
	}
}
