package sysview

import (
	"fmt"
	"os"
	"strings"

	"github.com/custos-dev/custos/sandbox/mount"
)

// Who the command is inside the sandbox, and where its home and temporary
// files are: the same for every run, whatever the worker's user.
const (
	// UID is the unprivileged uid and gid the command runs as inside
	// the bubblewrap user namespace, whatever uid the worker has.
	UID = 1000
	// Tmp is the sandbox's own /tmp (a tmpfs).
	Tmp = "/tmp"
	// Home is the command's home, in its own /tmp.
	Home = "/tmp/home"
)

// etcAllow are the /etc entries programs need; everything else in /etc
// (shadow, ssh keys, the worker's configs) is absent. passwd and group are
// generated (see identityFiles), not bound.
var etcAllow = []string{
	"ssl", "ca-certificates", "ca-certificates.conf", "pki", "crypto-policies",
	"resolv.conf", "hosts", "host.conf", "nsswitch.conf", "gai.conf", "protocols", "services", "networks",
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives",
	"localtime", "timezone", "locale.alias", "locale.conf", "os-release", "debian_version",
	"profile", "bash.bashrc", "inputrc", "mime.types", "magic", "gitconfig",
	"java-17-openjdk", "python3", "perl",
}

// rootEntries are the top-level system directories: bound read-only when they
// are directories, recreated as symlinks when the host has them as symlinks
// (merged-/usr systems).
var RootEntries = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// Identity returns minimal passwd/group files naming the sandbox user, so
// tools that look the user up work, and the host's user list stays hidden.
func Identity() (passwd, group string) {
	passwd = fmt.Sprintf("root:x:0:0:root:/nonexistent:/usr/sbin/nologin\ncustos:x:%d:%d:custos sandbox:%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", UID, UID, Home)
	group = fmt.Sprintf("root:x:0:\ncustos:x:%d:\nnogroup:x:65534:\n", UID)
	return passwd, group
}

// Mounts probes the host for the system directories and /etc
// entries the sandbox shows (rootEntries, etcAllow), with the /etc files
// folded into one view (see systemMountsFor).
func Mounts() []mount.Mount {
	ms, _ := MountsFor("")
	return ms
}

// Probe returns the read-only mounts of the host's system: each root
// that is a directory is bound read-only, one that is a symbolic link
// (merged /usr: /bin -> usr/bin) is recreated as the same link, anything
// else or missing is left out; each etc path that exists is bound
// read-only (as its target when it is a link; a dangling link is left out).
func Probe(roots, etc []string) []mount.Mount {
	ms, _ := probeSystemInfo(roots, etc)
	return ms
}

// probeSystemInfo is probeSystem, and the stat (links followed) of each etc
// path it binds.
func probeSystemInfo(roots, etc []string) ([]mount.Mount, map[string]os.FileInfo) {
	var ms []mount.Mount
	for _, p := range roots {
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink(p); err == nil {
				ms = append(ms, mount.Mount{Kind: mount.Symlink, Src: t, Dst: p})
			}
		case fi.IsDir():
			ms = append(ms, mount.Mount{Kind: mount.ROBind, Src: p, Dst: p})
		}
	}
	infos := make(map[string]os.FileInfo, len(etc))
	for _, p := range etc {
		if fi, err := os.Stat(p); err == nil { // Stat: a dangling symlink is skipped
			ms = append(ms, mount.Mount{Kind: mount.ROBind, Src: p, Dst: p})
			infos[p] = fi
		}
	}
	return ms, infos
}

// Path is the PATH inside the bwrap sandbox: only system locations that
// are actually mounted there (the Go toolchain lives under /usr/local/go).
const Path = "/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// HostPath is the fallback's PATH: the worker's own (the command runs on the
// host, so the host's tools are what it can use).
func HostPath() string {
	if p := os.Getenv("PATH"); p != "" {
		return p
	}
	return strings.TrimPrefix(Path, "/usr/local/go/bin:")
}
