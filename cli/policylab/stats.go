package policylab

import (
	"context"
	"fmt"

	"github.com/custos-dev/custos/cli/cmdline"
	"github.com/custos-dev/custos/policyreplay"
	"github.com/custos-dev/custos/settingsfile"
)

// AuditStats is `starter audit stats`.
func (a *Env) AuditStats(ctx context.Context, args []string) error {
	fs := cmdline.NewFlagSet("audit stats", a.Stderr)
	var r recordFlags
	r.register(fs)
	if _, err := cmdline.ParseInterleaved(fs, args); err != nil {
		return err
	}
	jobs, err := a.recordedJobs(ctx, &r)
	if err != nil {
		return err
	}
	st, err := policyreplay.Summarise(jobs, policyreplay.Settled{UserConfigDir: r.config()}.Current)
	if err != nil {
		return err
	}
	if r.asJSON {
		return cmdline.WriteJSON(a.Stdout, st)
	}
	return policyreplay.WriteStats(a.Stdout, st)
}

// policySuggest is `starter policy suggest`.
func (a *Env) policySuggest(ctx context.Context, args []string) error {
	fs := cmdline.NewFlagSet("policy suggest", a.Stderr)
	var r recordFlags
	r.register(fs)
	min := fs.Int("min", 3, "approvals a rule must cover")
	write := fs.String("write", "", "add the suggested rules to the settings: workspace (its .custos/settings.local.json, as Always does) or user")
	var only cmdline.MultiFlag
	fs.Var(&only, "rule", "with --write, only this suggested rule (repeatable)")
	if _, err := cmdline.ParseInterleaved(fs, args); err != nil {
		return err
	}
	if *min < 1 {
		return cmdline.Usagef("policy suggest: --min must be at least 1")
	}
	if *write != "" && *write != "workspace" && *write != "user" {
		return cmdline.Usagef("policy suggest: --write %q: want workspace or user", *write)
	}
	jobs, err := a.recordedJobs(ctx, &r)
	if err != nil {
		return err
	}
	pols := policyreplay.Settled{UserConfigDir: r.config()}
	got, err := policyreplay.Suggest(jobs, pols, *min)
	if err != nil {
		return err
	}
	if r.asJSON {
		err = cmdline.WriteJSON(a.Stdout, got)
	} else {
		err = policyreplay.WriteSuggestions(a.Stdout, got)
	}
	if err != nil || *write == "" {
		return err
	}
	return a.writeSuggestions(got, *write, only, r.config())
}

// writeSuggestions adds the chosen rules through the code an Always answer
// uses (settingsfile.AddRule), or to the user's own file.
func (a *Env) writeSuggestions(got *policyreplay.Suggestions, where string, only cmdline.MultiFlag, config string) error {
	wrote := 0
	for _, s := range got.Suggestions {
		if len(only) > 0 && !only.Has(s.Rule) {
			continue
		}
		if where == "user" {
			if err := settingsfile.AddUserRule(config, "allow", s.Rule); err != nil {
				return err
			}
			fmt.Fprintf(a.Stderr, "custos: added allow rule %s to %s\n", s.Rule, settingsfile.UserFile(config))
			wrote++
			continue
		}
		for _, ws := range s.Workspaces {
			if err := settingsfile.AddRule(ws, "allow", s.Rule); err != nil {
				return err
			}
			fmt.Fprintf(a.Stderr, "custos: added allow rule %s to %s/.custos/settings.local.json\n", s.Rule, ws)
			if l, err := settingsfile.Load(config, ws); err == nil && !l.Trusted {
				fmt.Fprintf(a.Stderr, "custos: %s is not a trusted workspace, so its allow rules do not apply until: starter trust %s\n", ws, ws)
			}
			wrote++
		}
	}
	for _, r := range only {
		if !suggested(got, r) {
			return fmt.Errorf("policy suggest: %s is not among the suggested rules; nothing of it written", r)
		}
	}
	if wrote == 0 {
		fmt.Fprintln(a.Stderr, "custos: no rule written")
	}
	return nil
}

func suggested(got *policyreplay.Suggestions, rule string) bool {
	for _, s := range got.Suggestions {
		if s.Rule == rule {
			return true
		}
	}
	return false
}
