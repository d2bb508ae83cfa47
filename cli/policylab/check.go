// Package policylab is starter's commands over the policy: check a call as a
// job would (policy check), replay proposed settings over the recorded
// calls (policy replay), suggest rules from the recorded answers (policy
// suggest), summarise the answers (audit stats), and trust a workspace's
// settings (trust). cli dispatches to it with an Env; it never imports cli.
package policylab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/cli/cmdline"
	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/hooks/command"
	"github.com/custos-dev/custos/sandbox/pathguard"
	"github.com/custos-dev/custos/settingsfile"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// Env is what the commands get from the command line: its streams, and
// how to reach the Temporal server (policy replay --from temporal).
type Env struct {
	Stdout, Stderr io.Writer
	// Dial connects to the configured server without starting one.
	Dial func(context.Context) (client.Client, error)
	// Status is a job's status query.
	Status func(ctx context.Context, c client.Client, id string) (jobapi.Status, error)
}

// PolicyResult is what `policy check` prints.
type PolicyResult struct {
	Decision approval.Decision `json:"decision"`
	Layer    approval.Layer    `json:"layer"`
	Rule     string            `json:"rule"`
	Reason   string            `json:"reason"`
	Hook     string            `json:"hook,omitempty"`
	// Program and Option name the program table entry and the option that
	// decided (rg --pre, git diff --output), when one did.
	Program string `json:"program,omitempty"`
	Option  string `json:"option,omitempty"`
	// Input is set when a hook rewrote the call's input.
	Input json.RawMessage `json:"modifiedInput,omitempty"`
}

// Policy is `starter policy check|replay|suggest`: check runs layers 1-4
// exactly as a job would, without Temporal.
func (a *Env) Policy(ctx context.Context, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "replay":
			return a.policyReplay(ctx, args[1:])
		case "suggest":
			return a.policySuggest(ctx, args[1:])
		}
	}
	if len(args) == 0 || args[0] != "check" {
		return cmdline.Usagef("policy check --tool T --input JSON [--mode M] [--workspace DIR], policy replay --settings NEW.json, or policy suggest")
	}
	fs := cmdline.NewFlagSet("policy check", a.Stderr)
	tool := fs.String("tool", "", "tool name: Read, Glob, Grep, LSP, Write, Edit, Bash")
	input := fs.String("input", "{}", "the tool input as JSON")
	mode := fs.String("mode", "", "permission mode (default: the settings' defaultMode)")
	workspace := fs.String("workspace", ".", "workspace whose settings apply")
	configDir := fs.String("config-dir", "", "user config dir (default: the OS user config dir)")
	if _, err := cmdline.ParseInterleaved(fs, args[1:]); err != nil {
		return err
	}
	if *tool == "" {
		return cmdline.Usagef("policy check: --tool is required")
	}
	ws, err := pathguard.CanonicalWorkspace(*workspace)
	if err != nil {
		return err
	}
	dir := *configDir
	if dir == "" {
		dir, _ = os.UserConfigDir()
	}
	loaded, err := settingsfile.Load(dir, ws)
	if err != nil {
		return err
	}
	settings := loaded.Settings
	WarnIgnored(a.Stderr, ws, loaded.Ignored)
	home, _ := os.UserHomeDir()
	pol, err := approval.Compile(settings, approval.Env{Workspace: ws, Home: home})
	if err != nil {
		return err
	}
	m, err := approval.ResolveMode(approval.Mode(*mode), settings.Permissions.DefaultMode)
	if err == nil {
		err = approval.CheckMode(settings, m)
	}
	if err != nil {
		return cmdline.Usagef("policy check: %v", err)
	}
	res := a.checkCall(ctx, pol, settings, ws, m, *tool, json.RawMessage(*input))
	return json.NewEncoder(a.Stdout).Encode(res)
}

// checkCall is layers 1-4 for one call: the same approval.Decide the workflow
// uses, with system hooks inline and the user's command hooks run directly.
func (a *Env) checkCall(ctx context.Context, pol *approval.Policy, settings approval.Settings, ws string, m approval.Mode, tool string, input json.RawMessage) PolicyResult {
	if _, _, mcp := approval.MCPTool(tool); !api.KnownTool(tool) && !mcp {
		return PolicyResult{Decision: approval.Deny, Layer: approval.LayerRules, Reason: fmt.Sprintf("unknown tool %q", tool)}
	}
	system := approval.SystemHooks()
	// The workflow's steps (workflows/calls.go decide): layers 1-3, the hooks
	// only if the rules left the call open, then approval.Decide.
	call := approval.Call{Tool: tool, Input: input}
	found := approval.Findings{Rules: pol.Evaluate(call, m)}
	if found.Rules.Open() {
		if r, ok := a.runApprovalHooks(ctx, system, settings, ws, m, call); ok {
			found.Hook = &r
		}
	}
	pre := approval.Decide(call, m, pol.Evaluate, found)
	res := PolicyResult{Decision: pre.Verdict.Decision, Layer: pre.Verdict.Layer, Rule: pre.Verdict.Rule,
		Reason: pre.Verdict.Reason, Hook: pre.Hook}
	if pre.Modified {
		res.Input = pre.Input
	}
	if !pre.Modified && pre.Verdict.Layer != approval.LayerHook {
		// The rules' reason is what a person is asked with; the entry
		// and option that decided travel with it.
		res.Program, res.Option = found.Rules.Program, found.Rules.Option
		if pre.Verdict.Program != "" {
			res.Program, res.Option = pre.Verdict.Program, pre.Verdict.Option
		}
	}
	return res
}

// runApprovalHooks is layer 4 as a job runs it (workflows' runHooks): the
// system hooks first, then the user's command hooks, here run directly
// instead of in an activity; the first decision wins.
func (a *Env) runApprovalHooks(ctx context.Context, system *hooks.Registry, settings approval.Settings, ws string, m approval.Mode, c approval.Call) (hooks.Result, bool) {
	p := hooks.Payload{Point: hooks.ToolApprovalPre, JobID: "policy-check", CallID: "check", Tool: c.Tool,
		Input: c.Input, Mode: string(m), Workspace: ws}
	if r, ok := hooks.Dispatch(system.Handlers(hooks.ToolApprovalPre, c.Tool), p); ok {
		return r, true
	}
	cmds := settings.Hooks.CommandHooks(hooks.ToolApprovalPre, c.Tool)
	if len(cmds) == 0 {
		return hooks.Result{}, false
	}
	r, outcomes := command.RunAll(ctx, cmds, p, ws)
	for _, o := range outcomes {
		if o.Err != "" || o.TimedOut {
			fmt.Fprintf(a.Stderr, "custos: hook %s gave no decision: %s (timed out: %v)\n", o.Hook, o.Err, o.TimedOut)
		}
	}
	return r, !r.Empty()
}

// WarnIgnored says what an untrusted workspace's settings asked for in vain.
func WarnIgnored(w io.Writer, ws string, ignored []string) {
	if len(ignored) == 0 {
		return
	}
	fmt.Fprintf(w, "custos: %s is not a trusted workspace; its settings may only narrow the policy. Ignored:\n", ws)
	for _, what := range ignored {
		fmt.Fprintf(w, "  - %s\n", what)
	}
	fmt.Fprintf(w, "custos: to take them in full: starter trust %s\n", ws)
}

// Trust is `starter trust [DIR]`: it adds a workspace to the user's
// trustedWorkspaces.
func (a *Env) Trust(args []string) error {
	fs := cmdline.NewFlagSet("trust", a.Stderr)
	configDir := fs.String("config-dir", "", "user config dir (default: the OS user config dir)")
	pos, err := cmdline.ParseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return cmdline.Usagef("trust [DIR]: one workspace at a time")
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	ws, err := pathguard.CanonicalWorkspace(dir)
	if err != nil {
		return err
	}
	cfg := *configDir
	if cfg == "" {
		if cfg, err = os.UserConfigDir(); err != nil {
			return fmt.Errorf("user config dir: %w", err)
		}
	}
	if err := settingsfile.Trust(cfg, ws); err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "trusted %s (in %s): its .custos settings now apply in full\n", ws, settingsfile.UserFile(cfg))
	return nil
}
