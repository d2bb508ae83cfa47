package archtest

import (
	"slices"
	"strings"
	"testing"
)

// workflowsRoot holds the job's workflow; its sub-packages (jobapi, the
// job's client-facing API, subagent, the Task tool's pure parts, and the
// rest, each a seam of the workflow on a Host of the job's fields or plain
// data) hold what it is built of.
const workflowsRoot = mod + "/workflows"

// No sub-package of workflows reaches workflows back, through any chain of
// imports: clients import workflows/jobapi and never pull in the workflow's
// code, and the workflow's pure parts stay testable on their own.
func TestWorkflowsSubpackagesDoNotImportWorkflows(t *testing.T) {
	pkgs, _ := listModule(t)
	if _, ok := pkgs[workflowsRoot]; !ok {
		t.Fatalf("%s is not in go list's answer", workflowsRoot)
	}
	var subs []string
	for p := range pkgs {
		if strings.HasPrefix(p, workflowsRoot+"/") {
			subs = append(subs, p)
		}
	}
	slices.Sort(subs)
	for _, want := range []string{"/jobapi", "/subagent", "/parking", "/mcpcalls", "/preview", "/compaction", "/rewinding", "/observe", "/worktrees", "/notices", "/granting", "/details", "/prompts", "/lanes"} {
		if !slices.Contains(subs, workflowsRoot+want) {
			t.Fatalf("go list named no %s among workflows' sub-packages %v", workflowsRoot+want, subs)
		}
	}
	for _, sub := range subs {
		chains, _ := crossings(pkgs, sub, []string{workflowsRoot})
		for _, chain := range chains {
			t.Errorf("%s (workflows' sub-packages are what it is built of; they never import it)", short(chain))
		}
	}
}
