// Package hostfs holds the file-system operations on the host that the
// sandbox's packages share: whether a path lies within another, the
// directory listings a walk of a workspace keeps for the next one (keyed by
// each directory's identity, so an unchanged directory is not read twice),
// files written whole or not at all (a record, a file that is rewritten
// only when its content changes), renames that never replace, the removal
// of trees a command left unwritable, and what /proc says of a process.
//
// It knows nothing of bubblewrap, workspaces' meaning or policy: the
// packages that plan a run answer in these terms.
package hostfs
