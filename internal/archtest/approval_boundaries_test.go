package archtest

// The shell analysis below approval: pure like the policy that uses it,
// and below it, never above.
func init() {
	boundaries = append(boundaries, boundary{
		pkg: mod + "/approval/shell",
		transitive: []string{"os/exec", "net/http", mod + "/sandbox", mod + "/hooks/command", mod + "/settingsfile",
			mod + "/approval"},
		direct: []string{"os"},
		why: "the shell analysis runs inside the workflow with the policy: it starts no process, makes no request and reads no file; " +
			"it reads a command line and says what it does, and approval decides on that, so it never imports approval",
	})
}
