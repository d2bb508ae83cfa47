package api

import "fmt"

// Instructions are the project's instructions a job's model receives
// (AGENTS.md, or CLAUDE.md where a directory has no AGENTS.md, from the
// workspace root down to the job's working directory, after the user's own
// ~/.config/custos/AGENTS.md), read once by the host's LoadSettings
// activity and recorded with its result. They inform the model only: no
// rule, mode or sandbox setting is ever read from them.
type Instructions struct {
	Files []InstructionFile `json:"files,omitempty"`
	// Text is what the model is given, every file under its heading,
	// within MaxInstructionBytes; a cut says so where it is.
	Text string `json:"text,omitempty"`
	// Skipped names files that were there and not given, and why (a
	// symlink out of the workspace, a deny rule, not a regular file).
	Skipped []string `json:"skipped,omitempty"`
}

// InstructionFile is one file given to the model: its name as shown
// (relative to the workspace, or ~/… for the user's own), its size and
// how much of it the model got.
type InstructionFile struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
	Given int    `json:"given"`
}

// Size is "1234 bytes", or "32768 of 40000 bytes" for a file cut short.
func (f InstructionFile) Size() string {
	if f.Given < f.Bytes {
		return fmt.Sprintf("%d of %d bytes", f.Given, f.Bytes)
	}
	return fmt.Sprintf("%d bytes", f.Bytes)
}

// MaxInstructionBytes caps all instructions together, as Codex caps its
// project docs (32 KiB): they are sent with every model call.
const MaxInstructionBytes = 32 << 10

// HostFacts are what the model is told of the machine it works on.
type HostFacts struct {
	// OS is the operating system as the host names it (os-release), with
	// GOOS/GOARCH.
	OS string `json:"os,omitempty"`
	// Git says whether the workspace is in a git repository: "" not one,
	// else the branch (or "detached HEAD").
	Git string `json:"git,omitempty"`
}
