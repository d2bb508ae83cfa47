package retention

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/custos-dev/custos/sandbox/hostfs"
)

// WorkspaceUsage is what custos keeps for one workspace.
type WorkspaceUsage struct {
	// Workspace is the workspace's path, as its state names it (or the
	// directory's name when nothing does).
	Workspace string         `json:"workspace"`
	Bytes     map[Kind]int64 `json:"bytes"`
	Files     map[Kind]int   `json:"files"`
}

// Usage is what custos keeps in its state directory.
type Usage struct {
	State      string           `json:"state"`
	Workspaces []WorkspaceUsage `json:"workspaces"`
	// Kinds sums each kind over every workspace (the quarantine and the
	// host-guard snapshots are not per workspace).
	Kinds map[Kind]int64 `json:"kinds"`
	// Other is the rest: the embedded server's database, certificates.
	Other int64 `json:"other"`
	Total int64 `json:"total"`
}

// Measure sums the state directory. With measureCaches each workspace
// cache is walked; without, its last measured size is taken (cheap).
func Measure(state string, measureCaches bool) (Usage, error) {
	u := Usage{State: state, Kinds: map[Kind]int64{}}
	by := map[string]*WorkspaceUsage{}
	count := func(ws string, k Kind, n int64, files int) {
		w := by[ws]
		if w == nil {
			w = &WorkspaceUsage{Workspace: ws, Bytes: map[Kind]int64{}, Files: map[Kind]int{}}
			by[ws] = w
		}
		w.Bytes[k] += n
		w.Files[k] += files
	}
	top, err := dirNames(state)
	if err != nil {
		return Usage{}, err
	}
	for _, e := range top {
		path := filepath.Join(state, e.Name())
		switch e.Name() {
		case workspacesDir:
			err = measureWorkspaces(path, count)
		case cacheDir:
			err = eachDir(path, func(d string) {
				n := hostfs.TreeSize(filepath.Join(d, "cache"))
				if !measureCaches {
					ent, _ := cacheEntry(d)
					n = ent.Bytes
				}
				count(ownerOf(d), Caches, n, 1)
			})
		case overlayDir:
			err = eachDir(path, func(d string) { count(ownerOf(d), Overlays, hostfs.TreeSize(d), 1) })
		case quarantineDir:
			u.Kinds[Quarantine] = hostfs.TreeSize(path)
		case snapshotDir:
			u.Kinds[Snapshots] = hostfs.TreeSize(path)
		default:
			u.Other += hostfs.TreeSize(path)
		}
		if err != nil {
			return Usage{}, err
		}
	}
	for _, w := range by {
		u.Workspaces = append(u.Workspaces, *w)
		for k, n := range w.Bytes {
			u.Kinds[k] += n
		}
	}
	slices.SortFunc(u.Workspaces, func(a, b WorkspaceUsage) int { return strings.Compare(a.Workspace, b.Workspace) })
	u.Total = u.Other
	for _, n := range u.Kinds {
		u.Total += n
	}
	return u, nil
}

// measureWorkspaces counts each workspace's transcripts, audits and blobs.
func measureWorkspaces(root string, count func(string, Kind, int64, int)) error {
	return eachDir(root, func(d string) {
		ws := ownerOf(d)
		for _, f := range []struct {
			kind Kind
			dir  string
		}{{Transcripts, sessionsDir}, {Audits, auditDir}, {Blobs, filepath.Join(sessionsDir, blobsDir)},
			{Checkpoints, filepath.Join(checkpointsDir, "objects")}} {
			ents, _ := os.ReadDir(filepath.Join(d, f.dir))
			for _, e := range ents {
				if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
					_, n := objectState(fi) // a transcript has one link
					count(ws, f.kind, n, 1)
				}
			}
		}
		_ = eachDir(filepath.Join(d, homesDir), func(h string) { count(ws, ServerHomes, hostfs.TreeSize(h), 1) })
	})
}

// eachDir calls fn with each directory under root but the hidden ones
// (a cache being removed).
func eachDir(root string, fn func(string)) error {
	ents, err := dirNames(root)
	if err != nil {
		return fmt.Errorf("retention: measuring: %w", err)
	}
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			fn(filepath.Join(root, e.Name()))
		}
	}
	return nil
}

// ownerOf is the workspace a directory of the state belongs to: what its
// "workspace" file says, else its name.
func ownerOf(dir string) string {
	if b, err := os.ReadFile(filepath.Join(dir, "workspace")); err == nil && len(b) > 0 && len(b) < 4096 {
		return strings.TrimSpace(string(b))
	}
	return filepath.Base(dir)
}
