//go:build linux

package hostguard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/overlaymerge"
)

// viewCheckTimeout bounds the helper: the check's walk is bounded by its
// entry budget, and git's config parsing by its own timeout.
const viewCheckTimeout = 2 * time.Minute

// viewCheck runs the check of g on the merged view of its overlay, in the
// helper (see overlay.go), and returns what it neutralised.
func viewCheck(g *Guard) (viewResult, error) {
	var out viewResult
	if !hostCheckWired.Load() {
		return out, errors.New("this binary's main() does not call sandbox.MaybeRunHelper()")
	}
	exe, err := os.Executable()
	if err != nil {
		return out, fmt.Errorf("own executable: %w", err)
	}
	in, err := json.Marshal(viewRequest{Before: pendingOf(g.before, ""), Overlay: g.overlay, QRoot: g.qroot, Seeds: g.seeds})
	if err != nil {
		return out, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), viewCheckTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Args = []string{HelperHostCheckName}
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// git, which strips config, from where the worker finds it.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		// Root of its user namespace, as this user outside: what it writes
		// through the overlay is this user's, as the command's is.
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}
	if err := cmd.Run(); err != nil {
		return out, fmt.Errorf("the check's helper failed: %w: %s", err, hostfs.TrimForLog(strings.TrimSpace(stderr.String())))
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return out, fmt.Errorf("the check's helper answered %q: %w", hostfs.TrimForLog(stdout.String()), err)
	}
	return out, nil
}

// RunHelper is the helper: in its own user and mount namespaces
// (viewCheck made them), it mounts the overlay at the workspace and runs
// the check there.
func RunHelper(stdin io.Reader, stdout io.Writer) int {
	var req viewRequest
	if err := json.NewDecoder(stdin).Decode(&req); err != nil || req.Before.WS == "" || req.Overlay == "" {
		fmt.Fprintln(os.Stderr, HelperHostCheckName+": malformed request:", err)
		return 2
	}
	// Nothing mounted here reaches the worker's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fmt.Fprintln(os.Stderr, HelperHostCheckName+": make the mounts private:", err)
		return 1
	}
	if err := overlayClean(req.Overlay); err != nil {
		fmt.Fprintln(os.Stderr, HelperHostCheckName+":", err)
		return 1
	}
	// The lower layer, before the overlay covers it: see viewLister.
	lower, err := unix.Open(req.Before.WS, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, HelperHostCheckName+": open the workspace:", err)
		return 1
	}
	defer unix.Close(lower)
	if err := mountOverlay(req.Before.WS, filepath.Join(req.Overlay, "upper"), filepath.Join(req.Overlay, "work")); err != nil {
		fmt.Fprintln(os.Stderr, HelperHostCheckName+":", err)
		return 1
	}
	b, err := json.Marshal(runViewCheck(req, viewLister(filepath.Join(req.Overlay, "upper"), lower)))
	if err == nil {
		_, err = stdout.Write(b)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, HelperHostCheckName+":", err)
		return 1
	}
	return 0
}

// mountOverlay mounts an overlay at ws with ws as its lower layer, as the
// mount step does (mountinit_cgo.go).
func mountOverlay(ws, upper, work string) error {
	fsfd, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("create the overlay: %w", err)
	}
	defer unix.Close(fsfd)
	lower := strings.NewReplacer(`\`, `\\`, `:`, `\:`, `,`, `\,`).Replace(ws)
	for _, kv := range [][2]string{{"lowerdir", lower}, {"upperdir", upper}, {"workdir", work}} {
		if err := unix.FsconfigSetString(fsfd, kv[0], kv[1]); err != nil {
			return fmt.Errorf("configure the overlay's %s: %w", kv[0], err)
		}
	}
	for _, flag := range []string{"userxattr", "volatile"} { // volatile: as the mount step's
		if err := unix.FsconfigSetFlag(fsfd, flag); err != nil {
			return fmt.Errorf("configure the overlay (%s): %w", flag, err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return fmt.Errorf("create the overlay: %w", err)
	}
	m, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return fmt.Errorf("mount the overlay: %w", err)
	}
	defer unix.Close(m)
	if err := unix.MoveMount(m, "", unix.AT_FDCWD, ws, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("mount the overlay at %s: %w", ws, err)
	}
	return nil
}

// viewLister lists the merged view's directories for the check's walk. A
// directory the upper layer does not hold is exactly the lower layer's (an
// opaque or removed ancestor would have hidden it from the walk), so it is
// read there, through lower (the workspace's descriptor from before the
// overlay covered it): a fresh overlay builds an inode for every entry it
// looks up, three times the cost of a warm ext4 lookup, and the walk looks
// up every directory of the workspace. Those the upper layer holds are
// read through the overlay.
func viewLister(upper string, lower int) func(rel, abs string) ([]hostfs.DirEnt, error) {
	return func(rel, abs string) ([]hostfs.DirEnt, error) {
		fi, err := os.Lstat(filepath.Join(upper, rel))
		switch {
		case err == nil && fi.IsDir():
		case errors.Is(err, os.ErrNotExist):
			abs = filepath.Join("/proc/self/fd", fmt.Sprint(lower), rel)
		case err == nil:
			return nil, nil // a whiteout or a file: no directory in the view
		default:
			return nil, err
		}
		des, err := os.ReadDir(abs)
		if err != nil {
			return nil, err
		}
		return hostfs.DirEntsOf(des), nil
	}
}

// overlayOpaque reports whether the upper directory dir is opaque, and
// fails closed (opaque) when its attribute cannot be read.
func overlayOpaque(dir string) bool {
	var b [2]byte
	n, err := unix.Lgetxattr(dir, overlaymerge.OpaqueXattr, b[:])
	if errors.Is(err, unix.ENODATA) {
		return false
	}
	return err != nil || n != 1 || b[0] == 'y'
}
