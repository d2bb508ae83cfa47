// Package pathguard is the guard every file tool (Read, Write, Edit, Glob,
// Grep) passes before it touches the workspace: a path is resolved
// component by component, symbolic links followed, and must stay inside the
// canonical workspace; a write to a protected path (the host runs what it
// names: .git/hooks, git config, the hooks directory core.hooksPath names,
// shell and editor configuration) is refused with a ProtectedError that
// names the rule. Root then opens exactly the name the guard checked,
// following no symbolic link, so a link swapped in after the check fails
// the open (ErrPathChanged) instead of leading to a denied file.
//
// It is the file tools' half of what the sandbox enforces for commands
// with mounts; both take their list of protected names from the protected
// package.
package pathguard
