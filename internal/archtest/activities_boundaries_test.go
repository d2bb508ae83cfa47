package archtest

import (
	"slices"
	"strings"
	"testing"
)

// activitiesRoot holds the activities a worker serves; its sub-packages
// (activities/api, toolkit, transcript, model …) hold what it is built of.
const activitiesRoot = mod + "/activities"

// activitiesBuiltOnRoot are the sub-packages that still import activities,
// each with why; the list only shrinks.
var activitiesBuiltOnRoot = map[string]string{
	// TaskWorktree reads the worker's activities.Settings (its state
	// directory and lanes) and registers with activities.Registrar.
	activitiesRoot + "/worktree": "built on activities.Settings",
}

// activities imports its sub-packages (the tools' shared toolkit, the
// transcript, the model call, the tools split off) and wires them; no
// sub-package reaches activities back, through any chain of imports: the
// direction is activities -> sub-packages, so that one grows without the
// other.
func TestActivitiesSubpackagesDoNotImportActivities(t *testing.T) {
	pkgs, _ := listModule(t)
	if _, ok := pkgs[activitiesRoot]; !ok {
		t.Fatalf("%s is not in go list's answer", activitiesRoot)
	}
	subs := activitiesSubpackages(pkgs)
	for _, want := range []string{"/api", "/toolkit", "/model"} {
		if !slices.Contains(subs, activitiesRoot+want) {
			t.Fatalf("go list named no %s among activities' sub-packages %v", activitiesRoot+want, subs)
		}
	}
	for _, chain := range activitiesImports(pkgs, subs) {
		t.Errorf("%s (activities' sub-packages are what it is built of; they never import it)", short(chain))
	}
}

// activitiesSubpackages are the packages under activities/, sorted, but
// those on activitiesBuiltOnRoot.
func activitiesSubpackages(pkgs map[string]pkgInfo) []string {
	var subs []string
	for p := range pkgs {
		if strings.HasPrefix(p, activitiesRoot+"/") && activitiesBuiltOnRoot[p] == "" {
			subs = append(subs, p)
		}
	}
	slices.Sort(subs)
	return subs
}

// activitiesImports returns, for each sub-package, the shortest import
// chain by which it reaches activities.
func activitiesImports(pkgs map[string]pkgInfo, subs []string) [][]string {
	var out [][]string
	for _, sub := range subs {
		chains, _ := crossings(pkgs, sub, []string{activitiesRoot})
		out = append(out, chains...)
	}
	return out
}

// The check finds a sub-package that imports activities itself and one
// that reaches it through another package, and leaves alone activities
// importing its sub-packages, a listed exception and a package named
// activities-something beside it.
func TestActivitiesImportsCheckFindsThem(t *testing.T) {
	p := func(path string, imports ...string) pkgInfo {
		return pkgInfo{ImportPath: path, Imports: imports}
	}
	pkgs := map[string]pkgInfo{}
	for _, info := range []pkgInfo{
		p(activitiesRoot, activitiesRoot+"/api", activitiesRoot+"/model", activitiesRoot+"/toolkit", "fmt"),
		p(activitiesRoot+"/api", "fmt"),
		p(activitiesRoot+"/toolkit", activitiesRoot+"/api"),
		p(activitiesRoot+"/model", activitiesRoot+"/toolkit", mod+"/stream"),
		p(mod+"/stream", activitiesRoot),              // the break, one step away
		p(activitiesRoot+"/lsptool", activitiesRoot),  // the break, direct
		p(activitiesRoot+"/worktree", activitiesRoot), // listed
		p(mod+"/activitiestest", activitiesRoot),      // beside it
		p("fmt"),
	} {
		pkgs[info.ImportPath] = info
	}
	var got []string
	for _, chain := range activitiesImports(pkgs, activitiesSubpackages(pkgs)) {
		got = append(got, short(chain))
	}
	want := []string{"activities/lsptool -> activities", "activities/model -> stream -> activities"}
	if !slices.Equal(got, want) {
		t.Errorf("found %q, want %q", got, want)
	}
}
