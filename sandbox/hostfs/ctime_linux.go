//go:build linux

package hostfs

import (
	"syscall"
)

// StatChangeTime is st's change time in nanoseconds.
func StatChangeTime(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }
