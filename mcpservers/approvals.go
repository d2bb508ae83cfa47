package mcpservers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/custos-dev/custos/internal/atomicfile"
)

// Approvals are the .mcp.json entries people approved: for each workspace,
// each server's name and the fingerprint of its entry when approved. They
// live in custos' state directory, out of the workspace's reach: a
// repository cannot approve its own servers.
type Approvals map[string]map[string]string

// approvalsFile is the file in the state directory.
const approvalsFile = "mcp-approvals.json"

// LoadApprovals reads the approvals (none yet: empty).
func LoadApprovals(stateDir string) (Approvals, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, approvalsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Approvals{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcp approvals: %w", err)
	}
	a := Approvals{}
	if err := json.Unmarshal(data, &a); err != nil {
		// Fail closed: nothing counts as approved, and the person is told.
		return nil, fmt.Errorf("mcp approvals: %s is broken (approve the servers again after removing it): %w", filepath.Join(stateDir, approvalsFile), err)
	}
	return a, nil
}

// Has reports whether s, as it is now, was approved for the workspace.
func (a Approvals) Has(workspace string, s Server) bool {
	return a[workspace][s.Name] == s.Fingerprint()
}

// Approve records s, as it is now, as approved for the workspace; Revoke
// takes a server's approval back. Both rewrite the file atomically.
func Approve(stateDir, workspace string, s Server) error {
	return change(stateDir, func(a Approvals) {
		if a[workspace] == nil {
			a[workspace] = map[string]string{}
		}
		a[workspace][s.Name] = s.Fingerprint()
	})
}

// Revoke takes back the approval of the workspace's server name.
func Revoke(stateDir, workspace, name string) error {
	return change(stateDir, func(a Approvals) { delete(a[workspace], name) })
}

func change(stateDir string, f func(Approvals)) error {
	a, err := LoadApprovals(stateDir)
	if err != nil {
		return err
	}
	f(a)
	data, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return fmt.Errorf("mcp approvals: %w", err)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return fmt.Errorf("mcp approvals: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(stateDir, approvalsFile), data, 0o600); err != nil {
		return fmt.Errorf("mcp approvals: %w", err)
	}
	return nil
}
