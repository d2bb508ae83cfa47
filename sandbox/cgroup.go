package sandbox

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/custos-dev/custos/sandbox/hostfs"
)

// Why a pids cgroup: RLIMIT_NPROC does not bind when the worker runs as root.
// bubblewrap (unprivileged user namespace) maps the sandbox uid to the
// caller's uid, so the command's real kernel uid is 0, and the kernel exempts
// uid 0 (INIT_USER) from RLIMIT_NPROC even inside a user namespace. A fork
// bomb would then fill the host's PID space. As root we can use a pids cgroup
// instead; as a normal user RLIMIT_NPROC (set by prlimit) does the job.

// slotPrefix names the cgroups custos makes for runs.
const slotPrefix = "custos-sandbox-"

// pidsCgroup is a parent cgroup under which each run gets its own child.
type pidsCgroup struct {
	parent string
	v2     bool
}

// findPidsCgroup locates our pids cgroup (v1 "pids" hierarchy, or v2 with the
// pids controller enabled for children) and checks we can create children.
//
// The cgroup is this thread's, not the process's: on v1 a cgroup holds
// threads, and a slot's thread (v1Slot) may be the process's main one,
// which /proc/self/cgroup shows. Read from any other thread, the goroutine
// calling this one's, it is where the worker runs; should it still name a
// slot, the slots' parent is taken instead, so that a run's cgroup is never
// made inside another run's (whose pids.max would then bind it).
func findPidsCgroup() (*pidsCgroup, error) {
	f, err := os.Open("/proc/thread-self/cgroup")
	if err != nil {
		f, err = os.Open("/proc/self/cgroup") // before Linux 3.17
	}
	if err != nil {
		return nil, fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	defer f.Close()
	var v1Path, v2Path string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "pids" {
				v1Path = parts[2]
			}
		}
	}
	for strings.HasPrefix(path.Base(v1Path), slotPrefix) {
		v1Path = path.Dir(v1Path)
	}
	var cands []pidsCgroup
	if v1Path != "" {
		cands = append(cands, pidsCgroup{parent: filepath.Join("/sys/fs/cgroup/pids", v1Path)})
	}
	if v2Path != "" {
		for _, mnt := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
			cands = append(cands, pidsCgroup{parent: filepath.Join(mnt, v2Path), v2: true})
		}
	}
	var errs []error
	for _, c := range cands {
		cg, err := c.create(1)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cg.remove()
		return &c, nil
	}
	if len(errs) == 0 {
		return nil, errors.New("no pids cgroup found")
	}
	return nil, errors.Join(errs...)
}

// runCgroup is the cgroup of one run.
type runCgroup struct {
	dir string
	v2  bool
	// maxBase is pids.events' "max" count when the run began (a v1 slot's
	// cgroup serves many runs).
	maxBase int64
}

func (p pidsCgroup) create(max int64) (*runCgroup, error) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	dir := filepath.Join(p.parent, slotPrefix+hex.EncodeToString(b))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pids cgroup: %w", err)
	}
	cg := &runCgroup{dir: dir, v2: p.v2}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.FormatInt(max, 10)), 0o644); err != nil {
		cg.remove()
		return nil, fmt.Errorf("pids cgroup %s: %w", p.parent, err)
	}
	return cg, nil
}

// contains reports whether pid is in this cgroup. A process that already
// exited (a quick command seen late on a loaded machine: gone, or a zombie,
// which cgroup v1 shows in the root cgroup) counts as contained: nothing of
// it runs outside the cgroup, and calling it an escape failed quick
// commands at random.
func (c *runCgroup) contains(pid int) bool {
	// A process on its way out (the sandbox's PID 1 exits as soon as a
	// short command has) may already show no cgroup and not yet be a
	// zombie: look again for a moment before calling it an escape.
	for wait := 100 * time.Microsecond; ; wait *= 2 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err == nil && strings.Contains(string(b), "/"+filepath.Base(c.dir)+"\n") || hostfs.Exited(pid) {
			return true
		}
		if wait > 20*time.Millisecond {
			return false
		}
		time.Sleep(wait)
	}
}

// hitMax reports whether a fork was refused by pids.max during the run.
func (c *runCgroup) hitMax() bool {
	return c.maxEvents() > c.maxBase
}

// maxEvents is how many forks pids.max has refused in this cgroup.
func (c *runCgroup) maxEvents() int64 {
	b, err := os.ReadFile(filepath.Join(c.dir, "pids.events"))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "max" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

func (c *runCgroup) remove() {
	// The cgroup can only go once the kernel has released its last process,
	// which it does a little after the reaping (after most runs, even a
	// quick one, the first rmdir is refused). So wait briefly first and
	// longer later, up to about a second after a mass kill: a fixed 5 ms
	// step cost most runs 5 ms.
	wait := 50 * time.Microsecond
	for waited := time.Duration(0); ; waited += wait {
		if err := os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) || waited > time.Second {
			return
		}
		time.Sleep(wait)
		wait = min(2*wait, 20*time.Millisecond)
	}
}

// On cgroup v1 there is no CLONE_INTO_CGROUP, and moving bwrap into the
// run's cgroup after the start would race with its clone of the sandbox.
// v1 places threads one by one (the "tasks" file), so a child started from
// an OS thread that lives in a cgroup is born there. But moving a thread
// (as the /bin/sh that joined the cgroup and exec'd bwrap did before) takes
// the kernel's cgroup_threadgroup_rwsem for writing, which waits for an RCU
// grace period: ~10 ms of every run on a busy machine, plus the shell's own
// start and a removal that waits for the kernel to release the cgroup.
//
// So each v1 run borrows a slot: a cgroup with an OS thread of the worker
// that joined it once, when the slot was made, and starts every bwrap of
// the slot's runs. A slot serves one run at a time; it goes back to the
// pool when the run is over (its processes gone: the run waits for bwrap,
// which outlives everything in the sandbox). The thread never leaves the
// slot and never ends, so the children's parent-death signal (sent when
// the thread that started them ends) comes only with the worker's death.
// It counts as one task of the cgroup, so pids.max is the run's limit plus
// one. Slots live as long as the worker; the empty cgroups a finished
// worker left are removed when the next one makes its pool.
//
// (cgroup v2 has CLONE_INTO_CGROUP and keeps a cgroup per run.)

// v1Slot is a run cgroup with a thread of the worker in it.
type v1Slot struct {
	pool *v1Pool
	cg   *runCgroup
	jobs chan func() // run on the slot's thread
}

// v1Pool holds the free slots under one parent cgroup (process-wide: every
// sandbox of the worker shares them).
type v1Pool struct {
	parent pidsCgroup
	mu     sync.Mutex
	free   []*v1Slot
	// warming is closed once the slot prewarm is making is in free (or
	// failed); nil when none is being made.
	warming chan struct{}
}

var (
	v1PoolsMu sync.Mutex
	v1Pools   = map[string]*v1Pool{}
)

// v1PoolFor returns the pool under p's parent, making it (and removing
// empty cgroups earlier workers left there) the first time.
func v1PoolFor(p pidsCgroup) *v1Pool {
	v1PoolsMu.Lock()
	defer v1PoolsMu.Unlock()
	if pl := v1Pools[p.parent]; pl != nil {
		return pl
	}
	if ents, err := os.ReadDir(p.parent); err == nil {
		for _, e := range ents {
			// Only empty ones (rmdir fails otherwise: a live worker's slot
			// always holds its thread) made more than a minute ago (not
			// another worker's probe or run being set up right now).
			if fi, err := e.Info(); err == nil && e.IsDir() && strings.HasPrefix(e.Name(), slotPrefix) && time.Since(fi.ModTime()) > time.Minute {
				_ = os.Remove(filepath.Join(p.parent, e.Name()))
			}
		}
	}
	pl := &v1Pool{parent: p}
	v1Pools[p.parent] = pl
	return pl
}

// checkout returns a free slot, or a new one, with pids.max set for a run
// limited to max processes.
func (pl *v1Pool) checkout(max int64) (*v1Slot, error) {
	pl.mu.Lock()
	var s *v1Slot
	for {
		if n := len(pl.free); n > 0 {
			s, pl.free = pl.free[n-1], pl.free[:n-1]
			break
		}
		w := pl.warming
		if w == nil {
			break
		}
		pl.mu.Unlock()
		<-w // the slot being made is sooner than a new one
		pl.mu.Lock()
	}
	pl.mu.Unlock()
	if s == nil {
		var err error
		if s, err = pl.newSlot(); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(s.cg.dir, "pids.max"), []byte(strconv.FormatInt(max+1, 10)), 0o644); err != nil {
		// A slot that cannot be set up is dropped (its thread stays parked).
		return nil, fmt.Errorf("pids cgroup %s: %w", s.cg.dir, err)
	}
	s.cg.maxBase = s.cg.maxEvents()
	return s, nil
}

// prewarm makes a slot in the background, ahead of the first run: the
// slot's thread joins its cgroup only after an RCU grace period (7-10 ms
// here), which a process that runs one command (starter sandbox exec)
// would otherwise wait for between its planning and bubblewrap's start.
// A checkout meanwhile waits for that slot rather than make another.
func (pl *v1Pool) prewarm() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if len(pl.free) > 0 || pl.warming != nil {
		return
	}
	done := make(chan struct{})
	pl.warming = done
	go func() {
		s, err := pl.newSlot()
		pl.mu.Lock()
		if err == nil {
			pl.free = append(pl.free, s)
		}
		pl.warming = nil
		pl.mu.Unlock()
		close(done)
	}()
}

// checkin gives the slot back, once the run is over.
func (s *v1Slot) checkin() {
	s.pool.mu.Lock()
	s.pool.free = append(s.pool.free, s)
	s.pool.mu.Unlock()
}

// newSlot makes a cgroup and a thread that joins it and then serves the
// slot's starts.
func (pl *v1Pool) newSlot() (*v1Slot, error) {
	cg, err := pl.parent.create(1)
	if err != nil {
		return nil, err
	}
	s := &v1Slot{pool: pl, cg: cg, jobs: make(chan func())}
	joined := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is the slot's
		tid := []byte(strconv.Itoa(threadID()))
		if err := os.WriteFile(filepath.Join(cg.dir, "tasks"), tid, 0o644); err != nil {
			joined <- fmt.Errorf("pids cgroup %s: %w", cg.dir, err)
			return // the thread ends with this goroutine, still outside
		}
		joined <- nil
		for job := range s.jobs {
			job()
		}
	}()
	if err := <-joined; err != nil {
		cg.remove()
		return nil, err
	}
	return s, nil
}

// start starts cmd from the slot's thread, inside the slot's cgroup.
func (s *v1Slot) start(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	s.jobs <- func() { done <- cmd.Start() }
	return <-done
}
