// Package statedir locates custos' state directory, where the embedded
// server's database and certificates and the sandbox's per-workspace caches
// live: $XDG_STATE_HOME/custos, or ~/.local/state/custos.
package statedir

import (
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
