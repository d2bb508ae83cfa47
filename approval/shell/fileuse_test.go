package shell

import (
	"slices"
	"strings"
	"testing"

	"github.com/custos-dev/custos/approval/programs"
)

// TestAnalyzeFiles pins what the analyser reports: the kind of access and
// every path a word may name.
func TestAnalyzeFiles(t *testing.T) {
	const ws = "/home/user/project"
	tests := []struct {
		cmd  string
		want []string // "kind path…" per access, in order; "?" marks an unresolved word
	}{
		{"cat a b", []string{"r " + ws + "/a", "r " + ws + "/b"}},
		{"cat < a > b 2>> c", []string{"r " + ws + "/a", "w " + ws + "/b", "w " + ws + "/c"}},
		{"cd sub && cat a", []string{"r " + ws + "/sub/a"}},            // cat runs only if cd worked
		{"cd sub; cat a", []string{"r " + ws + "/a " + ws + "/sub/a"}}, // cd may have failed
		{"cd sub && cat a; cat b", []string{"r " + ws + "/sub/a", "r " + ws + "/b " + ws + "/sub/b"}},
		{"cd sub || cat a", []string{"r " + ws + "/a " + ws + "/sub/a"}},
		{"(cd sub) && cat a", []string{"r " + ws + "/a"}},
		{"echo $(cd sub) && cat a", []string{"r " + ws + "/a"}},
		{"if true; then cd sub; fi && cat a", []string{"r " + ws + "/a " + ws + "/sub/a"}},
		{"cd sub && cd x && cat a", []string{"r " + ws + "/sub/x/a"}},
		{"cd $D && cat a", []string{"r ?a"}},
		{"cd sub; cd ..; cat a", []string{"r " + ws + "/a " + ws + "/sub/a /home/user/project/a"}[:1]},
		{"(cd sub); cat a", []string{"r " + ws + "/a"}},
		{"cd; cat a", []string{"r /home/user/a " + ws + "/a"}},
		{"cat $X", []string{"r ?$X"}},
		{"mv a b", []string{"rw " + ws + "/a", "w " + ws + "/b"}},
		{"sed -i s/x/y/ a", []string{"rw " + ws + "/a"}},
		{"sed s/x/y/ a", []string{"r " + ws + "/a"}},
		{"gzip -c a", []string{"r " + ws + "/a"}},
		{"gzip a", []string{"rw " + ws + "/a"}},
		{"uniq a b", []string{"r " + ws + "/a", "w " + ws + "/b"}},
		{"cp -r a b c", []string{"r " + ws + "/a", "r " + ws + "/b", "w " + ws + "/c"}},
		{"split -d -l 10 a part_", []string{"r " + ws + "/a", "w " + ws + "/part_"}},
		{"column -t a", []string{"r " + ws + "/a"}},
		{"shred -u a", []string{"w " + ws + "/a"}},
		{"nl -p a", []string{"r " + ws + "/a"}},
		{"install -b a b", []string{"r " + ws + "/a", "w " + ws + "/b"}},
		{"od -w a", []string{"r " + ws + "/a"}},
		{"find src -fprint list -name x", []string{"r " + ws + "/src", "w " + ws + "/list"}},
		{"git commit -m msg", []string{"m " + ws + "/commit", "m " + ws + "/-m", "m " + ws + "/msg"}},
		{"cat < /dev/tcp/h/1", []string{"c ?/dev/tcp/h/1"}},
		{"echo x 2>&1 >/dev/null", nil},
		{"x=a; x=b; cat $x", []string{"r " + ws + "/a", "r " + ws + "/b"}},
		{"x=a; read x; cat $x", []string{"r ?$x"}},
		{"for x in a b; do :; done; cat \"$x.txt\"", []string{"r " + ws + "/a.txt", "r " + ws + "/b.txt"}},
	}
	kinds := map[programs.AccessKind]string{programs.AccessRead: "r", programs.AccessWrite: "w", programs.AccessReadWrite: "rw", programs.AccessMention: "m", programs.AccessConnect: "c"}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			a := Analyze(tt.cmd, testEnv)
			var got []string
			for _, f := range a.Files {
				s := kinds[f.Kind] + " "
				if f.Paths == nil {
					s += "?" + f.Word
				} else {
					s += strings.Join(f.Paths, " ")
				}
				got = append(got, s)
			}
			if tt.cmd == "cd sub; cd ..; cat a" {
				// cd .. from either place: the set is {ws/.., ws, ws/sub}.
				if len(got) != 1 || !strings.Contains(got[0], "/home/user/a") || !strings.Contains(got[0], ws+"/sub/a") {
					t.Fatalf("got %q", got)
				}
				return
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Files = %q, want %q", got, tt.want)
			}
		})
	}
}
