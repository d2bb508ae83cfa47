// Package mount is the sandbox's vocabulary for what a run shows: one
// mount of the bubblewrap profile (bind, read-only bind, an empty
// directory of the sandbox's own, a symbolic link), as the packages that
// plan a run's mounts (the system view, toolchains, protected paths) hand
// them to the profile, and as bubblewrap's arguments.
package mount

import "fmt"

// Kind is what one mount does.
type Kind uint8

const (
	Bind    Kind = iota // --bind Src Dst: read-write
	ROBind              // --ro-bind Src Dst: read-only
	Empty               // --perms 0555 --tmpfs Dst: an empty directory of the sandbox's own (see Args)
	Symlink             // --symlink Src Dst: Src is the link's target
)

// Mount is one mount of a run.
type Mount struct {
	Kind     Kind
	Src, Dst string
}

// Args is the mount as bubblewrap arguments.
func (m Mount) Args() []string {
	switch m.Kind {
	case Bind:
		return []string{"--bind", m.Src, m.Dst}
	case ROBind:
		return []string{"--ro-bind", m.Src, m.Dst}
	case Empty:
		// A tmpfs of this sandbox's own: nothing written there reaches the
		// host, and it is gone when the sandbox ends, so it needs no
		// read-only remount, which costs bubblewrap 0.8 a fresh read of
		// the mount table (a tenth of a millisecond and more on every
		// call, for each placeholder). Mode 0555 makes an accidental write
		// fail loudly (permission denied) instead of vanishing; a command
		// that chmods it first only writes into that void.
		return []string{"--perms", "0555", "--tmpfs", m.Dst}
	case Symlink:
		return []string{"--symlink", m.Src, m.Dst}
	}
	panic(fmt.Sprintf("sandbox/mount: unknown mount kind %d", m.Kind))
}

// Args is the bubblewrap arguments of ms, in order (a later mount covers
// an earlier one).
func Args(ms []Mount) []string {
	var a []string
	for _, m := range ms {
		a = append(a, m.Args()...)
	}
	return a
}
