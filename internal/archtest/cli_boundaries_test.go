package archtest

import (
	"slices"
	"strings"
	"testing"
)

// cliRoot is the command line; its sub-packages (cli/policylab,
// cli/changescmd, cli/cmdline …) hold commands it dispatches to.
const cliRoot = mod + "/cli"

// cli imports its sub-packages and hands each what it needs of the App
// (streams, a dial, the status query) in an Env of the sub-package's; no
// sub-package reaches cli back, through any chain of imports: the
// direction is cli -> sub-packages, so that one grows without the other.
func TestCLISubpackagesDoNotImportCLI(t *testing.T) {
	pkgs, _ := listModule(t)
	if _, ok := pkgs[cliRoot]; !ok {
		t.Fatalf("%s is not in go list's answer", cliRoot)
	}
	subs := cliSubpackages(pkgs)
	if len(subs) == 0 {
		t.Fatal("go list named no sub-package of cli")
	}
	for _, chain := range cliImports(pkgs, subs) {
		t.Errorf("%s (cli's sub-packages get what they need of it in an Env; they never import it)", short(chain))
	}
}

// cliSubpackages are the packages under cli/, sorted.
func cliSubpackages(pkgs map[string]pkgInfo) []string {
	var subs []string
	for p := range pkgs {
		if strings.HasPrefix(p, cliRoot+"/") {
			subs = append(subs, p)
		}
	}
	slices.Sort(subs)
	return subs
}

// cliImports returns, for each sub-package, the shortest import chain by
// which it reaches cli.
func cliImports(pkgs map[string]pkgInfo, subs []string) [][]string {
	var out [][]string
	for _, sub := range subs {
		chains, _ := crossings(pkgs, sub, []string{cliRoot})
		out = append(out, chains...)
	}
	return out
}

// The check finds a sub-package that imports cli itself and one that
// reaches it through another package, and leaves alone cli importing its
// sub-packages and a package named cli-something beside it.
func TestCLIImportsCheckFindsThem(t *testing.T) {
	p := func(path string, imports ...string) pkgInfo {
		return pkgInfo{ImportPath: path, Imports: imports}
	}
	pkgs := map[string]pkgInfo{}
	for _, info := range []pkgInfo{
		p(cliRoot, cliRoot+"/cmdline", cliRoot+"/policylab", cliRoot+"/sandboxcmd", "fmt"),
		p(cliRoot+"/cmdline", "fmt"),
		p(cliRoot+"/policylab", cliRoot+"/cmdline", mod+"/jobstart"),
		p(mod+"/jobstart", cliRoot),       // the break, one step away
		p(cliRoot+"/sandboxcmd", cliRoot), // the break, direct
		p(mod+"/clitest", cliRoot),
		p("fmt"),
	} {
		pkgs[info.ImportPath] = info
	}
	var got []string
	for _, chain := range cliImports(pkgs, cliSubpackages(pkgs)) {
		got = append(got, short(chain))
	}
	want := []string{"cli/policylab -> jobstart -> cli", "cli/sandboxcmd -> cli"}
	if !slices.Equal(got, want) {
		t.Errorf("found %q, want %q", got, want)
	}
}
