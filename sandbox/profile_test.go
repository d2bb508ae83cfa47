package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/netpolicy"
	"github.com/custos-dev/custos/sandbox/masks"
	"github.com/custos-dev/custos/sandbox/mount"
	"github.com/custos-dev/custos/sandbox/protect"
	"github.com/custos-dev/custos/sandbox/sysview"
)

// cat joins lists.
func cat[T any](parts ...[]T) []T {
	var out []T
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// The argument vector is a pure function of the profile: each case states
// the exact vector bubblewrap gets.
func TestBwrapArgs(t *testing.T) {
	base := func() bwrapProfile {
		return bwrapProfile{
			Workspace: "/w",
			TmpSize:   1 << 20,
			System: []mount.Mount{
				{Kind: mount.ROBind, Src: "/usr", Dst: "/usr"},
				{Kind: mount.Symlink, Src: "usr/bin", Dst: "/bin"},
				{Kind: mount.ROBind, Src: "/etc/ssl", Dst: "/etc/ssl"},
			},
			Seccomp: true,
			Command: []string{"/usr/bin/prlimit", "--core=0", "--", "make", "test"},
			Env:     []string{"PATH=/usr/bin", "HOME=/tmp/home"},
		}
	}
	head := []string{
		"--die-with-parent", "--new-session",
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--unshare-net",
		"--uid", "1000", "--gid", "1000",
		"--hostname", "custos-sandbox",
		"--disable-userns", "--cap-drop", "ALL",
		"--json-status-fd", "3",
		"--ro-bind", "/usr", "/usr",
		"--symlink", "usr/bin", "/bin",
		"--ro-bind", "/etc/ssl", "/etc/ssl",
		"--perms", "0644", "--ro-bind-data", "4", "/etc/passwd",
		"--perms", "0644", "--ro-bind-data", "5", "/etc/group",
		"--proc", "/proc",
		"--dev", "/dev",
		"--size", "1048576", "--tmpfs", "/tmp",
		"--dir", "/tmp/home",
		"--dir", "/tmp/go",
	}
	ws := []string{"--bind", "/w", "/w"}
	rootRO := []string{"--remount-ro", "/", "--chdir", "/w"}
	seccomp := []string{"--seccomp", "6"}
	command := []string{"--", "/usr/bin/prlimit", "--core=0", "--", "make", "test"}

	proxy := &proxyMounts{Helper: "/opt/custos/worker", Socket: "/tmp/custos-proxy-1/proxy.sock"}
	proxyMnt := []string{
		"--ro-bind", "/opt/custos/worker", "/run/custos/custos-sandbox-init",
		"--bind", "/tmp/custos-proxy-1/proxy.sock", "/run/custos/proxy.sock",
	}
	proxyCommand := []string{"--",
		"/run/custos/custos-sandbox-init", "--listen", "127.0.0.1:3128", "--socket", "/run/custos/proxy.sock", "--",
		"/usr/bin/prlimit", "--core=0", "--", "make", "test"}

	// A protected file and directory present, one missing, one below a
	// directory that is pinned.
	protected := []mount.Mount{
		{Kind: mount.ROBind, Src: "/w/.gitmodules", Dst: "/w/.gitmodules"},
		{Kind: mount.ROBind, Src: "/w/.vscode", Dst: "/w/.vscode"},
		{Kind: mount.Empty, Src: "", Dst: "/w/.custos"},
		{Kind: mount.Bind, Src: "/w/sub", Dst: "/w/sub"},
		{Kind: mount.ROBind, Src: "/w/sub/.claude", Dst: "/w/sub/.claude"},
	}
	protectedArgs := []string{
		"--ro-bind", "/w/.gitmodules", "/w/.gitmodules",
		"--ro-bind", "/w/.vscode", "/w/.vscode",
		"--perms", "0555", "--tmpfs", "/w/.custos",
		"--bind", "/w/sub", "/w/sub",
		"--ro-bind", "/w/sub/.claude", "/w/sub/.claude",
	}
	src := masks.Sources{HideFile: "/S/file", HideDir: "/S/dir", Empty: "/S/empty"}
	readDeny := masks.Plan{Workspace: "/w", Pins: []string{"/w/a"}, Masks: []masks.Mask{
		{Path: "/w/a/.env", Kind: masks.Hide},
		{Path: "/w/keys", Kind: masks.Hide, Dir: true},
		{Path: "/w/new", Kind: masks.Hide, Missing: true},
	}}
	readDenyPins := []string{"--bind", "/w/a", "/w/a"}
	readDenyMasks := []string{
		"--ro-bind", "/S/file", "/w/a/.env",
		"--ro-bind", "/S/dir", "/w/keys",
		"--ro-bind", "/S/empty", "/w/new",
	}
	editDeny := masks.Plan{Workspace: "/w", Masks: []masks.Mask{
		{Path: "/w/go.mod", Kind: masks.ReadOnly},
		{Path: "/w/vendor", Kind: masks.ReadOnly, Dir: true},
		{Path: "/w/gen", Kind: masks.ReadOnly, Dir: true, Missing: true},
	}}
	editDenyMasks := []string{
		"--ro-bind", "/w/go.mod", "/w/go.mod",
		"--ro-bind", "/w/vendor", "/w/vendor",
		"--ro-bind", "/S/empty", "/w/gen",
	}

	tests := []struct {
		name    string
		profile func(p *bwrapProfile)
		want    []string
	}{
		{"no network", func(p *bwrapProfile) {},
			cat(head, ws, rootRO, seccomp, command)},
		{"proxy network: socket and helper mounted, command behind the helper",
			func(p *bwrapProfile) { p.Proxy = proxy },
			cat(head, proxyMnt, ws, rootRO, seccomp, proxyCommand)},
		{"protected file, directory, missing path, pinned parent",
			func(p *bwrapProfile) { p.Protected = protected },
			cat(head, ws, protectedArgs, rootRO, seccomp, command)},
		{"read deny: pins after the workspace, masks last",
			func(p *bwrapProfile) { p.Masks, p.MaskSources = readDeny, src },
			cat(head, ws, readDenyPins, rootRO, readDenyMasks, seccomp, command)},
		{"edit deny: bound onto themselves, missing ones held empty",
			func(p *bwrapProfile) { p.Masks, p.MaskSources = editDeny, src },
			cat(head, ws, rootRO, editDenyMasks, seccomp, command)},
		{"masks and protected paths: pins before the protected mounts",
			func(p *bwrapProfile) { p.Protected, p.Masks, p.MaskSources = protected, readDeny, src },
			cat(head, ws, readDenyPins, protectedArgs, rootRO, readDenyMasks, seccomp, command)},
		{"no seccomp",
			func(p *bwrapProfile) { p.Seccomp = false },
			cat(head, ws, rootRO, command)},
		{"environment stays out of the arguments",
			func(p *bwrapProfile) { p.Env = append(p.Env, "CUSTOS_X=1", "HTTP_PROXY=http://127.0.0.1:3128") },
			cat(head, ws, rootRO, seccomp, command)},
		{"everything",
			func(p *bwrapProfile) {
				p.Proxy, p.Protected, p.Masks, p.MaskSources = proxy, protected, readDeny, src
			},
			cat(head, proxyMnt, ws, readDenyPins, protectedArgs, rootRO, readDenyMasks, seccomp, proxyCommand)},
		{"without the step, custos' PID 1 in bubblewrap's init's place",
			func(p *bwrapProfile) { p.Pid1 = "/opt/custos/worker" },
			cat(head, []string{"--ro-bind", "/opt/custos/worker", "/run/custos/custos-sandbox-init"}, ws, rootRO, seccomp,
				[]string{"--as-pid-1", "--", "/run/custos/custos-sandbox-init", "custos-sandbox-pid1"}, command)},
		{"custos' PID 1 and the proxy: one binary, PID 1 in front of the bridge",
			func(p *bwrapProfile) { p.Proxy, p.Pid1 = proxy, "/opt/custos/worker" },
			cat(head, proxyMnt, ws, rootRO, seccomp,
				[]string{"--as-pid-1", "--", "/run/custos/custos-sandbox-init", "custos-sandbox-pid1"}, proxyCommand)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			tc.profile(&p)
			assert.Equal(t, tc.want, bwrapArgs(p))
		})
	}
}

// With the mount step, the step is the sandbox's PID 1 (--as-pid-1), holds
// the capabilities it drops before the command, and runs the command
// behind itself.
func TestBwrapArgsStep(t *testing.T) {
	got := bwrapArgs(bwrapProfile{Workspace: "/w", TmpSize: 5, Step: true, Seccomp: true, Command: []string{"make"}})
	i := slices.Index(got, "--cap-drop")
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, []string{"--cap-drop", "ALL", "--as-pid-1", "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP", "--json-status-fd"}, got[i:i+8])
	assert.Equal(t, []string{"--chdir", "/w", "--", "/proc/self/fd/9", "custos-sandbox-mounts", "7", "8", "6", "9", "--", "make"}, got[len(got)-11:])
	assert.NotContains(t, got, "--remount-ro", "the step makes the root read-only itself")
}

// The tmpfs size and the workspace come from the profile (not from the
// base case's constants).
func TestBwrapArgsWorkspaceAndTmpSize(t *testing.T) {
	got := bwrapArgs(bwrapProfile{Workspace: "/tmp/x y", TmpSize: 5, Command: []string{"true"}})
	assert.Equal(t, []string{
		"--die-with-parent", "--new-session",
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--unshare-net",
		"--uid", "1000", "--gid", "1000",
		"--hostname", "custos-sandbox",
		"--disable-userns", "--cap-drop", "ALL",
		"--json-status-fd", "3",
		"--perms", "0644", "--ro-bind-data", "4", "/etc/passwd",
		"--perms", "0644", "--ro-bind-data", "5", "/etc/group",
		"--proc", "/proc",
		"--dev", "/dev",
		"--size", "5", "--tmpfs", "/tmp",
		"--dir", "/tmp/home",
		"--dir", "/tmp/go",
		"--bind", "/tmp/x y", "/tmp/x y",
		"--remount-ro", "/", "--chdir", "/tmp/x y",
		"--", "true",
	}, got)
}

// probeSystem binds directories, recreates symbolic links, and leaves out
// what is missing, not a directory (roots) or a dangling link (/etc).
func TestProbeSystem(t *testing.T) {
	d := t.TempDir()
	mk := func(p string) string { return filepath.Join(d, p) }
	require.NoError(t, os.Mkdir(mk("dir"), 0o755))
	require.NoError(t, os.Symlink("usr/bin", mk("link")))
	require.NoError(t, os.WriteFile(mk("file"), nil, 0o644))
	require.NoError(t, os.WriteFile(mk("etc-file"), nil, 0o644))
	require.NoError(t, os.Symlink("etc-file", mk("etc-link")))
	require.NoError(t, os.Symlink("nowhere", mk("etc-dangling")))
	require.NoError(t, os.Mkdir(mk("etc-dir"), 0o755))

	got := sysview.Probe(
		[]string{mk("dir"), mk("link"), mk("file"), mk("missing")},
		[]string{mk("etc-file"), mk("etc-link"), mk("etc-dangling"), mk("etc-dir"), mk("etc-missing")},
	)
	assert.Equal(t, []mount.Mount{
		{Kind: mount.ROBind, Src: mk("dir"), Dst: mk("dir")},
		{Kind: mount.Symlink, Src: "usr/bin", Dst: mk("link")},
		{Kind: mount.ROBind, Src: mk("etc-file"), Dst: mk("etc-file")},
		{Kind: mount.ROBind, Src: mk("etc-link"), Dst: mk("etc-link")},
		{Kind: mount.ROBind, Src: mk("etc-dir"), Dst: mk("etc-dir")},
	}, got)
}

// planProfile gathers what the file system holds: protected paths present
// (file, directory) or missing, deny rules' matches, and the environment;
// what it set up on the host is undone by the cleanups.
func TestPlanProfile(t *testing.T) {
	t.Setenv("CUSTOS_TEST_PROFILE_ENV", "yes")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("LC_ALL", "")
	t.Setenv("TERM", "xterm")
	ws := mustEval(t, t.TempDir())
	writeFile(t, filepath.Join(ws, ".gitmodules"), "")
	writeFile(t, filepath.Join(ws, ".vscode", "settings.json"), "{}")
	writeFile(t, filepath.Join(ws, "sub", ".claude", "settings.json"), "{}")
	writeFile(t, filepath.Join(ws, "sub", ".env"), "SECRET=1\n")
	b := &bwrapSandbox{cfg: Config{TmpSizeBytes: 7 << 20}.withDefaults(), bwrap: "/usr/bin/bwrap", prlimit: "/usr/bin/prlimit"}
	req := Request{Workspace: ws, Argv: []string{"make"}, Env: []string{"CUSTOS_TEST_PROFILE_ENV"},
		ReadDeny: []string{".env", "newdir/**"}}

	var undo cleanups
	p, err := b.planProfile(ws, req, &undo)
	require.NoError(t, err)
	at := func(rel string) string { return filepath.Join(ws, rel) }
	assert.Equal(t, ws, p.Workspace)
	assert.Equal(t, int64(7<<20), p.TmpSize)
	assert.Equal(t, sysview.Mounts(), p.System)
	assert.Nil(t, p.Proxy)
	assert.True(t, p.Seccomp)
	assert.Equal(t, []string{"/usr/bin/prlimit", "--core=0", "--cpu=600:601", "--as=4294967296", "--fsize=1073741824", "--nproc=512", "--", "make"}, p.Command)

	// Breadth first: the root's entries, the root's placeholders, then sub/.
	var placeholders []mount.Mount
	for _, n := range []string{".git", ".idea", ".zed", ".devcontainer", ".claude", ".cursor", ".codex", ".gemini", ".custos",
		".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout",
		".gitconfig", ".ripgreprc", ".mcp.json", ".claude.json"} {
		placeholders = append(placeholders, mount.Mount{Kind: mount.Empty, Src: "", Dst: at(n)})
	}
	assert.Equal(t, cat(
		[]mount.Mount{
			{Kind: mount.ROBind, Src: at(".gitmodules"), Dst: at(".gitmodules")},
			{Kind: mount.ROBind, Src: at(".vscode"), Dst: at(".vscode")},
		},
		placeholders,
		[]mount.Mount{
			{Kind: mount.Bind, Src: at("sub"), Dst: at("sub")},
			{Kind: mount.ROBind, Src: at("sub/.claude"), Dst: at("sub/.claude")},
		},
	), p.Protected)

	assert.Equal(t, []string{at("sub")}, p.Masks.Pins)
	// A literal rule holds its name at the root when it is missing there.
	assert.Equal(t, []masks.Mask{
		{Path: at(".env"), Kind: masks.Hide, Missing: true, Rule: ".env"},
		{Path: at("newdir"), Kind: masks.Hide, Dir: true, Missing: true, Rule: "newdir/**"},
		{Path: at("sub/.env"), Kind: masks.Hide, Rule: ".env"},
	}, p.Masks.Masks)
	assert.DirExists(t, at(".env"), "placeholder of a missing denied name")
	assert.DirExists(t, at("newdir"), "placeholder of a missing denied directory")
	assert.FileExists(t, p.MaskSources.HideFile)

	env := slices.Sorted(slices.Values(p.Env))
	assert.Equal(t, []string{
		"CUSTOS_TEST_PROFILE_ENV=yes",
		"GOCACHE=/tmp/go-build", "GOPATH=/tmp/go", "GOPROXY=off", "GOTELEMETRY=off", "GOTOOLCHAIN=local",
		"HOME=/tmp/home", "LANG=C.UTF-8", "LOGNAME=custos", "PATH=" + sysview.Path,
		"TERM=xterm", "TMPDIR=/tmp", "USER=custos",
	}, env)

	undo.run()
	assert.Equal(t, []string{".gitmodules", ".vscode", "sub"}, dirNames(t, ws), "placeholders removed")
	assert.NoFileExists(t, p.MaskSources.HideFile)
}

// With allowed domains, planProfile starts the proxy, names its socket and
// the helper, and points the command's proxy variables at the bridge;
// the cleanups stop the proxy.
func TestPlanProfileProxy(t *testing.T) {
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("LC_ALL", "")
	t.Setenv("TERM", "xterm")
	ws := mustEval(t, t.TempDir())
	b := &bwrapSandbox{cfg: Config{}.withDefaults(), bwrap: "/usr/bin/bwrap", prlimit: "/usr/bin/prlimit"}
	req := Request{Workspace: ws, Argv: []string{"true"}, Network: netpolicy.Policy{AllowedDomains: []string{"example.com"}}}

	var undo cleanups
	defer undo.run()
	p, err := b.planProfile(ws, req, &undo)
	require.NoError(t, err)
	helper, err := helperExecutable()
	require.NoError(t, err)
	require.NotNil(t, p.Proxy)
	assert.Equal(t, helper, p.Proxy.Helper)
	assert.True(t, strings.HasSuffix(p.Proxy.Socket, "/proxy.sock"), p.Proxy.Socket)
	fi, err := os.Stat(p.Proxy.Socket)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket, fi.Mode().Type())

	env := slices.Sorted(slices.Values(p.Env))
	assert.Equal(t, []string{
		"ALL_PROXY=socks5h://127.0.0.1:3128",
		"GOCACHE=/tmp/go-build", "GOPATH=/tmp/go", "GOPROXY=off", "GOTELEMETRY=off", "GOTOOLCHAIN=local",
		"HOME=/tmp/home",
		"HTTPS_PROXY=http://127.0.0.1:3128", "HTTP_PROXY=http://127.0.0.1:3128",
		"LANG=C.UTF-8", "LOGNAME=custos", "NO_PROXY=", "PATH=" + sysview.Path,
		"TERM=xterm", "TMPDIR=/tmp", "USER=custos",
		"all_proxy=socks5h://127.0.0.1:3128",
		"http_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128",
		"no_proxy=",
	}, env)

	undo.run()
	_, err = os.Stat(p.Proxy.Socket)
	assert.True(t, os.IsNotExist(err), "the proxy's socket is gone: %v", err)
}

// A workspace whose protected paths cannot be protected fails planning,
// and what was set up before (the masks' placeholders) is undone all the
// same.
func TestPlanProfileRefusalUndoes(t *testing.T) {
	ws := mustEval(t, t.TempDir())
	require.NoError(t, os.Symlink("elsewhere", filepath.Join(ws, ".vscode")))
	b := &bwrapSandbox{cfg: Config{}.withDefaults(), bwrap: "/usr/bin/bwrap", prlimit: "/usr/bin/prlimit"}
	var undo cleanups
	_, err := b.planProfile(ws, Request{Workspace: ws, Argv: []string{"true"}, ReadDeny: []string{"newdir/**"}}, &undo)
	require.ErrorIs(t, err, protect.ErrUnprotectable)
	assert.DirExists(t, filepath.Join(ws, "newdir"))
	undo.run()
	assert.NoDirExists(t, filepath.Join(ws, "newdir"))
}
