package retention

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/custos-dev/custos/sandbox/hostfs"
)

// An MCP server's home (mcpservers.HomeOf) is per workspace and server:
// workspaces/<ws>/mcp-homes/<server>/, its home/, the lock the running
// server holds, whose modification time is the home's last use, and a uvx
// server's uv-cache/ (its layer over the host's uv cache): all removed
// together.
// A home goes once unused for Policy.JobFiles (what a memory server was
// told lives as long as an ended job's transcript), never while its server
// runs, whether or not the open jobs are known: a home is no job's file.

// homesDir is a workspace's server homes (mcpservers.HomesDir).
const homesDir = "mcp-homes"

// areaHomes is the walk's last area: the workspaces' server homes.
const areaHomes = areaQuarantine + 1

// serverHomes plans the removal of the server homes unused for
// Policy.JobFiles.
func (p *planner) serverHomes() error {
	wss, err := dirNames(filepath.Join(p.in.State, workspacesDir))
	if err != nil {
		return err
	}
	for _, w := range wss {
		root := filepath.Join(p.in.State, workspacesDir, w.Name(), homesDir)
		ents, err := dirNames(root)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if !e.IsDir() || !p.visit(Cursor{Area: areaHomes, Dir: w.Name(), Name: e.Name()}) {
				continue
			}
			p.plan.Examined++
			ent, ok := homeEntry(filepath.Join(root, e.Name()), w.Name())
			if ok && p.old(ent.ModTime, p.in.Policy.JobFiles) {
				ent.Why = "unused for " + age(p.in.Now.Sub(ent.ModTime))
				p.add(ent)
			}
		}
	}
	return nil
}

// homeEntry describes a server's home: its last use is its lock's
// modification time (the directory's, without one).
func homeEntry(dir, ws string) (Entry, bool) {
	fi, err := os.Lstat(filepath.Join(dir, "lock"))
	if err != nil {
		if fi, err = os.Lstat(dir); err != nil {
			return Entry{}, false
		}
	}
	return Entry{Kind: ServerHomes, Path: dir, Workspace: ws, ModTime: fi.ModTime(),
		Bytes: hostfs.TreeSize(dir)}, true
}

// removeHome removes a server's home unless its server runs (holds the
// lock) or it was used since the plan.
func removeHome(e Entry) (bool, error) {
	lock, err := os.OpenFile(filepath.Join(e.Path, "lock"), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return removeUnder(e)
	}
	if err != nil {
		return false, fmt.Errorf("retention: server home %s: %w", e.Path, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false, nil // its server runs
	}
	return removeUnder(e)
}

// removeUnder removes the home if it was not used since the plan.
func removeUnder(e Entry) (bool, error) {
	if cur, ok := homeEntry(e.Path, e.Workspace); !ok || !cur.ModTime.Equal(e.ModTime) {
		return false, nil
	}
	if err := hostfs.RemoveAllWritable(e.Path); err != nil {
		return false, fmt.Errorf("retention: removing server home %s: %w", e.Path, err)
	}
	return true, nil
}
