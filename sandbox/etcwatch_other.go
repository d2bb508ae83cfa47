//go:build !linux

package sandbox

// No inotify elsewhere (nor bubblewrap): nothing is kept.
func newDirWatch() dirWatch { return nil }
