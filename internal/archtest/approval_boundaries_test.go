package archtest

import "slices"

// The shell analysis and the program table below approval: pure like the
// policy that uses them, and below it, never above.
func init() {
	pure := []string{"os/exec", "net/http", mod + "/sandbox", mod + "/hooks/command", mod + "/settingsfile"}
	boundaries = append(boundaries,
		boundary{
			pkg:        mod + "/approval/shell",
			transitive: slices.Concat(pure, []string{mod + "/approval"}),
			direct:     []string{"os"},
			why: "the shell analysis runs inside the workflow with the policy: it starts no process, makes no request and reads no file; " +
				"it says what a command line does and approval decides on that, so it never imports approval",
		},
		boundary{
			pkg:        mod + "/approval/programs",
			transitive: slices.Concat(pure, []string{mod + "/approval", mod + "/approval/shell"}),
			direct:     []string{"os"},
			why: "the program table is data and readers the shell analysis drives: it starts no process, makes no request and reads no file; " +
				"it sits below approval (which checks its examples) and below approval/shell (which walks the command lines and hands it the words)",
		},
	)
}
