package approval

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/custos-dev/custos/approval/programs"
	"github.com/custos-dev/custos/approval/shell"
)

// How the rules meet the program table (approval/programs): an allow rule
// covers a command's findings only when it names them, a command that
// runs a file of the workspace only when it names that file, and every
// entry's examples are held against the rules they were written for.

// checkPrograms runs every entry's examples: each allow example must be
// allowed under Bash(<entry>:*), and no ask example may be.
func checkPrograms(table []programs.Examples) error {
	var errs []string
	for i := range table {
		p := &table[i]
		if len(p.Allow) == 0 && !p.Partial {
			errs = append(errs, "program "+p.Program+" has no allow examples")
		}
		pol, err := compile(Settings{Permissions: Permissions{Allow: []string{"Bash(" + p.Program + ":*)"}}}, PresetExampleEnv)
		if err != nil {
			return err
		}
		for _, ex := range p.Allow {
			if v := pol.Rules(bashExample(ex)); v.Decision != Allow {
				errs = append(errs, fmt.Sprintf("program %s: %q must be allowed by Bash(%s:*), got %s: %s", p.Program, ex, p.Program, v.Decision, v.Reason))
			}
		}
		for _, ex := range p.Ask {
			if v := pol.Rules(bashExample(ex)); v.Decision == Allow {
				errs = append(errs, fmt.Sprintf("program %s: %q must not be allowed by Bash(%s:*)", p.Program, ex, p.Program))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("program table examples: %s", strings.Join(errs, "; "))
	}
	return nil
}

// bashExample is the Bash call of one example command.
func bashExample(cmd string) Call {
	b, _ := json.Marshal(cmd)
	return Call{Tool: "Bash", Input: []byte(`{"command":` + string(b) + `}`)}
}

// uncovered returns the first finding of c that the allow rule r, which
// matched c, does not name; nil when it names them all. A rule for every
// command (Bash, Bash(*)) and an exact rule for this very command name
// everything; a prefix or glob rule names a finding when its words include
// the finding's words (Bash(rg --pre=sh:*)), a regular expression when it
// spells them.
func (r *rule) uncovered(c *shell.SimpleCommand) *programs.Finding {
	if len(c.Findings) == 0 || r.kind == kindAny {
		return nil
	}
	exactText := r.kind == kindExact && r.value == c.Text
	exactRaw := r.kind == kindExact && r.value == c.Raw
	for i := range c.Findings {
		f := &c.Findings[i]
		switch {
		case f.Env == programs.EnvNone && (exactText || exactRaw):
		case f.Env == programs.EnvWrapper && exactRaw:
			// env NAME=value cmd: the exact rule spells the assignment.
		case f.Env == programs.EnvNone && r.names(f):
		default:
			// A variable set before the command, or earlier in the line,
			// is named only by a rule for the whole line (kindText).
			return f
		}
	}
	return nil
}

// names reports whether the words of the prefix, glob or regular
// expression rule r spell every word of f.
func (r *rule) names(f *programs.Finding) bool {
	if len(f.Words) == 0 {
		return false
	}
	// The words after the entry's own name (sed in Bash(sed:*), git log
	// in Bash(git log:*)) are what the rule names.
	named := r.value
	for range strings.Fields(f.Program) {
		_, named, _ = strings.Cut(named, " ")
	}
	for _, w := range f.Words {
		switch r.kind {
		case kindRegexp:
			if !strings.Contains(r.re.String(), w) {
				return false
			}
		case kindPrefix, kindGlob:
			if !strings.Contains(" "+named+" ", " "+shell.Spelled(w)+" ") {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// namesProgram reports whether an allow rule may cover c by the program
// it runs: a rule by name covers a program found in PATH or a system
// directory; a command that runs a foreign file needs a rule naming that
// very file.
func (r *rule) namesProgram(c *shell.SimpleCommand) bool {
	if r.kind == kindAny || !c.Foreign {
		return r.prog == "" || r.kind == kindAny
	}
	if r.prog == "" || len(c.ProgramPaths) == 0 {
		return false
	}
	for _, p := range c.ProgramPaths {
		if p != r.prog {
			return false
		}
	}
	return true
}
