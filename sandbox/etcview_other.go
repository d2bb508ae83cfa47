//go:build !linux

package sandbox

import "syscall"

// statChangeTime: the /etc view is bubblewrap's, which is Linux only.
func statChangeTime(*syscall.Stat_t) int64 { return 0 }
