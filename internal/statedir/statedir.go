// Package statedir locates custos' state directory, where the embedded
// server's database and certificates, the sandbox's per-workspace caches
// and the jobs' transcripts and audits live: $XDG_STATE_HOME/custos, or ~/.local/state/custos.
package statedir

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// Dir returns the state directory; it is not created here.
func Dir() (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" || !filepath.IsAbs(base) {
		// The XDG spec says relative values are invalid and must be ignored.
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("statedir: locating home directory: %w", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "custos"), nil
}

// WorkspaceDir is where custos keeps what belongs to one workspace and is
// the user's alone (jobs' transcripts and audits): Dir()/workspaces/ then
// the workspace's base name and a hash of its path, so people can tell
// the directories apart and two workspaces of one name never share one.
// It is not created here.
func WorkspaceDir(workspace string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return WorkspaceDirIn(d, workspace), nil
}

// WorkspaceDirIn is WorkspaceDir under the state directory state.
func WorkspaceDirIn(state, workspace string) string {
	sum := sha256.Sum256([]byte(workspace))
	base := filepath.Base(workspace)
	if base == "/" || base == "." || base == "" {
		base = "root"
	}
	return filepath.Join(state, "workspaces", base+"-"+hex.EncodeToString(sum[:6]))
}
