//go:build !linux

package hostfs

import (
	"syscall"
)

// StatChangeTime: the /etc view is bubblewrap's, which is Linux only.
func StatChangeTime(*syscall.Stat_t) int64 { return 0 }
