//go:build !linux

package sandbox

func maybeRunProcWalk() {}
