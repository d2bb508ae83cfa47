package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// testSupport are the packages only tests may import: each stands in for
// something real (a Temporal server, the Temporal CLI, Slack) or reaches
// into a test's own state, so a product package that imported one would
// ship a test double, or a test's shortcuts, to the people who run custos.
var testSupport = map[string]string{
	mod + "/internal/testenv":       "an embedded Temporal server on free ports, the scripted model and workers, for integration tests",
	mod + "/internal/testbin":       "finds and places the binaries tests run, such as the real Temporal CLI",
	mod + "/notify/slack/slacktest": "a fake Slack on a local address, for the channel's and the end-to-end tests",
	mod + "/internal/gittest":       "runs the real git on the host for the sandbox's tests",
}

// notifyBoundary keeps the notify port below the workflow: the workflow
// imports notify for its activities' names and payloads, and the channels
// (Slack, webhooks) implement it; notify reaching workflows back would make
// an import cycle of the two, or every channel depend on workflow code.
var notifyBoundary = boundary{
	pkg:        mod + "/notify",
	transitive: []string{mod + "/workflows"},
	why:        "notify is the port channels implement; the workflow uses it, never the other way round",
}

func init() {
	boundaries = append(boundaries, notifyBoundary)
}

// productPkg is what go list -json says of a package, with what tells a
// product package from a test-only one.
type productPkg struct {
	pkgInfo
	GoFiles  []string
	CgoFiles []string
	DepOnly  bool
}

// TestProductImportsNoTestSupport: no package of the module that is built
// into custos (every package go list ./... names that has non-test Go
// files, the test-support packages themselves aside) reaches a
// test-support package through its non-test imports.
func TestProductImportsNoTestSupport(t *testing.T) {
	pkgs, roots := listModule(t)
	if len(roots) == 0 {
		t.Fatal("go list ./... named no product package")
	}
	for _, chain := range testSupportImports(pkgs, roots) {
		last := chain[len(chain)-1]
		t.Errorf("%s (%s: only tests may import it)", short(chain), testSupport[last])
	}
}

// testSupportImports returns, for each root that is a product package, the
// shortest import chain to each test-support package it reaches.
func testSupportImports(pkgs map[string]pkgInfo, roots []string) [][]string {
	forbidden := slices.Sorted(maps.Keys(testSupport))
	var out [][]string
	for _, root := range roots {
		if _, ok := testSupport[root]; ok {
			continue
		}
		chains, _ := crossings(pkgs, root, forbidden)
		out = append(out, chains...)
	}
	return out
}

// listModule is every package ./... depends on, by its non-test imports, and
// the module's product packages: those named by ./... that have non-test
// Go files (a package of tests only, such as e2e, is built into nothing).
func listModule(t *testing.T) (map[string]pkgInfo, []string) {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,Module,GoFiles,CgoFiles,DepOnly", mod+"/...")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]pkgInfo{}
	var roots []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p productPkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = p.pkgInfo
		if !p.DepOnly && strings.HasPrefix(p.ImportPath, mod+"/") && len(p.GoFiles)+len(p.CgoFiles) > 0 {
			roots = append(roots, p.ImportPath)
		}
	}
	return pkgs, roots
}

// The check finds a product package that reaches a test-support package
// through another product package, and leaves alone the test-support
// packages importing each other and a package of tests only.
func TestProductImportsCheckFindsThem(t *testing.T) {
	p := func(path string, imports ...string) pkgInfo {
		return pkgInfo{ImportPath: path, Imports: imports}
	}
	pkgs := map[string]pkgInfo{}
	for _, info := range []pkgInfo{
		p(mod+"/worker", mod+"/app", "fmt"),
		p(mod+"/app", mod+"/notify/slack"),
		p(mod+"/notify/slack", mod+"/notify/slack/slacktest"), // the break
		p(mod+"/notify/slack/slacktest", "net/http"),
		p(mod+"/internal/testenv", mod+"/internal/testbin", mod+"/app"),
		p(mod + "/internal/testbin"),
		p("fmt"), p("net/http"),
	} {
		pkgs[info.ImportPath] = info
	}
	roots := []string{mod + "/worker", mod + "/app", mod + "/notify/slack", mod + "/internal/testenv", mod + "/internal/testbin", mod + "/notify/slack/slacktest"}
	var got []string
	for _, chain := range testSupportImports(pkgs, roots) {
		got = append(got, short(chain))
	}
	want := []string{
		"worker -> app -> notify/slack -> notify/slack/slacktest",
		"app -> notify/slack -> notify/slack/slacktest",
		"notify/slack -> notify/slack/slacktest",
	}
	if !slices.Equal(got, want) {
		t.Errorf("found %q, want %q", got, want)
	}

	pkgs[mod+"/notify/slack"] = p(mod + "/notify/slack") // mended
	if got := testSupportImports(pkgs, roots); len(got) != 0 {
		t.Errorf("with no product package importing test support, found %q", got)
	}
}

// The notify boundary finds workflows however far down notify's imports it
// is, and passes a notify that stays below it.
func TestNotifyBoundaryFindsWorkflows(t *testing.T) {
	pkgs := map[string]pkgInfo{
		mod + "/notify":    {ImportPath: mod + "/notify", Imports: []string{mod + "/display"}},
		mod + "/display":   {ImportPath: mod + "/display", Imports: []string{mod + "/workflows"}}, // the break
		mod + "/workflows": {ImportPath: mod + "/workflows", Imports: []string{mod + "/notify"}},
	}
	chains, _ := crossings(pkgs, notifyBoundary.pkg, notifyBoundary.transitive)
	if len(chains) != 1 || short(chains[0]) != "notify -> display -> workflows" {
		t.Errorf("found %q, want notify -> display -> workflows", chains)
	}
	pkgs[mod+"/display"] = pkgInfo{ImportPath: mod + "/display"} // mended
	if chains, _ := crossings(pkgs, notifyBoundary.pkg, notifyBoundary.transitive); len(chains) != 0 {
		t.Errorf("with display importing nothing, found %q", chains)
	}
}
