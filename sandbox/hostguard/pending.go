package hostguard

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/custos-dev/custos/sandbox/hostfs"
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
//
// A file is made once per process and concurrent command, named for its
// process (<ws key>-<pid>-<start>-<random>.json), and reused: rewritten
// before each command and emptied after it. Creating and removing a file
// per command cost ext4 here half a millisecond of every call; rewriting
// one costs tens of microseconds. Because the name says whose it is, a
// live process's file is never read by another, so a reader never sees
// one half rewritten; an empty file is one with no command running.

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
	HookDirs  []string          `json:"hookDirs,omitempty"`
	// Overlay is the run's overlay directory (overlay.go): its
	// upper layer is what the command wrote, not yet applied.
	Overlay string `json:"overlay,omitempty"`
	// Includes, Home, HostConfigs and Modules are the snapshot's
	// (include.go).
	Includes    []string `json:"includes,omitempty"`
	Home        string   `json:"home,omitempty"`
	HostConfigs []string `json:"hostConfigs,omitempty"`
	Modules     bool     `json:"modules,omitempty"`
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
func (c Settings) pendingDir() string {
	return filepath.Join(filepath.Dir(filepath.Clean(c.Quarantine())), "host-guard")
}

// savePending writes s for this process; it returns the file (nil when
// it could not be written: the command still runs, guarded as before).
func (c Settings) savePending(s *hostSnapshot, overlay string) *pendingFile {
	data, err := json.Marshal(pendingOf(s, overlay))
	if err != nil {
		return nil
	}
	f := pendingFiles.take(c.pendingDir(), hostfs.WorkspaceKey(s.ws))
	if f == nil {
		return nil
	}
	if _, err := f.f.WriteAt(data, 0); err != nil || f.f.Truncate(int64(len(data))) != nil {
		f.drop()
		return nil
	}
	return f
}

// pendingOf is s as written, for the run whose overlay is overlay ("" none).
func pendingOf(s *hostSnapshot, overlay string) pendingGuard {
	p := pendingGuard{WS: s.ws, PID: os.Getpid(), Start: ownStart(), Budget: s.budget, Truncated: s.truncated, Content: s.content, Overlay: overlay,
		Home: s.home, HostConfigs: s.hostConfigs, Modules: s.modules}
	for rel := range s.includes {
		p.Includes = append(p.Includes, rel)
	}
	for rel, it := range s.items {
		p.Items = append(p.Items, pendingItem{Rel: rel, Kind: it.kind, Mode: uint32(it.sig.Mode), Size: it.sig.Size,
			Dev: it.sig.Dev, Ino: it.sig.Ino, Mtim: it.sig.Mtim, Ctim: it.sig.Ctim, From: it.from})
	}
	for d := range s.gitdirs {
		p.GitDirs = append(p.GitDirs, d)
	}
	for d := range s.visited {
		p.Visited = append(p.Visited, d)
	}
	for d := range s.hookDirs {
		p.HookDirs = append(p.HookDirs, d)
	}
	return p
}

// pendingFile is one of this process's snapshot files, open.
type pendingFile struct {
	f   *os.File
	fi  os.FileInfo // f as opened, to tell whether its path still names it
	key string      // pendingSlots' key: directory and workspace key
}

// Path is where the file is.
func (f *pendingFile) Path() string { return f.f.Name() }

// done empties the file once its command's guard has finished, for the
// next command in the workspace to reuse.
func (f *pendingFile) done() {
	if f.f.Truncate(0) != nil {
		f.drop()
		return
	}
	pendingFiles.give(f)
}

// drop removes the file, when it cannot be trusted to say the truth.
func (f *pendingFile) drop() {
	_ = os.Remove(f.f.Name())
	f.f.Close()
}

// pendingSlots are the emptied snapshot files of this process, by
// directory and workspace.
type pendingSlots struct {
	mu   sync.Mutex
	free map[string][]*pendingFile
}

var pendingFiles = &pendingSlots{free: map[string][]*pendingFile{}}

// maxFreePending bounds the emptied files kept open per workspace.
const maxFreePending = 4

func (p *pendingSlots) take(dir, wskey string) *pendingFile {
	key := filepath.Join(dir, wskey)
	p.mu.Lock()
	if free := p.free[key]; len(free) > 0 {
		f := free[len(free)-1]
		p.free[key] = free[:len(free)-1]
		p.mu.Unlock()
		// Still there (a `cache --clear` or a person may have removed it)?
		if fi, err := os.Stat(f.f.Name()); err == nil && os.SameFile(fi, f.fi) {
			return f
		}
		f.f.Close()
	} else {
		p.mu.Unlock()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil
	}
	name := filepath.Join(dir, fmt.Sprintf("%s-%d-%s-%s.json", wskey, os.Getpid(), ownStart(), hostfs.RandHex()))
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		pf := &pendingFile{f: f}
		pf.drop()
		return nil
	}
	return &pendingFile{f: f, fi: fi, key: key}
}

func (p *pendingSlots) give(f *pendingFile) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free[f.key]) >= maxFreePending {
		f.drop()
		return
	}
	p.free[f.key] = append(p.free[f.key], f)
}

// ownStart is this process's start time, as /proc/PID/stat gives it.
var ownStart = sync.OnceValue(func() string { return hostfs.ProcStart(os.Getpid()) })

// pendingOwner is the process a snapshot file's name says wrote it (ok
// false for a name of another form: files written before names said so).
func pendingOwner(name string) (pid int, start string, ok bool) {
	parts := strings.Split(strings.TrimSuffix(name, ".json"), "-")
	if len(parts) != 4 {
		return 0, "", false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 || parts[2] == "" {
		return 0, "", false
	}
	return pid, parts[2], true
}

// snapshot rebuilds the snapshot as it was taken.
func (p pendingGuard) snapshot() *hostSnapshot {
	s := &hostSnapshot{ws: p.WS, items: map[string]hsItem{}, gitdirs: map[string]bool{}, visited: map[string]bool{}, hookDirs: map[string]bool{},
		content: p.Content, truncated: p.Truncated, budget: p.Budget, keep: true, dirs: hostfs.NewDirListings(),
		includes: map[string]bool{}, home: p.Home, hostConfigs: p.HostConfigs, modules: p.Modules}
	for _, rel := range p.Includes {
		s.includes[rel] = true
	}
	if s.content == nil {
		s.content = map[string][]byte{}
	}
	for _, it := range p.Items {
		s.items[it.Rel] = hsItem{kind: it.Kind, from: it.From, sig: hostfs.FileSig{Mode: fs.FileMode(it.Mode), Size: it.Size,
			Dev: it.Dev, Ino: it.Ino, Mtim: it.Mtim, Ctim: it.Ctim}}
	}
	for _, d := range p.GitDirs {
		s.gitdirs[d] = true
	}
	for _, d := range p.Visited {
		s.visited[d] = true
	}
	for _, d := range p.HookDirs {
		s.hookDirs[d] = true
	}
	return s
}

// recoverInterrupted finishes the guards of commands in ws (every
// workspace for ws "") whose process is gone, and returns what they
// neutralised, each change marked as left by an interrupted command.
func (c Settings) recoverInterrupted(ws string) Report {
	out := c.recoverPending(ws)
	c.sweepOverlays(ws, &out)
	return out
}

// recoverPending is recoverInterrupted for the snapshots' files: first,
// since the overlays their runs left are theirs to finish.
func (c Settings) recoverPending(ws string) Report {
	var out Report
	for _, e := range wsEntries(c.pendingDir(), ws) {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(c.pendingDir(), e.Name())
		if pid, start, ok := pendingOwner(e.Name()); ok && alive(pid, start) {
			continue // a running process's, perhaps being rewritten
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var p pendingGuard
		if err := json.Unmarshal(data, &p); err != nil || p.WS == "" {
			// Empty (no command was running), torn (the process died
			// writing it, before its command began) or foreign: nothing
			// to finish.
			_ = os.Remove(path)
			continue
		}
		if alive(p.PID, p.Start) || (ws != "" && p.WS != ws) {
			continue
		}
		g := &Guard{ws: p.WS, before: p.snapshot(), qroot: c.Quarantine(), budget: p.Budget, recoveredFrom: path, overlay: p.Overlay}
		var r Report
		g.Finish(&r)
		out.addInterrupted(r)
	}
	return out
}

// addInterrupted adds what r, the finishing of an interrupted command's
// guard, neutralised, each change marked as left by that command.
func (out *Report) addInterrupted(r Report) {
	for _, ch := range r.HostConfig {
		ch.Action += " (left by an earlier command that was interrupted)"
		out.HostConfig = append(out.HostConfig, ch)
	}
	if r.HostConfigKept != "" {
		out.HostConfigKept = r.HostConfigKept
	}
	for _, ch := range r.Withheld {
		ch.Action += " (left by an earlier command that was interrupted)"
		out.Withheld = append(out.Withheld, ch)
	}
}

// wsEntries are dir's entries named for ws (every workspace for ws "").
func wsEntries(dir, ws string) []os.DirEntry {
	ents, err := os.ReadDir(dir)
	if err != nil || ws == "" {
		return ents
	}
	prefix := hostfs.WorkspaceKey(ws) + "-"
	return slices.DeleteFunc(ents, func(e os.DirEntry) bool { return !strings.HasPrefix(e.Name(), prefix) })
}

// RecoverHostConfig finishes, at a worker's start, the guards of commands
// an earlier process was running when it died, in every workspace, so what
// they planted is neutralised before anyone's editor opens the workspace.
func (c Settings) RecoverHostConfig(logger *slog.Logger) {
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
	if pid == os.Getpid() && start == ownStart() {
		return true // this process: its own file, reused, is passed over on every command
	}
	now := hostfs.ProcStart(pid)
	return now != "" && now == start
}
