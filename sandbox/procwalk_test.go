//go:build linux

package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/custos-dev/custos/netpolicy"
	"github.com/custos-dev/custos/sandbox/hostfs"
)

// The /proc walk: run inside a sandbox (the test binary, copied into the
// workspace, started with procWalkMarker), it follows every entry of /proc
// that can lead somewhere, for every process and thread it can see, and
// every descriptor it inherited, and reports each one that leads out of
// the command's own view. It does not look for known doors but for any:
//
//   - a link (cwd, root, exe, fd/N, map_files/*) that resolves, through its
//     magic, to a file or directory on a mount that is not in the walker's
//     own mount namespace: bubblewrap's namespace (where the workspace is
//     the host's and the overlay's layers are bare) or the host's;
//   - any path that reaches one of the forbidden inodes (the host
//     workspace directory, a secret the deny rules mask, custos' state
//     directory, the run's overlay), named by the test by device and inode;
//   - a process whose memory it can open for writing (mem) while that
//     process is not under the same seccomp filter, or sits in another
//     mount namespace: writing there runs code past the second wall;
//   - an environ that holds the secret value the test put in the worker's
//     own environment;
//   - a descriptor the walker inherited beyond the standard three.
//
// The same binary runs under Anthropic's sandbox-runtime and Codex's
// sandbox for the closing note's comparison (it takes the same arguments
// there).

const procWalkMarker = "custos-procwalk"

// procWalkInput is what the walker is told, as JSON in its second argument.
type procWalkInput struct {
	Forbidden []procWalkInode `json:"forbidden"`
	Secret    string          `json:"secret"`
}

type procWalkInode struct {
	Name string `json:"name"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
}

// procWalkReport is what it prints.
type procWalkReport struct {
	Processes int      `json:"processes"`
	Links     int      `json:"links"`
	Followed  int      `json:"followed"`
	Findings  []string `json:"findings"`
}

func forbiddenInode(name, path string) (procWalkInode, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return procWalkInode{}, fmt.Errorf("stat %s: %w", path, err)
	}
	return procWalkInode{Name: name, Dev: st.Dev, Ino: st.Ino}, nil
}

// maybeRunProcWalk runs the walker when the binary was started as one.
func maybeRunProcWalk() {
	if len(os.Args) < 2 || os.Args[1] != procWalkMarker {
		return
	}
	var in procWalkInput
	if len(os.Args) > 2 {
		if err := json.Unmarshal([]byte(os.Args[2]), &in); err != nil {
			fmt.Fprintln(os.Stderr, "procwalk:", err)
			os.Exit(2)
		}
	}
	r := procWalk(in)
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	os.Exit(0)
}

type procWalker struct {
	in     procWalkInput
	mounts map[uint64]bool
	self   int
	rep    procWalkReport
}

func procWalk(in procWalkInput) procWalkReport {
	w := &procWalker{in: in, self: os.Getpid()}
	// First, before this walk opens anything (the Go runtime's poller
	// comes with the first file): what the walker inherited.
	w.inheritedFDs()
	w.mounts = ownMounts()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		w.rep.Processes++
		w.process(fmt.Sprintf("/proc/%d", pid))
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, t := range tasks {
			if t.Name() != e.Name() {
				w.process(fmt.Sprintf("/proc/%d/task/%s", pid, t.Name()))
			}
		}
	}
	// The mounts themselves: none may be one of the forbidden inodes.
	for _, mp := range mountPoints() {
		w.follow("mount "+mp, mp)
	}
	return w.rep
}

// ownMounts are the mount IDs of the walker's own mount namespace.
func ownMounts() map[uint64]bool {
	ids := map[uint64]bool{}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ids
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if id, err := strconv.ParseUint(strings.Fields(sc.Text() + " x")[0], 10, 64); err == nil {
			ids[id] = true
		}
	}
	return ids
}

func mountPoints() []string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 {
			out = append(out, strings.ReplaceAll(f[4], `\040`, " "))
		}
	}
	return out
}

func (w *procWalker) finding(format string, a ...any) {
	w.rep.Findings = append(w.rep.Findings, fmt.Sprintf(format, a...))
}

func (w *procWalker) inheritedFDs() {
	for fd := 3; fd < 4096; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			continue
		}
		buf := make([]byte, 4096)
		n, _ := unix.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd), buf)
		target := string(buf[:max(n, 0)])
		if strings.HasPrefix(target, "/sys/fs/cgroup/") {
			// The Go runtime's own: it keeps the CPU quota files open to
			// size GOMAXPROCS, where /sys is visible (not in custos').
			continue
		}
		w.finding("inherited descriptor %d -> %s", fd, target)
	}
}

// process follows one process' (or thread's) entries.
func (w *procWalker) process(dir string) {
	for _, l := range []string{"cwd", "root", "exe"} {
		w.follow(dir+"/"+l, dir+"/"+l)
	}
	for _, sub := range []string{"fd", "map_files"} {
		ents, err := os.ReadDir(dir + "/" + sub)
		if err != nil {
			continue
		}
		for _, e := range ents {
			w.follow(dir+"/"+sub+"/"+e.Name(), dir+"/"+sub+"/"+e.Name())
		}
	}
	if env, err := os.ReadFile(dir + "/environ"); err == nil && w.in.Secret != "" && strings.Contains(string(env), w.in.Secret) {
		w.finding("%s/environ holds the worker's secret", dir)
	}
	w.memory(dir)
}

// memory reports a process whose memory the walker can write although it
// is outside the walker's own wall (another seccomp state or mount
// namespace).
func (w *procWalker) memory(dir string) {
	f, err := os.OpenFile(dir+"/mem", os.O_RDWR, 0)
	if err != nil {
		return
	}
	f.Close()
	own, _ := os.ReadFile("/proc/self/status")
	other, _ := os.ReadFile(dir + "/status")
	myNS, _ := os.Readlink("/proc/self/ns/mnt")
	itsNS, _ := os.Readlink(dir + "/ns/mnt")
	if statusField(own, "Seccomp") != statusField(other, "Seccomp") || statusField(own, "Seccomp_filters") != statusField(other, "Seccomp_filters") {
		w.finding("%s/mem is writable, and that process is not under the walker's seccomp filter (Seccomp %s, filters %s)", dir, statusField(other, "Seccomp"), statusField(other, "Seccomp_filters"))
	}
	if myNS != itsNS {
		w.finding("%s/mem is writable, and that process is in another mount namespace (%s)", dir, itsNS)
	}
}

func statusField(status []byte, name string) string {
	for _, l := range strings.Split(string(status), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// follow resolves path (a magic link, or a mount point) and reports where
// it leads, if that is outside.
func (w *procWalker) follow(name, path string) {
	w.rep.Links++
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_BASIC_STATS|unix.STATX_MNT_ID, &stx); err != nil {
		return // closed to the walker: no door
	}
	w.rep.Followed++
	dev := unix.Mkdev(stx.Dev_major, stx.Dev_minor)
	for _, f := range w.in.Forbidden {
		if f.Dev == dev && f.Ino == stx.Ino {
			w.finding("%s reaches %s", name, f.Name)
		}
	}
	mode := uint32(stx.Mode) & unix.S_IFMT
	if mode != unix.S_IFDIR && mode != unix.S_IFREG && mode != unix.S_IFLNK {
		return // pipes, sockets, devices, anonymous inodes: no place
	}
	target, _ := os.Readlink(path)
	if !strings.HasPrefix(target, "/") || strings.HasPrefix(target, "/memfd:") {
		return // an anonymous file (anon_inode:, memfd): on no mount of anyone's
	}
	if stx.Mask&unix.STATX_MNT_ID != 0 && !w.mounts[stx.Mnt_id] {
		w.finding("%s -> %s is on mount %d, outside the walker's mount namespace", name, filepath.Clean(target), stx.Mnt_id)
	}
}

// procWalkSetup makes a workspace holding the walker, a secret its deny
// rules mask, and the forbidden inodes: the host workspace, the secrets,
// custos' state directory and a run's overlays, a host file outside every
// mount. The worker's environment gets a secret value, and the test
// process a descriptor of the host secret that is not close-on-exec, as a
// worker started by a careless parent would hold.
func procWalkSetup(t *testing.T, stateRoot string) (ws string, in procWalkInput) {
	t.Helper()
	ws = mustEval(t, t.TempDir())
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".env"), []byte("TOKEN=hunter2\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "secrets"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "secrets", "key"), []byte("k"), 0o644))
	self, err := os.Executable()
	require.NoError(t, err)
	b, err := os.ReadFile(self)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "procwalk"), b, 0o755))
	hostSecret := filepath.Join(t.TempDir(), "host-secret")
	require.NoError(t, os.WriteFile(hostSecret, []byte("s"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(stateRoot, "overlay"), 0o700))
	for _, f := range []struct{ name, path string }{
		{"the masked .env", filepath.Join(ws, ".env")},
		{"the masked secrets/", filepath.Join(ws, "secrets")}, {"the masked secrets/key", filepath.Join(ws, "secrets", "key")},
		{"custos' state directory", stateRoot}, {"the runs' overlays", filepath.Join(stateRoot, "overlay")},
		{"a host file outside the sandbox", hostSecret},
	} {
		fi, err := forbiddenInode(f.name, f.path)
		require.NoError(t, err)
		in.Forbidden = append(in.Forbidden, fi)
	}
	// Forbidden on the overlay only (first: the runs without it show the
	// workspace as it is).
	host, err := forbiddenInode("the host workspace", ws)
	require.NoError(t, err)
	in.Forbidden = append([]procWalkInode{host}, in.Forbidden...)
	in.Secret = "custos-walk-" + hostfs.RandHex()
	t.Setenv("CUSTOS_WALK_SECRET", in.Secret)
	fd, err := unix.Open(hostSecret, unix.O_RDONLY, 0) // no O_CLOEXEC: inherited by every child
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	return ws, in
}

func runProcWalk(t *testing.T, sb Sandbox, ws string, in procWalkInput, net netpolicy.Policy) procWalkReport {
	t.Helper()
	arg, err := json.Marshal(in)
	require.NoError(t, err)
	res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: []string{"./procwalk", procWalkMarker, string(arg)},
		Timeout: 60 * time.Second, ReadDeny: []string{".env", "secrets/**"}, Network: net})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	var rep procWalkReport
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(res.Stdout)), &rep), res.Stdout)
	return rep
}

// TestSandboxProcHasNoDoor walks /proc inside the sandbox, in each of its
// set-ups (the mount step with the workspace overlay, the step without
// it, bubblewrap making every mount itself), and finds no entry that
// leads out: no link into another mount namespace or to a forbidden
// inode, no writable memory of a process outside the command's wall, no
// environment with the worker's secret, no inherited descriptor. The
// control runs the same walk on the host, where it must find the doors it
// looks for (so an empty report inside is the sandbox's doing).
func TestSandboxProcHasNoDoor(t *testing.T) {
	stateRoot := t.TempDir()
	t.Cleanup(func() { _ = hostfs.RemoveAllWritable(stateRoot) })
	base := newBwrap(t, Config{CacheDir: filepath.Join(stateRoot, "cache")}).(*bwrapSandbox)
	overlayOn(t, base)
	ws, in := procWalkSetup(t, stateRoot)

	t.Run("control: on the host", func(t *testing.T) {
		arg, err := json.Marshal(in)
		require.NoError(t, err)
		cmd := exec.Command(filepath.Join(ws, "procwalk"), procWalkMarker, string(arg))
		cmd.Dir = ws
		out, err := cmd.Output()
		require.NoError(t, err)
		var rep procWalkReport
		require.NoError(t, json.Unmarshal(out, &rep))
		all := strings.Join(rep.Findings, "\n")
		assert.Contains(t, all, "reaches the host workspace", "the walker does not see its own working directory")
		assert.Contains(t, all, "inherited descriptor", "the walker does not see the descriptor it inherited")
		assert.Contains(t, all, "holds the worker's secret", "the walker does not see the worker's environment")
	})
	for _, mode := range []struct {
		name                   string
		step, overlay, network bool
	}{
		{"step and overlay", true, true, false}, {"step, overlay and the network bridge", true, true, true},
		{"step without overlay", true, false, false}, {"bubblewrap's mounts", false, false, false},
		{"bubblewrap's mounts and the network bridge", false, false, true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			run := *base
			run.overlay = mode.overlay
			if !mode.step {
				run.step = nil
			}
			var net netpolicy.Policy
			if mode.network {
				// The bridge is a process of its own in the sandbox,
				// holding the proxy's socket.
				net.AllowedDomains = []string{"example.com"}
			}
			in := in
			if !mode.overlay {
				in.Forbidden = in.Forbidden[1:]
			}
			rep := runProcWalk(t, &run, ws, in, net)
			if mode.network {
				assert.Equal(t, 3, rep.Processes, "the bridge is not in the sandbox")
			}
			assert.Greater(t, rep.Processes, 0, "the walk saw no process")
			assert.Greater(t, rep.Followed, 10, "the walk followed almost nothing: %+v", rep)
			assert.Empty(t, rep.Findings, "doors out of the sandbox")
			t.Logf("%s: %d processes, %d entries, %d followed, %d doors", mode.name, rep.Processes, rep.Links, rep.Followed, len(rep.Findings))
		})
	}
}

// TestSandboxProcEscapes tries the doors /proc once opened, each in every
// spelling a command has (every process, cwd and root, every inherited
// descriptor, memory, environment), in the default set-up (the mount step
// with the overlay). None leads anywhere: the masked secret is not read,
// nothing written lands on the host or in the overlay's upper layer
// unchecked.
func TestSandboxProcEscapes(t *testing.T) {
	stateRoot := t.TempDir()
	t.Cleanup(func() { _ = hostfs.RemoveAllWritable(stateRoot) })
	sb := overlayOn(t, newBwrap(t, Config{CacheDir: filepath.Join(stateRoot, "cache")}).(*bwrapSandbox))
	ws, in := procWalkSetup(t, stateRoot)
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755))
	for _, c := range []struct {
		name, script string
		// planted are workspace paths that must not exist on the host after.
		planted []string
	}{
		{"read the masked secret through another process' cwd or root",
			`for p in /proc/[0-9]*; do cat $p/cwd/.env $p/root` + ws + `/.env $p/task/*/cwd/.env; done 2>&1; true`, nil},
		{"plant a git hook through /proc/1/cwd",
			`mkdir -p /proc/1/cwd/.git/hooks; echo 'touch /tmp/pwned' > /proc/1/cwd/.git/hooks/pre-commit; chmod +x /proc/1/cwd/.git/hooks/pre-commit; true`,
			[]string{".git/hooks/pre-commit"}},
		{"write into the overlay's upper layer through /proc/1/root",
			`echo x > /proc/1/root/.custos-overlay/upper/planted; for p in /proc/[0-9]*; do echo x > $p/root/.custos-overlay/upper/planted2; done 2>/dev/null; true`,
			[]string{"planted", "planted2"}},
		{"read what another process holds open",
			`for f in /proc/[0-9]*/fd/* /proc/[0-9]*/map_files/* /proc/[0-9]*/exe; do [ -p "$f" ] || head -c 64 "$f"; done 2>&1; true`, nil},
		{"read another process' environment",
			`cat /proc/[0-9]*/environ 2>&1 | tr '\0' '\n'; true`, nil},
		{"write another process' memory",
			`for p in /proc/[0-9]*; do [ $p = /proc/$$ ] || { exec 3<>$p/mem && echo "OPENED $p"; } 2>/dev/null; done; true`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash(c.script), Timeout: 30 * time.Second,
				ReadDeny: []string{".env", "secrets/**"}})
			require.NoError(t, err)
			require.False(t, res.Killed, "the attempt hung: %s", res.KillReason)
			out := res.Stdout + res.Stderr
			for _, secret := range []string{"hunter2", in.Secret, "OPENED"} {
				assert.NotContains(t, out, secret, "the command got past the wall")
			}
			assert.NotContains(t, out, "\ns\n", "the host secret's content was read")
			for _, p := range c.planted {
				_, err := os.Lstat(filepath.Join(ws, p))
				assert.ErrorIs(t, err, os.ErrNotExist, "%s reached the host", p)
			}
		})
	}
}
