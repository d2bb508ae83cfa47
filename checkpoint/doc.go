// Package checkpoint keeps what each tool call of a job changed in its
// workspace, so that any change can be shown (starter changes) and taken
// back (starter rewind), Bash commands' included.
//
// A checkpoint is one call's Record: for every path the call changed, the
// Entry before and after (a regular file's content and mode, a directory,
// a symbolic link's target, or nothing). Contents are objects named by
// their SHA-256 in the store's objects/ directory, shared by every turn
// and every job of the workspace, so a content is stored once however many
// times it is seen. The store lives in custos' state directory
// (api.CheckpointDir), never in the workspace, and nothing here runs git
// or writes under a .git directory: paths inside one are neither recorded
// nor restored.
//
// A record is written, with the objects it names and synced, before the
// call changes anything, marked Done once the change is applied: a
// process killed at any point leaves a record that says which states the
// workspace may be in (before, or after when Done is not set).
package checkpoint
