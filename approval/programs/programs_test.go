package programs

import (
	"strings"
	"testing"
)

// The table loads, with a full entry for every program people allow by
// name, and an entry for each subcommand they allow.
func TestProgramTableEntries(t *testing.T) {
	if programsErr != nil {
		t.Fatal(programsErr)
	}
	for _, name := range strings.Fields(`cat head tail less more wc sort uniq cut tr nl grep rg ag find fd ls tree stat
		file du diff cmp sed awk jq yq xxd od man echo printf test [ git go npm cargo pip`) {
		p := byName[name]
		if p == nil || p.partial {
			t.Errorf("%s: no full entry in the program table", name)
		}
	}
	for _, sub := range strings.Fields("status diff log show blame branch grep ls-files rev-parse") {
		if byName["git "+sub] == nil {
			t.Errorf("git %s: no entry", sub)
		}
	}
	for _, sub := range []string{"go list", "go env", "npm ls", "npm view", "cargo tree", "cargo metadata", "pip list", "pip show"} {
		if byName[sub] == nil {
			t.Errorf("%s: no entry", sub)
		}
	}
}

// A broken table is refused when it loads: an option with an unknown
// effect, a subcommand without its program. (An example that does not
// hold is refused by the policy, which checks them: approval's
// TestProgramTableRefusesBrokenEntries.)
func TestProgramTableRefusesBrokenEntries(t *testing.T) {
	if _, err := buildPrograms([]Program{{name: "x", opts: "-o=:explode"}}); err == nil {
		t.Error("unknown effect accepted")
	}
	if _, err := buildPrograms([]Program{{name: "x y"}}); err == nil {
		t.Error("subcommand without parent accepted")
	}
}
