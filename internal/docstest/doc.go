// Package docstest holds no product code: its tests keep README.md and
// docs/*.md true. They run the README's quick start (the exact
// `go run ./starter run …` that `make run` expands to, against the offline
// demo model and the embedded server, in a network namespace of its own so
// that the server's fixed ports are never the user's), check that .ci/run
// runs the README's test command, run the cheap commands of the other pages,
// check that every other command names a real make target, starter
// subcommand and flag, worker flag, Temporal CLI command, test or script,
// and that every relative link reaches an existing file and heading.
package docstest
