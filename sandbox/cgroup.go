package sandbox

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Why a pids cgroup: RLIMIT_NPROC does not bind when the worker runs as root.
// bubblewrap (unprivileged user namespace) maps the sandbox uid to the
// caller's uid, so the command's real kernel uid is 0, and the kernel exempts
// uid 0 (INIT_USER) from RLIMIT_NPROC even inside a user namespace. A fork
// bomb would then fill the host's PID space. As root we can use a pids cgroup
// instead; as a normal user RLIMIT_NPROC (set by prlimit) does the job.

// pidsCgroup is a parent cgroup under which each run gets its own child.
type pidsCgroup struct {
	parent string
	v2     bool
}

// findPidsCgroup locates our pids cgroup (v1 "pids" hierarchy, or v2 with the
// pids controller enabled for children) and checks we can create children.
func findPidsCgroup() (*pidsCgroup, error) {
	f, err := os.Open("/proc/self/cgroup")
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
}

func (p pidsCgroup) create(max int64) (*runCgroup, error) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	dir := filepath.Join(p.parent, "custos-sandbox-"+hex.EncodeToString(b))
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
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err == nil && strings.Contains(string(b), "/"+filepath.Base(c.dir)+"\n") {
		return true
	}
	return exited(pid)
}

// exited reports whether pid is gone or a zombie.
func exited(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return true
	}
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// hitMax reports whether a fork was refused by pids.max.
func (c *runCgroup) hitMax() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "pids.events"))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "max" && f[1] != "0" {
			return true
		}
	}
	return false
}

func (c *runCgroup) remove() {
	// The cgroup can only go once its last process is reaped; give the kernel
	// a moment after a mass kill.
	for i := 0; i < 200; i++ {
		if err := os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
