package shell

import (
	"strings"
	"testing"
)

func TestScanArith(t *testing.T) {
	for _, tt := range []struct {
		s             string
		refs, targets string
		ok            bool
	}{
		{"1+2", "", "", true},
		{"x+1", "x", "", true},
		{"x=1, y+=x", "y x", "x", true},
		{"a[i]=j", "i j", "a", true},
		{"x==1", "x", "", true},
		{"16#ff + 64#_@", "", "", true},
		{"a[$(id)]", "", "", false},
		{"a[`id`]", "", "", false},
		{"'1'", "", "", false},
		{"1.5", "", "", false},
	} {
		refs, targets, ok := scanArith(tt.s)
		if ok != tt.ok || ok && (strings.Join(refs, " ") != tt.refs || strings.Join(targets, " ") != tt.targets) {
			t.Errorf("scanArith(%q) = %q, %q, %v; want %q, %q, %v", tt.s, refs, targets, ok, tt.refs, tt.targets, tt.ok)
		}
	}
}
