package docstest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The quick start's `starter run` finds no server on 127.0.0.1:7233 and
// starts the embedded one on the fixed ports 7233 and 8233, which belong to
// whoever runs custos by hand. So the test re-executes itself, as a driver,
// under `bwrap --unshare-net`: in that network namespace 127.0.0.1 is a
// loopback of its own (bwrap brings lo up), where the ports are always free
// and nothing outside can reach or be reached. The driver runs `starter run`
// and the `starter status`, `approve`, `audit` and `deny` that answer it, and
// the cheap commands, as its subprocesses there; it reports through its exit
// code and output (failures are its own test's) and a result file.
//
// bwrap is given no --proc: its fresh /proc comes with read-only mounts
// over /proc/sys and others, and the kernel then refuses the nested proc
// mount of custos' own sandbox, which would fall back to refusing Bash
// calls. With the host's /proc, bind-mounted with the rest of /, the sandbox
// inside works as it does outside (the driver does not unshare the PID
// namespace, so that /proc is its own).

// driverEnv, in the driver's environment, names the directory of its input
// and result files.
const driverEnv = "CUSTOS_DOCSTEST_NETNS_DRIVER"

// netnsInput is what the driver needs of the test: the starter it built and
// the home and environment to run it in.
type netnsInput struct {
	Bin   string
	Env   []string
	Home  string
	NetNS string // the test's network namespace, which must not be the driver's
}

// netnsResult is what the test needs of the driver.
type netnsResult struct {
	Job   string                     // the quick start's job
	Flags map[string]map[string]bool // the subcommands' flags, as their -h lists them
	Ran   map[string]bool            // the cheap commands that ran
}

// needBwrap returns bwrap's path. Without bwrap installed the test is
// skipped with the reason, or fails when CI is set, as the sandbox tests do.
func needBwrap(t *testing.T) string {
	t.Helper()
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("bwrap not installed (apt-get install bubblewrap): CI must run the quick start, in a network namespace bwrap makes")
		}
		t.Skip("bwrap not installed (apt-get install bubblewrap): the quick start runs in a network namespace bwrap makes")
	}
	return bwrap
}

// quickStartInPrivateNetwork runs runQuickStartJob and runCheapCommands
// under bwrap in a network namespace of their own and returns the job's ID
// and the cheap commands that ran; it records the flags learnt there in s.
func (s *starterCLI) quickStartInPrivateNetwork(bwrap string) (string, map[string]bool) {
	t := s.t
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	netns, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in, err := json.Marshal(netnsInput{Bin: s.bin, Env: s.env, Home: s.home, NetNS: netns})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "input.json"), in, 0o600); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	args := []string{"--unshare-net", "--die-with-parent", "--dev-bind", "/", "/", "--chdir", wd, "--",
		self, "-test.run=^TestCommandsInDocs$", "-test.v", "-test.count=1"}
	if dl, ok := t.Deadline(); ok {
		// The driver's own timeout comes first, so that it says where it was.
		left := time.Until(dl)
		args = append(args, "-test.timeout="+(left*9/10).String())
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-left/20))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, bwrap, args...)
	cmd.Dir = wd
	cmd.Env = append(os.Environ(), driverEnv+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("bwrap %s (%s):\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("the quick start, in a network namespace of its own: %v (its output is above)", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatalf("the driver in the network namespace left no result: %v (its output is above)", err)
	}
	var res netnsResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Job == "" || len(res.Flags) == 0 || len(res.Ran) == 0 {
		t.Fatalf("the driver's result is incomplete: %s", b)
	}
	s.flags = res.Flags
	return res.Job, res.Ran
}

// driveQuickStart is the test inside the network namespace: it runs the
// quick start with the test's starter and writes what the test needs.
func driveQuickStart(t *testing.T, dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "input.json"))
	if err != nil {
		t.Fatal(err)
	}
	var in netnsInput
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	if ns, err := os.Readlink("/proc/self/ns/net"); err != nil || ns == in.NetNS {
		t.Fatalf("the driver is not in a network namespace of its own: %s (the test's is %s), %v", ns, in.NetNS, err)
	}
	s := &starterCLI{t: t, bin: in.Bin, env: in.Env, home: in.Home, paths: map[string]bool{}, flags: map[string]map[string]bool{}}
	res := netnsResult{Job: s.runQuickStartJob(), Ran: map[string]bool{}}
	s.runCheapCommands(res.Ran)
	res.Flags = s.flags
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "result.json"), out, 0o600); err != nil {
		t.Fatal(err)
	}
}
