// Package probecache keeps a passed probe of the sandbox between
// processes (sandbox.Config.ProbeCache), with what its result depended
// on.
package probecache

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/custos-dev/custos/internal/statedir"
	"github.com/custos-dev/custos/sandbox/hostfs"
)

// A process that runs one command (`starter sandbox exec`) would spend a
// bubblewrap run of its own, and the probe workspace's files, on the
// probe before the command: as long again as the command's own start.
// So, when sandbox.Config.ProbeCache names a file, a probe through the
// mount step that passed is written there with what it depended on: the
// bubblewrap and prlimit binaries, this executable (the mount step is its
// constructor), the kernel and its boot, and the user. The next process
// whose all of these are the same, within TTL, uses the result instead of
// probing. Nothing rests on it for isolation: the mount step checks every mount it makes and
// fails the command closed, and a Run that fails (other than by being
// cancelled) removes the file, so the next process probes again.

// TTL bounds how long a probe's result is taken on trust.
const TTL = time.Hour

// Key is what a probe's result depends on.
type Key struct {
	Bwrap, Prlimit, Exe string // path and signature of each
	Kernel, Boot        string
	UID                 int
}

// Record is a passed probe as the cache file holds it.
type Record struct {
	Key Key       `json:"key"`
	At  time.Time `json:"at"`
}

// KeyFor is the key of a probe with bwrap and prlimit by this
// executable, now; ok is false when any part cannot be read (then the
// probe runs and is not recorded).
func KeyFor(bwrap, prlimit string) (Key, bool) {
	k := Key{UID: os.Getuid()}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return k, false
	}
	for _, f := range []struct {
		dst  *string
		path string
	}{{&k.Bwrap, bwrap}, {&k.Prlimit, prlimit}, {&k.Exe, exe}} {
		fi, err := os.Stat(f.path)
		if err != nil {
			return k, false
		}
		s := hostfs.SigOf(fi)
		*f.dst = fmt.Sprintf("%s %d %d %d %d %d", f.path, s.Size, s.Dev, s.Ino, s.Mtim, s.Ctim)
	}
	for _, f := range []struct {
		dst  *string
		path string
	}{{&k.Kernel, "/proc/sys/kernel/osrelease"}, {&k.Boot, "/proc/sys/kernel/random/boot_id"}} {
		b, err := os.ReadFile(f.path)
		if err != nil || len(b) == 0 {
			return k, false
		}
		*f.dst = strings.TrimSpace(string(b))
	}
	return k, true
}

// Cached reports whether path holds a passed probe for key, recent
// enough.
func Cached(path string, key Key) bool {
	var r Record
	return hostfs.ReadRecord(path, &r) && r.Key == key && hostfs.Recent(r.At, TTL)
}

// Save writes a passed probe for key to path (best effort: without
// it the next process probes).
func Save(path string, key Key) {
	hostfs.WriteRecord(path, Record{Key: key, At: time.Now()})
}

// Default is the state directory's sandbox-probe.json, or "" when there
// is no state directory (then every process probes).
func Default() string { return inStateDir("sandbox-probe.json") }

// DefaultIdentity is the state directory's sandbox-git-identity.json
// (sandbox.Config.IdentityCache, kept beside the probe's), or "" when
// there is no state directory.
func DefaultIdentity() string { return inStateDir("sandbox-git-identity.json") }

func inStateDir(name string) string {
	d, err := statedir.Dir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, name)
}
