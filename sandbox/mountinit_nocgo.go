//go:build !(linux && cgo)

package sandbox

// mountInitBuilt: without cgo this binary has no mount step, and
// bubblewrap makes every mount (see mountinit.go).
const mountInitBuilt = false
