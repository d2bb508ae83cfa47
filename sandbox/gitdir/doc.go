// Package gitdir is the one description of a git directory that every walk
// of one in the sandbox reads: which of its entries git runs code from or
// follows to another repository (config, commondir, hooks, the gitdir
// pointer files of worktrees and submodules, core.hooksPath), what makes a
// directory one, and how its nested git directories (submodules below
// modules/, linked worktrees below worktrees/) are found and how deep.
//
// The protected-paths plan keeps these entries read-only before a command;
// the host guard looks at the same entries after it. Reading a file here
// never follows a FIFO or a device a command may have planted.
package gitdir
