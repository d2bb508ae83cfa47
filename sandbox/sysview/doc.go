// Package sysview is the system a command sees in the sandbox: the host's
// top-level system directories read-only (or the symbolic links a
// merged-/usr host has instead), the few /etc entries programs need
// (certificates, name resolution, the dynamic linker's cache) folded into
// one private, cached view that is rebuilt when the host's files change,
// and the sandbox's own identity (uid 1000, its home in the sandbox's
// /tmp, a passwd and group that name only it), never the host's user list.
package sysview
