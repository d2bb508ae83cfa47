//go:build !linux

package sandbox

// threadID: cgroups are Linux only, and findPidsCgroup fails elsewhere.
func threadID() int { return -1 }
