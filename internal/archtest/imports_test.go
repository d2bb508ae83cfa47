// Package archtest pins which packages may import which, so that a boundary
// drawn once (the workflow does no I/O, policy starts no process) survives
// later changes: a new import that crosses one fails here with the chain
// of imports that leads across it. It has only tests.
package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/custos-dev/custos"

// boundary is what one package must not depend on.
type boundary struct {
	pkg string
	// transitive are packages it must not reach through any chain of
	// imports (outside the opaque modules).
	transitive []string
	// direct are packages it must not import itself, though its
	// dependencies may (fmt imports os, so os can only be refused here).
	direct []string
	why    string
}

// noIO is what code that runs in the workflow, or decides for it, must not
// reach: processes, HTTP, the sandbox, and the activities' implementations.
var noIO = []string{"os/exec", "net/http", mod + "/sandbox", mod + "/activities", mod + "/hooks/command"}

var boundaries = []boundary{
	{
		pkg:        mod + "/workflows",
		transitive: noIO,
		direct:     []string{"os", "go.temporal.io/sdk/client"},
		why:        "workflow code is deterministic and replays with only itself and activities/api; side effects run in activities",
	},
	{
		pkg:        mod + "/activities/api",
		transitive: noIO,
		direct:     []string{"os", "go.temporal.io/sdk/client"},
		why:        "the contract the workflow imports instead of activities: names, types and pure rules, no I/O",
	},
	{
		pkg:        mod + "/approval",
		transitive: []string{"os/exec", "net/http", mod + "/sandbox", mod + "/hooks/command", mod + "/settingsfile"},
		direct:     []string{"os"},
		why:        "policy runs inside the workflow: it starts no process, makes no request and reads no file; settingsfile reads and writes the settings files",
	},
	{
		pkg:        mod + "/display",
		transitive: noIO,
		direct:     []string{"os"},
		why:        "rendering text for people is pure: the workflow renders with it as the channels do",
	},
	{
		pkg:        mod + "/inbox",
		transitive: []string{"go.temporal.io/server/temporal", mod + "/devserver", mod + "/app"},
		why:        "the approval page is a Temporal client: where it is mounted (the embedded server's gate, its own address) is the worker's wiring",
	},
	{
		pkg:        mod + "/jobevents",
		transitive: []string{"os/exec", mod + "/sandbox", mod + "/activities", mod + "/app", mod + "/cli", mod + "/inbox"},
		why:        "the job's events are produced once, from the journal and the worker's stream: the terminal (cli), --json, the inbox and ACP render them, and the source imports none of them nor the workers' code",
	},
	{
		pkg:        mod + "/hooks",
		transitive: []string{"os/exec", "net/http", mod + "/sandbox"},
		why:        "hook points, payloads and the registry are used in workflow code; running command hooks is hooks/command",
	},
}

// opaque are third-party modules whose own imports are not followed. Each
// reaches net/http (the test fails without its entry) for a reason that is
// not workflow code doing I/O. A forbidden package is refused wherever the
// walk meets it, in these modules too (go.temporal.io/sdk/client is
// refused as a direct import of workflows).
var opaque = map[string]string{
	"go.temporal.io/sdk":                "the SDK the workflow runs on: its client side (gRPC, data converters over HTTP) shares packages with the workflow API",
	"go.opentelemetry.io/otel":          "the tracing API: its propagation package carries http.Header, it does no I/O",
	"github.com/sashabaranov/go-openai": "chat message and tool-call types; the package's HTTP client is built only in activities",
}

// pkgInfo is what go list -json says of a package.
type pkgInfo struct {
	ImportPath string
	Imports    []string
	Module     *struct{ Path string }
}

func TestImportBoundaries(t *testing.T) {
	pkgs := listDeps(t)
	used := map[string]bool{} // opaque modules some boundary's walk met
	for _, b := range boundaries {
		t.Run(strings.TrimPrefix(b.pkg, mod+"/"), func(t *testing.T) {
			root, ok := pkgs[b.pkg]
			if !ok {
				t.Fatalf("%s is not in go list's answer", b.pkg)
			}
			for _, imp := range root.Imports {
				if slices.Contains(b.direct, imp) {
					t.Errorf("%s imports %s (%s)", b.pkg, imp, b.why)
				}
			}
			chains, met := crossings(pkgs, b.pkg, b.transitive)
			for _, chain := range chains {
				t.Errorf("%s reaches %s: %s (%s)", b.pkg, chain[len(chain)-1], short(chain), b.why)
			}
			for m := range met {
				used[m] = true
			}
		})
	}
	for m := range opaque {
		if !used[m] {
			t.Errorf("no package here imports %s any more: take it off the opaque list", m)
		}
	}
}

// crossings walks the imports from root, not into opaque modules, and
// returns the shortest import chain to each forbidden package it reaches,
// and the opaque modules it met.
func crossings(pkgs map[string]pkgInfo, root string, forbidden []string) (out [][]string, met map[string]bool) {
	parent := map[string]string{root: ""}
	queue := []string{root}
	met = map[string]bool{}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if slices.Contains(forbidden, p) {
			var chain []string
			for q := p; q != ""; q = parent[q] {
				chain = append(chain, q)
			}
			slices.Reverse(chain)
			out = append(out, chain)
			continue
		}
		if info := pkgs[p]; p != root && info.Module != nil && isOpaque(info.Module.Path) {
			met[info.Module.Path] = true
			continue
		}
		for _, imp := range pkgs[p].Imports {
			if _, seen := parent[imp]; !seen {
				parent[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return out, met
}

// short is an import chain with the module's own prefix left out.
func short(chain []string) string {
	s := make([]string, len(chain))
	for i, p := range chain {
		s[i] = strings.TrimPrefix(p, mod+"/")
	}
	return strings.Join(s, " -> ")
}

func isOpaque(module string) bool {
	_, ok := opaque[module]
	return ok
}

// listDeps is every package the boundaries' packages depend on, as go list
// -deps sees them on this platform.
func listDeps(t *testing.T) map[string]pkgInfo {
	t.Helper()
	args := []string{"list", "-deps", "-json=ImportPath,Imports,Module"}
	for _, b := range boundaries {
		args = append(args, b.pkg)
	}
	var stderr bytes.Buffer
	cmd := exec.Command("go", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]pkgInfo{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkgInfo
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}
