package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"

	"github.com/custos-dev/custos/sandbox/hostfs"
)

// The seccomp filter is the second wall: bubblewrap installs it just before
// it execs the command (after its own mount and namespace calls), and every
// process of the command inherits it. It refuses, with EPERM, the system
// calls a build or a test never needs and kernel exploits love. Codex's
// linux-sandbox (seccomp.rs) is the anchor: ptrace, process_vm_*, io_uring_*
// and AF_VSOCK sockets are denied there too.
//
// Everything else is allowed: this is a deny list on top of namespaces,
// dropped capabilities and a read-only root, not an allow list.

// seccompDenied are refused with EPERM, unconditionally.
var seccompDenied = []string{
	// Reading or writing another process: debuggers are not part of a build.
	"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd",
	// The kernel keyring: shared across the sandbox boundary, and a
	// classic source of kernel bugs.
	"keyctl", "add_key", "request_key",
	// In-kernel programs and profiling.
	"bpf", "perf_event_open",
	// userfaultfd stalls the kernel on a page fault: the standard tool for
	// winning kernel races.
	"userfaultfd",
	// io_uring performs I/O (sockets included) without the system calls
	// this filter sees, and has had a long run of kernel bugs.
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	// Replacing the kernel or loading code into it.
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	// Mounts, old and new API, and changing the root: the mount layout is
	// what keeps protected paths read-only.
	"mount", "umount2", "pivot_root", "chroot",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
	// New namespaces (where the command would be root again) or joining
	// other ones. clone with namespace flags is below.
	"unshare", "setns",
	// Host-wide state.
	"swapon", "swapoff", "reboot",
	// Opening a file by handle walks past the mount layout ("shocker").
	"open_by_handle_at",
	// The kernel log: kernel addresses an exploit needs.
	"syslog",
}

// seccompDeniedAMD64 exist only on x86-64.
var seccompDeniedAMD64 = []string{
	// Direct I/O port access.
	"iopl", "ioperm",
}

// setIDModeArgs are the system calls that can give a file a set-uid or
// set-gid bit, with the index of their mode argument. A command may not
// make one (EPERM): a set-uid file it leaves in the workspace belongs on
// the host to the worker's user (root, when the worker runs as root), and
// runs with that user's rights for whoever starts it there. mkdir is not
// here: the kernel drops both bits from its mode. The merge of the
// overlay's upper layer strips them again (a directory made in a set-gid
// one inherits the bit), and says so.
var setIDModeArgs = []struct {
	name string
	arg  uint32
}{
	{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2},
	{"creat", 1}, {"open", 2}, {"openat", 3},
	{"mknod", 1}, {"mknodat", 2},
}

const (
	// cloneNamespaceFlags are CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS |
	// CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET: clone with
	// any of them is unshare by another name.
	cloneNamespaceFlags = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
	afVsock             = 40 // AF_VSOCK: host services no network namespace separates
	// x32SyscallBit marks x32 ABI system calls on x86-64.
	x32SyscallBit = 0x40000000
)

var (
	seccompOnce  sync.Once
	seccompBytes []byte
	seccompErr   error
)

// seccompProgram returns the filter as the raw struct sock_filter array
// bubblewrap's --seccomp reads, built once.
func seccompProgram() ([]byte, error) {
	seccompOnce.Do(func() { seccompBytes, seccompErr = buildSeccomp() })
	return seccompBytes, seccompErr
}

// seccompFile returns a pipe holding the filter, for --seccomp FD.
func seccompFile() (*os.File, error) {
	prog, err := seccompProgram()
	if err != nil {
		return nil, err
	}
	return dataPipe(string(prog))
}

// seccompArgs is the bubblewrap option that installs the filter read from fd.
func seccompArgs(fd int) []string {
	return []string{"--seccomp", fmt.Sprint(fd)}
}

// seccompDeniedNames lists what buildSeccomp denies unconditionally on
// goarch, only names the architecture has.
func seccompDeniedNames(info *arch.Info, goarch string) []string {
	names := append([]string(nil), seccompDenied...)
	if goarch == "amd64" {
		names = append(names, seccompDeniedAMD64...)
	}
	var out []string
	for _, n := range names {
		// Every name exists on amd64 (a test pins it); on other
		// architectures a call that does not exist needs no rule.
		if _, ok := info.SyscallNames[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// buildSeccomp assembles the filter for the running architecture (the
// library takes its syscall table from runtime.GOARCH).
func buildSeccomp() ([]byte, error) {
	goarch := runtime.GOARCH
	info, err := arch.GetInfo(goarch)
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %w", err)
	}
	eperm := seccomp.ActionErrno | seccomp.Action(syscall.EPERM)
	conditional := []seccomp.NameWithConditions{
		{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: cloneFlagsArg(goarch), Operation: seccomp.BitsSet, Value: cloneNamespaceFlags}}},
		{Name: "socket", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: afVsock}}},
		{Name: "socketpair", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: afVsock}}},
	}
	for _, c := range setIDModeArgs {
		if _, ok := info.SyscallNames[c.name]; ok {
			conditional = append(conditional, seccomp.NameWithConditions{Name: c.name,
				Conditions: seccomp.ArgumentConditions{{Argument: c.arg, Operation: seccomp.BitsSet, Value: hostfs.SetIDBits}}})
		}
	}
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Names: seccompDeniedNames(info, goarch), Action: eperm},
			{NamesWithCondtions: conditional, Action: eperm},
			// clone3 and openat2 pass their flags and mode in memory a
			// filter cannot read, so they answer "not implemented": libc
			// and Go then fall back to clone and openat, whose arguments
			// the rules above check (what Docker and Flatpak do for
			// clone3).
			{Names: []string{"clone3", "openat2"}, Action: seccomp.ActionErrno | seccomp.Action(syscall.ENOSYS)},
		},
	}
	body, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %w", err)
	}
	// The library lets a foreign architecture's calls through (its arch
	// check jumps to the default action). Refuse them first: 32-bit entry
	// on x86-64 (int 0x80) and the x32 ABI reach the same kernel with
	// other numbers, past every rule written for the native ones.
	ret := bpf.RetConstant{Val: uint32(eperm)}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		ret,
	}
	if goarch == "amd64" {
		prog = append(prog,
			bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipFalse: 1},
			ret,
		)
	}
	prog = append(prog, body...)
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %w", err)
	}
	// struct sock_filter { u16 code; u8 jt; u8 jf; u32 k; } in host order.
	out := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		out = binary.NativeEndian.AppendUint16(out, r.Op)
		out = append(out, r.Jt, r.Jf)
		out = binary.NativeEndian.AppendUint32(out, r.K)
	}
	return out, nil
}

// cloneFlagsArg is the index of clone's flags argument: the first
// everywhere this package runs, but the second on s390x.
func cloneFlagsArg(goarch string) uint32 {
	if goarch == "s390x" {
		return 1
	}
	return 0
}
