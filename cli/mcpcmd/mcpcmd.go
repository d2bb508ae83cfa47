// Package mcpcmd is `starter mcp list|approve|revoke`: a workspace's MCP
// servers, and a person's approval of a .mcp.json entry as it is now. cli
// dispatches to it; it never imports cli.
package mcpcmd

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/custos-dev/custos/cli/cmdline"
	"github.com/custos-dev/custos/internal/statedir"
	"github.com/custos-dev/custos/mcpservers"
	"github.com/custos-dev/custos/sandbox/pathguard"
)

// Env is what the command gets from the command line.
type Env struct{ Stdout, Stderr io.Writer }

// MCP is `starter mcp list|approve|revoke`: the workspace's MCP servers,
// and a person's approval of a .mcp.json entry as it is now (any change to
// it needs approval again).
func (a Env) MCP(args []string) error {
	if len(args) == 0 {
		return cmdline.Usagef("mcp list|approve NAME|revoke NAME [--workspace DIR]")
	}
	verb := args[0]
	fs := cmdline.NewFlagSet("mcp "+verb, a.Stderr)
	dir := fs.String("workspace", ".", "the workspace")
	configDir := fs.String("config-dir", "", "user config dir (default: the OS user config dir)")
	pos, err := cmdline.ParseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	ws, err := pathguard.CanonicalWorkspace(*dir)
	if err != nil {
		return err
	}
	user := *configDir
	if user == "" {
		if user, err = os.UserConfigDir(); err != nil {
			return fmt.Errorf("user config dir: %w", err)
		}
	}
	state, err := statedir.Dir()
	if err != nil {
		return err
	}
	cfg, pending, err := mcpservers.Load(user, state, ws)
	if err != nil {
		return err
	}
	switch verb {
	case "list":
		if len(pos) != 0 {
			return cmdline.Usagef("mcp list [--workspace DIR]")
		}
		a.listMCP(cfg, pending)
		return nil
	case "approve", "revoke":
		if len(pos) != 1 {
			return cmdline.Usagef("mcp %s NAME [--workspace DIR]", verb)
		}
		return a.changeMCPApproval(verb, pos[0], state, ws, cfg, pending)
	}
	return cmdline.Usagef("mcp list|approve NAME|revoke NAME [--workspace DIR]")
}

func (a Env) listMCP(cfg mcpservers.Config, pending []mcpservers.Server) {
	if len(cfg.Servers)+len(pending) == 0 {
		fmt.Fprintln(a.Stdout, "no MCP servers for this workspace")
	}
	for _, s := range cfg.Servers {
		trusted := ""
		if s.Trusted {
			trusted = ", trusted (its read-only tools run without asking)"
		}
		fmt.Fprintf(a.Stdout, "%-16s used    %s (%s%s)\n", s.Name, describeEntry(s), s.Source, trusted)
	}
	for _, s := range pending {
		fmt.Fprintf(a.Stdout, "%-16s OFFERED %s (%s): starter mcp approve %s\n", s.Name, describeEntry(s), s.File, s.Name)
	}
	for _, n := range cfg.Notes {
		if !strings.Contains(n, "is offered, not started") {
			fmt.Fprintln(a.Stdout, "note: "+n)
		}
	}
}

// describeEntry shows what a person approves: what runs or where it
// connects, the names of its variables and headers (their values are
// secrets, and part of what the approval covers), and its domains.
func describeEntry(s mcpservers.Server) string {
	var b strings.Builder
	if s.Type == "http" {
		b.WriteString(s.URL)
	} else {
		b.WriteString(strings.Join(append([]string{s.Command}, s.Args...), " "))
	}
	names := func(what string, m map[string]string) {
		if len(m) == 0 {
			return
		}
		fmt.Fprintf(&b, "; %s %s", what, strings.Join(slices.Sorted(maps.Keys(m)), ", "))
	}
	names("env", s.Env)
	names("headers", s.Headers)
	if len(s.Domains) > 0 {
		fmt.Fprintf(&b, "; network %s", strings.Join(s.Domains, ", "))
	} else if s.Type == "stdio" {
		b.WriteString("; no network")
	}
	return b.String()
}

func (a Env) changeMCPApproval(verb, name, state, ws string, cfg mcpservers.Config, pending []mcpservers.Server) error {
	if verb == "revoke" {
		if err := mcpservers.Revoke(state, ws, name); err != nil {
			return err
		}
		fmt.Fprintf(a.Stdout, "revoked: %s's .mcp.json server %q is offered again, not started\n", ws, name)
		return nil
	}
	for _, s := range pending {
		if s.Name == name {
			if err := mcpservers.Approve(state, ws, s); err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "approved %q as it is now: %s\nnew jobs of %s use it; any change to the entry needs approval again\n", name, describeEntry(s), ws)
			return nil
		}
	}
	for _, s := range cfg.Servers {
		if s.Name == name {
			return fmt.Errorf("server %q (%s) needs no approval: it is used already", name, s.Source)
		}
	}
	return fmt.Errorf("no server %q in %s's .mcp.json", name, ws)
}
