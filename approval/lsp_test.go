package approval

import (
	"errors"
	"reflect"
	"slices"
	"testing"
)

// "lsp" names language servers: parsed strictly, merged per language
// (the more specific file wins), and dropped, by name, from a workspace
// nobody trusts, since it is a command the worker runs.
func TestLSPSettings(t *testing.T) {
	tests := []struct {
		name     string
		files    []string
		want     map[string][]string
		wantErr  bool
		untrusts bool // the last file is an untrusted workspace's
	}{
		{name: "one file", files: []string{`{"lsp":{"go":["gopls","-remote=auto"]}}`},
			want: map[string][]string{"go": {"gopls", "-remote=auto"}}},
		{name: "the more specific file wins per language",
			files: []string{`{"lsp":{"go":["gopls"],"python":["pylsp"]}}`, `{"lsp":{"python":[]}}`},
			want:  map[string][]string{"go": {"gopls"}, "python": {}}},
		{name: "an untrusted workspace's entry is dropped",
			files: []string{`{"lsp":{"go":["gopls"]}}`, `{"lsp":{"go":["./evil"]}}`}, untrusts: true,
			want: map[string][]string{"go": {"gopls"}}},
		{name: "not a list of words", files: []string{`{"lsp":{"go":"gopls"}}`}, wantErr: true},
		{name: "an empty command", files: []string{`{"lsp":{"go":[""]}}`}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var merged Settings
			for i, content := range tt.files {
				s, err := ParseSettings([]byte(content), "/home/user/project")
				if tt.wantErr {
					if !errors.Is(err, ErrBadSettings) {
						t.Fatalf("ParseSettings(%s) = %v, want ErrBadSettings", content, err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if tt.untrusts && i == len(tt.files)-1 {
					var ignored []string
					s, ignored = Restrict(s)
					if !slices.Contains(ignored, "lsp (language server commands)") {
						t.Fatalf("Restrict ignored %q, want the lsp entry named", ignored)
					}
				}
				merged = MergeSettings(merged, s)
			}
			if !reflect.DeepEqual(merged.LSP, tt.want) {
				t.Fatalf("lsp = %v, want %v", merged.LSP, tt.want)
			}
		})
	}
}
