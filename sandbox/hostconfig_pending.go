package sandbox

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// A command cut off by a worker crash (kill -9, a lost machine) never
// reaches its guard's finish: what it planted for the host would stay.
// So the snapshot taken before each command is also written to disk
// (<state>/host-guard, beside the quarantine, never mounted into a
// sandbox) and removed when finish has run. A snapshot whose process is
// gone is an interrupted command: the next command in that workspace, or
// the next worker to start, finishes it first, neutralising what it left,
// and the command that found it says so in its result. Written without
// fsync: a killed process loses nothing the kernel holds; a lost machine
// loses the host's tools' processes along with it.

// pendingGuard is the snapshot of one running command, as written.
type pendingGuard struct {
	WS        string            `json:"ws"`
	PID       int               `json:"pid"`
	Start     string            `json:"start"` // the process's start time, /proc/PID/stat
	Budget    int               `json:"budget"`
	Truncated bool              `json:"truncated,omitempty"`
	Items     []pendingItem     `json:"items,omitempty"`
	GitDirs   []string          `json:"gitdirs,omitempty"`
	Visited   []string          `json:"visited,omitempty"`
	Content   map[string][]byte `json:"content,omitempty"`
}

type pendingItem struct {
	Rel  string `json:"rel"`
	Kind hsKind `json:"kind"`
	Mode uint32 `json:"mode"`
	Size int64  `json:"size"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
	Mtim int64  `json:"mtim"`
	Ctim int64  `json:"ctim"`
	From string `json:"from"`
}

// pendingDir is where the snapshots of running commands are written.
func (c Config) pendingDir() string {
	return filepath.Join(filepath.Dir(filepath.Clean(c.quarantineDir())), "host-guard")
}

// savePending writes s for this process; it returns the file ("" when it
// could not be written: the command still runs, guarded as before).
func (c Config) savePending(s *hostSnapshot) string {
	p := pendingGuard{WS: s.ws, PID: os.Getpid(), Start: procStart(os.Getpid()), Budget: s.budget, Truncated: s.truncated, Content: s.content}
	for rel, it := range s.items {
		p.Items = append(p.Items, pendingItem{Rel: rel, Kind: it.kind, Mode: uint32(it.sig.mode), Size: it.sig.size,
			Dev: it.sig.dev, Ino: it.sig.ino, Mtim: it.sig.mtim, Ctim: it.sig.ctim, From: it.from})
	}
	for d := range s.gitdirs {
		p.GitDirs = append(p.GitDirs, d)
	}
	for d := range s.visited {
		p.Visited = append(p.Visited, d)
	}
	data, err := json.Marshal(p)
	if err != nil {
		return ""
	}
	dir := c.pendingDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ""
	}
	name := filepath.Join(dir, wsKey(s.ws)+"-"+randHex()+".json")
	if err := writeIfChanged(name, string(data)); err != nil { // owner-only, whole or not at all
		return ""
	}
	return name
}

// snapshot rebuilds the snapshot as it was taken.
func (p pendingGuard) snapshot() *hostSnapshot {
	s := &hostSnapshot{ws: p.WS, items: map[string]hsItem{}, gitdirs: map[string]bool{}, visited: map[string]bool{},
		content: p.Content, truncated: p.Truncated, budget: p.Budget, keep: true, dirs: newDirListings()}
	if s.content == nil {
		s.content = map[string][]byte{}
	}
	for _, it := range p.Items {
		s.items[it.Rel] = hsItem{kind: it.Kind, from: it.From, sig: fileSig{mode: fs.FileMode(it.Mode), size: it.Size,
			dev: it.Dev, ino: it.Ino, mtim: it.Mtim, ctim: it.Ctim}}
	}
	for _, d := range p.GitDirs {
		s.gitdirs[d] = true
	}
	for _, d := range p.Visited {
		s.visited[d] = true
	}
	return s
}

// recoverInterrupted finishes the guards of commands in ws (every
// workspace for ws "") whose process is gone, and returns what they
// neutralised, each change marked as left by an interrupted command.
func (c Config) recoverInterrupted(ws string) Result {
	var out Result
	prefix := ""
	if ws != "" {
		prefix = wsKey(ws) + "-"
	}
	ents, err := os.ReadDir(c.pendingDir())
	if err != nil {
		return out
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), prefix) || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(c.pendingDir(), e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var p pendingGuard
		if err := json.Unmarshal(data, &p); err != nil || p.WS == "" {
			_ = os.Remove(path) // torn or foreign: nothing to finish
			continue
		}
		if alive(p.PID, p.Start) || (ws != "" && p.WS != ws) {
			continue
		}
		g := &hostGuard{ws: p.WS, before: p.snapshot(), qroot: c.quarantineDir(), budget: p.Budget, pending: path}
		var r Result
		g.finish(&r)
		for _, ch := range r.HostConfig {
			ch.Action += " (left by an earlier command that was interrupted)"
			out.HostConfig = append(out.HostConfig, ch)
		}
		if r.HostConfigKept != "" {
			out.HostConfigKept = r.HostConfigKept
		}
	}
	return out
}

// RecoverHostConfig finishes, at a worker's start, the guards of commands
// an earlier process was running when it died, in every workspace, so what
// they planted is neutralised before anyone's editor opens the workspace.
func (c Config) RecoverHostConfig(logger *slog.Logger) {
	r := c.recoverInterrupted("")
	if len(r.HostConfig) > 0 && logger != nil {
		logger.Warn("sandbox: host config left by interrupted commands neutralised", "changes", fmt.Sprint(r.HostConfig), "kept", r.HostConfigKept)
	}
}

// alive says whether process pid is still the one that started at start.
func alive(pid int, start string) bool {
	if pid <= 0 {
		return false
	}
	now := procStart(pid)
	return now != "" && now == start
}
