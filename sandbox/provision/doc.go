// Package provision gives a command what its workspace's toolchains need
// to build in the sandbox as they do on the host, offline and warm: it
// detects the workspace's toolchains (the table in the toolchains package),
// finds the host's dependency caches and shows them read-only (never a
// credential inside or behind them), keeps build and download caches of the
// workspace's own (locked per run, capped in bytes, least recently used
// evicted first), hands git the user's identity and nothing else of their
// configuration, and sets the environment that points the tools at all of
// it. What it plans is a list of mounts and variables the root mounts.
package provision
