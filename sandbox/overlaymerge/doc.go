// Package overlaymerge applies what a command wrote in its overlay's upper
// layer (new, changed and removed entries, opaque directories) to the
// workspace on the host, without ever following a symbolic link in either
// tree, resumably (custos may be killed half-way and run it again), and
// without letting through what must not leave the sandbox: set-id bits are
// cleared, fifos and sockets are not applied, and Stats names each.
//
// When a merge runs, and what is set aside instead, is the host guard's
// decision; this package only applies.
package overlaymerge
