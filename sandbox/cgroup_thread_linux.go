//go:build linux

package sandbox

import "syscall"

// threadID is the calling OS thread's id (cgroup v1 "tasks" takes it).
func threadID() int { return syscall.Gettid() }
