// Package hostguard keeps a command from planting what a tool on the host
// runs later. Around every command it takes a snapshot of what git on the
// host would run or follow in the workspace (hooks, config naming
// programs, pointers to other repositories, at any depth within a budget of
// entries read), and after the command, however it ended, it neutralises
// what the command created or changed there: hooks set aside, config
// stripped of every entry not known to be inert, pointers to repositories
// custos cannot see set aside, all into a quarantine with a manifest. With
// the workspace overlay, the command's writes reach the workspace only
// after this check, run on the merged view in a helper process; what must
// not leave the sandbox (protected names a command made below the root,
// set-id bits, fifos) is withheld. A guard interrupted by a crash is
// finished by the next process.
//
// Settings say where it keeps what it sets aside; Report is what it did,
// part of the command's result.
package hostguard
