package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// systemDirs may never be a workspace: binding them read-write would hand the
// command the system (or, for "/", everything).
var systemDirs = map[string]bool{
	"/": true, "/usr": true, "/etc": true, "/bin": true, "/sbin": true, "/lib": true,
	"/lib64": true, "/proc": true, "/sys": true, "/dev": true, "/boot": true,
	"/root": true, "/home": true, "/var": true, "/run": true, "/tmp": true,
}

// checkRequest validates a request and returns the workspace's real path
// (symlinks resolved), which is where it is mounted inside the sandbox.
func checkRequest(req Request) (string, error) {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return "", errors.New("sandbox: empty command")
	}
	if req.Workspace == "" {
		return "", errors.New("sandbox: no workspace")
	}
	if !filepath.IsAbs(req.Workspace) {
		return "", fmt.Errorf("sandbox: workspace %q is not an absolute path", req.Workspace)
	}
	if req.Timeout < 0 {
		return "", fmt.Errorf("sandbox: negative timeout %s", req.Timeout)
	}
	if req.MaxOutput < 0 {
		return "", fmt.Errorf("sandbox: negative MaxOutput %d", req.MaxOutput)
	}
	if req.Home != "" && !req.Service {
		return "", errors.New("sandbox: a home of its own is for a service only")
	}
	if req.ServiceOverlay != "" && (!req.Service || req.ReadOnlyWorkspace) {
		return "", errors.New("sandbox: an overlay of its own is for a service that writes the workspace only")
	}
	real, err := filepath.EvalSymlinks(req.Workspace)
	if err != nil {
		return "", fmt.Errorf("sandbox: workspace: %w", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("sandbox: workspace: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("sandbox: workspace %q is not a directory", req.Workspace)
	}
	if systemDirs[real] {
		return "", fmt.Errorf("sandbox: workspace %q is a system directory", real)
	}
	return real, nil
}
