//go:build !linux

package sysview

// No inotify elsewhere (nor bubblewrap): nothing is kept.
func newDirWatch() dirWatch { return nil }
