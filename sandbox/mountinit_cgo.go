//go:build linux && cgo

package sandbox

// The in-sandbox mount step (see mountinit.go) is C, run by the ELF
// constructor below before the Go runtime starts: re-executing this
// binary as a Go program would cost its package initialisation, some 45 ms
// for the worker, where the constructor costs the exec alone (about half a
// millisecond). runc's nsexec works the same way. The constructor returns
// at once unless argv[1] is the marker, so every other start of the binary
// is unchanged.

/*
#cgo CFLAGS: -O2 -Wall
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

// The new mount API's numbers are the same on every architecture Go
// supports on Linux; older C headers may not name them.
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig 431
#endif
#ifndef SYS_fsmount
#define SYS_fsmount 432
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

#define CM_OPEN_TREE_CLONE 1
#define CM_AT_RECURSIVE 0x8000
#define CM_MOVE_MOUNT_F_EMPTY_PATH 0x4
#define CM_MOVE_MOUNT_T_EMPTY_PATH 0x40
#define CM_FSOPEN_CLOEXEC 1
#define CM_FSCONFIG_SET_FLAG 0
#define CM_FSCONFIG_SET_STRING 1
#define CM_FSCONFIG_CMD_CREATE 6
#define CM_FSMOUNT_CLOEXEC 1
#define CM_MOUNT_ATTR_RDONLY 0x1
#define CM_MOUNT_ATTR_NOSUID 0x2
#define CM_MOUNT_ATTR_NODEV 0x4
#define CM_MOUNT_ATTR_NOEXEC 0x8

struct cm_mount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

static int cm_status = 2;

// cm_fail reports why the step failed on the status pipe (the host reads
// it: the command did not run) and exits.
static void cm_fail(const char *what, const char *path) {
	int e = errno;
	dprintf(cm_status, "%s%s%s: %s", what, path ? " " : "", path ? path : "", strerror(e));
	_exit(125);
}

static void cm_failmsg(const char *msg) {
	dprintf(cm_status, "%s", msg);
	_exit(125);
}

// cm_read reads fd to its end (at most max bytes) into a NUL-terminated
// buffer.
static char *cm_read(int fd, size_t max, size_t *len, const char *what) {
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	if (!buf) cm_fail("allocate", what);
	for (;;) {
		if (n == cap) {
			if (cap >= max) { errno = EFBIG; cm_fail("read", what); }
			cap *= 2;
			buf = realloc(buf, cap + 1);
			if (!buf) cm_fail("allocate", what);
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR) continue;
		if (r < 0) cm_fail("read", what);
		if (r == 0) break;
		n += (size_t)r;
	}
	buf[n] = 0;
	*len = n;
	close(fd);
	return buf;
}

static void cm_attr(int fd, unsigned int flags, uint64_t set, const char *path) {
	struct cm_mount_attr a = {.attr_set = set};
	if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | flags, &a, sizeof a) != 0)
		cm_fail("set the mount's flags on", path);
}

// cm_place mounts the detached tree over path, which must not be a
// symbolic link (the plan's paths are free of them; one that became a
// link since is refused rather than followed). Every mount point exists:
// the host creates the placeholders' before the run.
static void cm_place(int tree, const char *path) {
	int dst = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (dst < 0) cm_fail("open", path);
	struct stat st;
	if (fstat(dst, &st) != 0) cm_fail("stat", path);
	if (S_ISLNK(st.st_mode)) { errno = ELOOP; cm_fail("mount over", path); }
	if (syscall(SYS_move_mount, tree, "", dst, "", CM_MOVE_MOUNT_F_EMPTY_PATH | CM_MOVE_MOUNT_T_EMPTY_PATH) != 0)
		cm_fail("mount over", path);
	close(dst);
	close(tree);
}

// cm_self binds path onto itself, with what is mounted below it.
static void cm_self(const char *path, uint64_t attrs) {
	int tree = syscall(SYS_open_tree, AT_FDCWD, path, CM_OPEN_TREE_CLONE | O_CLOEXEC | CM_AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
	if (tree < 0) cm_fail("bind", path);
	cm_attr(tree, CM_AT_RECURSIVE, attrs, path);
	cm_place(tree, path);
}

// cm_over binds one of the empty sources over path.
static void cm_over(int srcs, const char *name, const char *path) {
	int tree = syscall(SYS_open_tree, srcs, name, CM_OPEN_TREE_CLONE | O_CLOEXEC);
	if (tree < 0) cm_fail("bind an empty source over", path);
	cm_place(tree, path);
}

// cm_sources is a tmpfs attached nowhere, holding what masks show: an
// empty mode-000 file and directory (hidden paths) and an empty mode-0555
// directory (placeholders), read-only.
static int cm_sources(void) {
	int fs = syscall(SYS_fsopen, "tmpfs", CM_FSOPEN_CLOEXEC);
	if (fs < 0) cm_fail("create the masks' tmpfs", NULL);
	if (syscall(SYS_fsconfig, fs, CM_FSCONFIG_SET_STRING, "size", "16k", 0) != 0 ||
	    syscall(SYS_fsconfig, fs, CM_FSCONFIG_SET_STRING, "mode", "0700", 0) != 0 ||
	    syscall(SYS_fsconfig, fs, CM_FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0)
		cm_fail("configure the masks' tmpfs", NULL);
	int m = syscall(SYS_fsmount, fs, CM_FSMOUNT_CLOEXEC, CM_MOUNT_ATTR_NOSUID | CM_MOUNT_ATTR_NODEV | CM_MOUNT_ATTR_NOEXEC);
	if (m < 0) cm_fail("mount the masks' tmpfs", NULL);
	close(fs);
	int f = openat(m, "file", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0);
	if (f < 0) cm_fail("create the masks' file", NULL);
	close(f);
	if (mkdirat(m, "dir", 0) != 0 || mkdirat(m, "empty", 0555) != 0)
		cm_fail("create the masks' directories", NULL);
	if (fchmodat(m, "file", 0, 0) != 0 || fchmodat(m, "dir", 0, 0) != 0 || fchmodat(m, "empty", 0555, 0) != 0)
		cm_fail("set the masks' modes", NULL);
	cm_attr(m, 0, CM_MOUNT_ATTR_RDONLY, "the masks' tmpfs");
	return m;
}

// cm_overlay mounts an overlay over the workspace at path: the workspace
// as bubblewrap bound it is the lower layer, and the upper and work
// directories are the run's, which bubblewrap bound at /.custos-overlay
// (overlayfs takes its layers from this mount namespace). Every write of
// the command lands in the upper layer, which the host applies to the
// workspace only after its check (sandbox/hostguard): nothing the
// command makes is visible on the host while it runs. userxattr makes it
// mountable in a user namespace; the overlay refuses user.overlay.* to the
// command, so it cannot forge a whiteout or an opaque directory. A cache's
// overlay ('C') is made alike, its layers at /.custos-cache-overlay.
static void cm_overlay(const char *path, const char *layers) {
	int fs = syscall(SYS_fsopen, "overlay", CM_FSOPEN_CLOEXEC);
	if (fs < 0) cm_fail("create the workspace's overlay over", path);
	// lowerdir separates layers with ':' and escapes with '\'.
	size_t n = strlen(path);
	char *lower = malloc(2 * n + 1);
	if (!lower) cm_fail("allocate", path);
	char *o = lower;
	for (const char *p = path; *p; p++) {
		if (*p == ':' || *p == '\\' || *p == ',') *o++ = '\\';
		*o++ = *p;
	}
	*o = 0;
	if (syscall(SYS_fsconfig, fs, CM_FSCONFIG_SET_STRING, "lowerdir", lower, 0) != 0)
		cm_fail("set the overlay's lower layer to", path);
	char up[64], work[64];
	snprintf(up, sizeof up, "%s/upper", layers);
	snprintf(work, sizeof work, "%s/work", layers);
	if (syscall(SYS_fsconfig, fs, CM_FSCONFIG_SET_STRING, "upperdir", up, 0) != 0 ||
	    syscall(SYS_fsconfig, fs, CM_FSCONFIG_SET_STRING, "workdir", work, 0) != 0)
		cm_fail("set the overlay's upper layer for", path);
	// volatile: no sync of the upper layer's file system when the overlay
	// goes (with the sandbox), which is a syncfs of the whole host file
	// system the state directory is on, every command; custos never mounts
	// a used work directory again without cleaning it (overlayClean).
	if (syscall(SYS_fsconfig, fs, CM_FSCONFIG_SET_FLAG, "volatile", NULL, 0) != 0 ||
	    syscall(SYS_fsconfig, fs, CM_FSCONFIG_SET_FLAG, "userxattr", NULL, 0) != 0 ||
	    syscall(SYS_fsconfig, fs, CM_FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0)
		cm_fail("create the workspace's overlay over", path);
	free(lower);
	int m = syscall(SYS_fsmount, fs, CM_FSMOUNT_CLOEXEC, CM_MOUNT_ATTR_NOSUID | CM_MOUNT_ATTR_NODEV);
	if (m < 0) cm_fail("mount the workspace's overlay over", path);
	close(fs);
	cm_place(m, path);
}

// cm_drop_caps leaves the process no capability in any set: the command
// runs as an unprivileged user of the sandbox's user namespace.
static void cm_drop_caps(void) {
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0)
		cm_fail("clear the ambient capabilities", NULL);
	for (int c = 0; c <= 63; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 && errno != EINVAL)
			cm_fail("drop the bounding set", NULL);
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	if (syscall(SYS_capset, &h, d) != 0) cm_fail("drop the capabilities", NULL);
	memset(d, 0xff, sizeof d);
	if (syscall(SYS_capget, &h, d) != 0) cm_fail("read the capabilities", NULL);
	for (int i = 0; i < 2; i++)
		if (d[i].effective || d[i].permitted || d[i].inheritable)
			cm_failmsg("capabilities left after dropping them");
}

static void cm_seccomp(int fd) {
	size_t n;
	char *prog = cm_read(fd, 1 << 20, &n, "the seccomp filter");
	if (n == 0 || n % sizeof(struct sock_filter) != 0 || n / sizeof(struct sock_filter) > 0xffff)
		cm_failmsg("malformed seccomp filter");
	struct sock_fprog p = {.len = (unsigned short)(n / sizeof(struct sock_filter)), .filter = (struct sock_filter *)prog};
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p, 0, 0) != 0) cm_fail("load the seccomp filter", NULL);
}

// cm_limit sets one rlimit, "NAME SOFT HARD".
static void cm_limit(const char *rec) {
	char name[16];
	unsigned long long soft, hard;
	if (sscanf(rec, "%15s %llu %llu", name, &soft, &hard) != 3) cm_failmsg("malformed rlimit in the mount plan");
	int res;
	if (strcmp(name, "core") == 0) res = RLIMIT_CORE;
	else if (strcmp(name, "cpu") == 0) res = RLIMIT_CPU;
	else if (strcmp(name, "as") == 0) res = RLIMIT_AS;
	else if (strcmp(name, "fsize") == 0) res = RLIMIT_FSIZE;
	else if (strcmp(name, "nproc") == 0) res = RLIMIT_NPROC;
	else cm_failmsg("unknown rlimit in the mount plan");
	struct rlimit rl = {.rlim_cur = soft, .rlim_max = hard};
	if (setrlimit(res, &rl) != 0) cm_fail("set the rlimit", name);
}

// cm_exec runs argv with envp, searching the plan's PATH for a name
// without a slash. A command that cannot be executed is the command's
// failure, not the step's: it is reported on stderr with the shell's exit
// codes (127 not found, 126 not executable), as prlimit in front of it
// would.
static void cm_exec(char **argv, char **envp) {
	int err = ENOENT;
	if (strchr(argv[0], '/')) {
		execve(argv[0], argv, envp);
		err = errno;
	} else {
		const char *path = "/usr/bin:/bin";
		for (char **e = envp; *e; e++)
			if (strncmp(*e, "PATH=", 5) == 0) path = *e + 5;
		char buf[PATH_MAX];
		for (const char *p = path;; p++) {
			const char *end = strchrnul(p, ':');
			int n = snprintf(buf, sizeof buf, "%.*s/%s", (int)(end - p), p, argv[0]);
			if (n > 0 && (size_t)n < sizeof buf && end > p) {
				execve(buf, argv, envp);
				if (errno != ENOENT && errno != ENOTDIR) err = errno;
			}
			if (*end == 0) break;
			p = end;
		}
	}
	dprintf(2, "custos-sandbox: %s: %s\n", argv[0], strerror(err));
	_exit(err == ENOENT ? 127 : 126);
}

// cm_close_inherited closes every descriptor but the standard three and
// the status pipe (close-on-exec): whatever the worker inherited from its
// own parent and bubblewrap passed on (a pipe, a socket, a file of the
// host) must not reach the command. close_range is older (Linux 5.9) than
// mount_setattr (5.12), which the step needs anyway.
static void cm_close_inherited(void) {
	if ((cm_status > 3 && syscall(SYS_close_range, 3, cm_status - 1, 0) != 0) ||
	    syscall(SYS_close_range, cm_status + 1, ~0U, 0) != 0)
		cm_fail("close the inherited descriptors", NULL);
}

// cm_init makes the step the sandbox's PID 1 (bubblewrap runs it as PID 1,
// --as-pid-1): it forks the command and reaps whatever is orphaned in the
// namespace until the command ends, then exits with the command's status
// (128+N for signal N, as bubblewrap's own init reports it), and the
// kernel kills what is left. Its own init would stay in the mount
// namespace bubblewrap built, where the workspace is the host's, not the
// overlay, and the overlay's layers are not covered: every process the
// command can see is in its own namespace, and this one is not dumpable,
// so its /proc entries (cwd, root, exe, fd, environ, mem, map_files) are
// closed to the command, which holds no capability.
static void cm_init(char **argv, char **envp) {
	cm_close_inherited();
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) cm_fail("make the sandbox's init undumpable", NULL);
	pid_t child = fork();
	if (child < 0) cm_fail("start the command", NULL);
	if (child == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		cm_exec(argv, envp); // dumpable again once it execs
	}
	// Only the command's copy of the status pipe may be left: it closes
	// on the exec, and the host reads the pipe to its end.
	close(cm_status);
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, __WALL);
		if (p == child && WIFEXITED(st)) _exit(WEXITSTATUS(st));
		if (p == child && WIFSIGNALED(st)) _exit(128 + WTERMSIG(st));
		if (p < 0 && errno == ECHILD) _exit(125);
	}
}

// argv: BINARY custos-sandbox-mounts PLANFD STATUSFD SECCOMPFD EXEFD -- CMD...
// The plan is NUL-terminated records: a letter, then a path or, for 'V',
// NAME=VALUE of the command's environment; the last is "Z", the end.
__attribute__((constructor)) static void custos_sandbox_mounts(int argc, char **argv, char **envp) {
	(void)envp;
	if (argc < 8 || argv == NULL || argv[1] == NULL || strcmp(argv[1], "custos-sandbox-mounts") != 0)
		return;
	cm_status = atoi(argv[3]);
	if (strcmp(argv[6], "--") != 0) cm_failmsg("usage: custos-sandbox-mounts PLANFD STATUSFD SECCOMPFD EXEFD -- CMD...");
	int planfd = atoi(argv[2]), secfd = atoi(argv[4]), exefd = atoi(argv[5]);
	if (fcntl(cm_status, F_SETFD, FD_CLOEXEC) != 0) cm_fail("status pipe", NULL);
	close(exefd);
	size_t n;
	char *plan = cm_read(planfd, 64 << 20, &n, "the mount plan");
	// The plan ends with its end record, "Z": one without it was cut short
	// (the host writes it while bubblewrap starts, and writes nothing when
	// its planning fails).
	if (n < 2 || plan[n - 1] != 0 || plan[n - 2] != 'Z' || (n > 2 && plan[n - 3] != 0)) cm_failmsg("the mount plan is missing or incomplete");
	if (unshare(CLONE_NEWNS) != 0) cm_fail("create the mount namespace", NULL);
	int srcs = -1;
	size_t nenv = 0;
	for (size_t i = 0; i < n; i += strlen(plan + i) + 1) {
		const char *rec = plan + i, *path = rec + 1;
		if (rec[0] == 'Z') {
			if (i + 2 != n) cm_failmsg("malformed mount plan");
			continue;
		}
		if (rec[0] == 'V') { nenv++; continue; }
		if (rec[0] == 'L') { cm_limit(path); continue; }
		if ((rec[0] == 'F' || rec[0] == 'D' || rec[0] == 'E' || rec[0] == 'O' || rec[0] == 'C') && srcs < 0) srcs = cm_sources();
		switch (rec[0]) {
		case 'O':
			// First, so that every other mount below the workspace is
			// made on the overlay; then the layers' directories are
			// covered, out of the command's reach.
			if (i != 0) cm_failmsg("malformed mount plan: the overlay is not its first record");
			cm_overlay(path, "/.custos-overlay");
			cm_over(srcs, "dir", "/.custos-overlay");
			break;
		case 'C':
			cm_overlay(path, "/.custos-cache-overlay");
			cm_over(srcs, "dir", "/.custos-cache-overlay");
			break;
		case 'B': cm_self(path, CM_MOUNT_ATTR_NOSUID | CM_MOUNT_ATTR_NODEV); break;
		case 'R': cm_self(path, CM_MOUNT_ATTR_RDONLY | CM_MOUNT_ATTR_NOSUID | CM_MOUNT_ATTR_NODEV); break;
		case 'F': cm_over(srcs, "file", path); break;
		case 'D': cm_over(srcs, "dir", path); break;
		case 'E': cm_over(srcs, "empty", path); break;
		default: cm_failmsg("malformed mount plan");
		}
	}
	if (srcs >= 0) close(srcs);
	// The root, bubblewrap's tmpfs, read-only (only the root itself: what is
	// mounted below it keeps its own flags).
	{
		struct cm_mount_attr a = {.attr_set = CM_MOUNT_ATTR_RDONLY | CM_MOUNT_ATTR_NOSUID | CM_MOUNT_ATTR_NODEV};
		if (syscall(SYS_mount_setattr, AT_FDCWD, "/", 0, &a, sizeof a) != 0) cm_fail("make the root read-only", NULL);
	}
	// The working directory was entered before the mounts; enter it again
	// so the command sees them there too.
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd) || chdir(cwd) != 0) cm_fail("enter the working directory", NULL);
	char **env = calloc(nenv + 2, sizeof *env);
	if (!env) cm_fail("allocate", "the environment");
	size_t k = 0;
	for (size_t i = 0; i < n; i += strlen(plan + i) + 1)
		if (plan[i] == 'V' && strncmp(plan + i + 1, "PWD=", 4) != 0) env[k++] = plan + i + 1;
	char *pwd = malloc(strlen(cwd) + 5);
	if (!pwd) cm_fail("allocate", "the environment");
	strcpy(pwd, "PWD=");
	strcat(pwd, cwd);
	env[k++] = pwd;
	env[k] = NULL;
	cm_drop_caps();
	if (secfd >= 0) cm_seccomp(secfd);
	cm_init(argv + 7, env);
}
*/
import "C"

// mountInitBuilt: this binary carries the in-sandbox mount step.
const mountInitBuilt = true
