// Package masks turns a job's Read and Edit deny rules into mounts: at the
// start of every command the patterns are expanded against the workspace
// as it is then (Expand), a read-denied match is hidden under an empty,
// unreadable file or directory, an edit-denied one is bound read-only onto
// itself, and a denied name that does not exist yet is held by a
// placeholder so that a command cannot create it (Prepare). The workspace
// is as it was after the run: placeholders are removed.
//
// The same matcher answers the file tools (DenyMatcher), so a deny rule
// holds for every tool alike.
package masks
