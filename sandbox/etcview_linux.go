//go:build linux

package sandbox

import "syscall"

// statChangeTime is st's change time in nanoseconds.
func statChangeTime(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }
