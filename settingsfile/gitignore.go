package settingsfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// localOnly are the names in a workspace's .custos that are one checkout's
// alone and must never be committed by a `git add -A`: the learned rules
// of its Always/Never answers, and the transcripts and audits of jobs that
// began before those moved to the state directory. The shared settings.json
// is not among them: a team commits it.
var localOnly = []string{"settings.local.json", "sessions/", "audit/"}

const gitignoreHeader = "# Written by custos: what it keeps here for this checkout alone\n" +
	"# (learned rules, older jobs' transcripts). settings.json is shared: commit it.\n"

// IgnoreLocal makes git ignore custos' local files in workspace/.custos
// through a .gitignore there, as Claude Code keeps its settings.local.json
// out of git: created when missing, the missing names appended when the
// user has one. A .gitignore that is not a regular file (a symlink, say) is
// left alone and said to be.
func IgnoreLocal(workspace string) error {
	dir := filepath.Join(workspace, ".custos")
	p := filepath.Join(dir, ".gitignore")
	var have []byte
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("settings: %w", err)
		}
	case err != nil:
		return fmt.Errorf("settings: %w", err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("settings: %s is not a regular file; not changed", p)
	default:
		if have, err = os.ReadFile(p); err != nil {
			return fmt.Errorf("settings: %w", err)
		}
	}
	listed := map[string]bool{}
	for _, l := range strings.Split(string(have), "\n") {
		listed[strings.TrimSpace(l)] = true
	}
	var add strings.Builder
	if len(have) == 0 {
		add.WriteString(gitignoreHeader)
	} else if have[len(have)-1] != '\n' {
		add.WriteByte('\n')
	}
	missing := false
	for _, name := range localOnly {
		if !listed[name] && !listed["/"+name] {
			add.WriteString(name + "\n")
			missing = true
		}
	}
	if !missing {
		return nil
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	if _, err := f.WriteString(add.String()); err != nil {
		f.Close()
		return fmt.Errorf("settings: writing %s: %w", p, err)
	}
	return f.Close()
}
