package mcpservers

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/custos-dev/custos/internal/statedir"
	"github.com/custos-dev/custos/netpolicy"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/sandbox/provision"
	"github.com/custos-dev/custos/sandbox/sysview"
)

const sysviewHome = sysview.Home

// A stdio server keeps what it writes in a home of its own, one per
// workspace and server, in the workspace's directory of custos' state:
//
//	workspaces/<name>-<hash>/mcp-homes/<server>/
//	    home/   the server's HOME (XDG directories, TMPDIR, caches): the only
//	            place it can write, bound read-write in its sandbox
//	    lock    flock, shared while the server runs (gc leaves the home);
//	            its modification time is the home's last use
//	    uv-cache/  a uvx server's layer over the host's uv cache (its lock,
//	            upper/ and work/: provision.UVLayers)
//
// The lock and layers live beside the home, out of the server's reach.

// HomesDir is the directory of a workspace's server homes, under its
// directory in the state (statedir.WorkspaceDirIn).
const HomesDir = "mcp-homes"

// HomeOf is where server's home for workspace ws is, in the state
// directory state.
func HomeOf(state, ws, server string) string {
	return filepath.Join(statedir.WorkspaceDirIn(state, ws), HomesDir, server, "home")
}

// serverHome is a home held for a running server.
type serverHome struct {
	dir  string
	lock *os.File
}

// openHome makes server's home (if new), empties its temporary directory
// and holds it (a shared lock) until release.
func openHome(state, ws, server string) (*serverHome, error) {
	dir := HomeOf(state, ws, server)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("server %q: its home: %w", server, err)
	}
	wsDir := statedir.WorkspaceDirIn(state, ws)
	if _, err := os.Lstat(filepath.Join(wsDir, "workspace")); errors.Is(err, fs.ErrNotExist) {
		// du names the workspace by it, as for its jobs' files.
		_ = os.WriteFile(filepath.Join(wsDir, "workspace"), []byte(ws), 0o600)
	}
	name := filepath.Join(filepath.Dir(dir), "lock")
	lock, err := os.OpenFile(name, os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("server %q: its home's lock: %w", server, err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_SH); err != nil {
		lock.Close()
		return nil, fmt.Errorf("server %q: its home's lock: %w", server, err)
	}
	if _, err := os.Lstat(dir); err != nil {
		// Removed by gc between the making and the lock: made again.
		if err := os.MkdirAll(dir, 0o700); err != nil {
			lock.Close()
			return nil, fmt.Errorf("server %q: its home: %w", server, err)
		}
	}
	h := &serverHome{dir: dir, lock: lock}
	h.touch()
	// Temporary files live as long as one run of the server. RemoveAll
	// removes a link the server left there, never what it points to.
	tmp := filepath.Join(dir, provision.ServerTmp)
	if err := os.RemoveAll(tmp); err != nil {
		h.release()
		return nil, fmt.Errorf("server %q: its temporary directory: %w", server, err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		h.release()
		return nil, fmt.Errorf("server %q: its temporary directory: %w", server, err)
	}
	if err := makeXDG(dir); err != nil {
		h.release()
		return nil, fmt.Errorf("server %q: its home: %w", server, err)
	}
	return h, nil
}

// makeXDG makes the XDG directories in the home, through an os.Root: a
// link the server left there leads nowhere outside it.
func makeXDG(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, d := range []string{".config", ".cache", ".local/share", ".local/state"} {
		if err := root.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// touch marks the home used now.
func (h *serverHome) touch() {
	now := time.Now()
	_ = os.Chtimes(h.lock.Name(), now, now)
}

// release marks the home used and lets gc have it.
func (h *serverHome) release() {
	h.touch()
	_ = h.lock.Close()
}

// inSandbox are the variables whose references (${HOME}, ${TMPDIR}, ...)
// in a stdio server's command, args and env name the server's own
// directories in its sandbox: the worker's values are host paths the
// sandbox does not show.
var inSandbox = map[string]string{
	"HOME":            sysviewHome,
	"TMPDIR":          sysviewHome + "/" + provision.ServerTmp,
	"XDG_CONFIG_HOME": sysviewHome + "/.config",
	"XDG_DATA_HOME":   sysviewHome + "/.local/share",
	"XDG_CACHE_HOME":  sysviewHome + "/.cache",
	"XDG_STATE_HOME":  sysviewHome + "/.local/state",
}

var homeRef = regexp.MustCompile(`\$\{(HOME|TMPDIR|XDG_CONFIG_HOME|XDG_DATA_HOME|XDG_CACHE_HOME|XDG_STATE_HOME)(:-[^}]*)?\}`)

// withHomeRefs is a stdio entry with its references to inSandbox's
// variables replaced by the sandbox's paths (before Expand reads the rest
// from the worker's environment).
func withHomeRefs(s Server) Server {
	sub := func(v string) string {
		return homeRef.ReplaceAllStringFunc(v, func(m string) string {
			return inSandbox[homeRef.FindStringSubmatch(m)[1]]
		})
	}
	out := s
	out.Command = sub(s.Command)
	out.Args = make([]string, len(s.Args))
	for i, a := range s.Args {
		out.Args[i] = sub(a)
	}
	out.Env = make(map[string]string, len(s.Env))
	for k, v := range s.Env {
		out.Env[k] = sub(v)
	}
	return out
}

// stateDir is the pool's state directory, defaulted as a worker's is.
func (p *Pool) stateDir() (string, error) {
	if p.StateDir != "" {
		return p.StateDir, nil
	}
	return statedir.Dir()
}

// serverKillGrace is a stdio server's time between SIGTERM and SIGKILL,
// shorter than a command's: a server is killed when a call on it was
// stopped (a person waits for the model to get the interrupt's text, goal
// 2 s), and the next turn's listing waits for the death (drop). A server
// that handles SIGTERM is gone within milliseconds; one that ignores it
// loses no more than a SIGKILL, which a worker's crash can give it anyway.
const serverKillGrace = 500 * time.Millisecond

// startStdio starts a stdio server in the sandbox: the workspace
// read-only (or through an overlay of its own: writes.go), its own home
// read-write (held until it exits), the network its entry and the job
// allow.
func (p *Pool) startStdio(ws string, srv Server, lim Limits) (*sandbox.Process, error) {
	state, err := p.stateDir()
	if err != nil {
		return nil, err
	}
	home, err := openHome(state, ws, srv.poolName())
	if err != nil {
		return nil, err
	}
	net := lim.Network.Join(netpolicy.Policy{AllowedDomains: srv.Domains})
	req, err := p.startRequest(sandbox.Request{Workspace: ws,
		Argv: append([]string{srv.Command}, srv.Args...), Network: net, Vars: srv.Env,
		ReadDeny: lim.ReadDeny, Home: home.dir, KillGrace: serverKillGrace}, srv, lim)
	if err != nil {
		home.release()
		return nil, err
	}
	proc, err := sandbox.Start(context.Background(), p.Sandbox, req)
	started(proc, req, err)
	if err != nil {
		home.release()
		return nil, err
	}
	go func() {
		<-proc.Done()
		home.release()
	}()
	return proc, nil
}
