// Package protect plans, for one workspace at one moment, how the sandbox
// keeps the protected paths (what the host runs: git hooks and config in
// every layout of a git directory, shell and editor configuration, the
// names the protected package lists) from being changed by a command:
// present ones bound read-only onto themselves, missing ones held by
// read-only placeholders of the sandbox's own, the directories on the way
// pinned so none can be swapped out from under its mount, three levels
// below the workspace root (SearchDepth). A symbolic link where a protected
// path must be cannot be kept read-only: the plan fails (ErrUnprotectable)
// and the command is refused.
//
// Placeholder directories come from a DirPool, made ahead of time so a
// plan does not wait on mkdir.
package protect
