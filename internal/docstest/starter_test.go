package docstest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// starterCLI runs the starter binary (what `go run ./starter` builds) in
// a home, config and state directory of the test's own.
type starterCLI struct {
	t     *testing.T
	bin   string
	env   []string
	home  string
	paths map[string]bool            // subcommands: "run", "policy check", …
	flags map[string]map[string]bool // their flags, as their -h lists them
}

func newStarter(t *testing.T) *starterCLI {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "starter")
	build := exec.Command("go", "build", "-o", bin, "./starter")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./starter: %v\n%s", err, out)
	}
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "TEMPORAL_") || strings.HasPrefix(k, "XDG_") ||
			strings.HasPrefix(k, "CUSTOS_") || strings.HasPrefix(k, "SLACK_") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, "state"),
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_CACHE_HOME="+filepath.Join(home, "cache"))
	s := &starterCLI{t: t, bin: bin, env: env, home: home, paths: map[string]bool{}, flags: map[string]map[string]bool{}}
	s.readUsage()
	return s
}

// run runs starter with args in dir and returns its exit code and output.
func (s *starterCLI) run(dir string, timeout time.Duration, args ...string) (int, string, string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Dir, cmd.Env = dir, s.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errOut.String()
	case errors.As(err, &ee) && ctx.Err() == nil:
		return ee.ExitCode(), out.String(), errOut.String()
	default:
		s.t.Fatalf("starter %q: %v\n%s%s", args, err, out.String(), errOut.String())
		return -1, "", ""
	}
}

// readUsage learns the subcommands from starter's usage and the sandbox's.
func (s *starterCLI) readUsage() {
	code, out, _ := s.run(s.home, time.Minute, "help")
	if code != 0 {
		s.t.Fatalf("starter help: exit %d", code)
	}
	_, _, sbx := s.run(s.home, time.Minute, "sandbox")
	re := regexp.MustCompile(`(?m)^\s*(?:usage:)?\s*starter ([a-z-]+)(?: ([a-z|]+))?`)
	for _, m := range re.FindAllStringSubmatch(out+"\n"+sbx, -1) {
		s.paths[m[1]] = true
		for _, sub := range strings.Split(m[2], "|") {
			if sub != "" {
				s.paths[m[1]+" "+sub] = true
			}
		}
	}
	for _, want := range []string{"run", "follow", "approve", "deny", "policy check", "sandbox exec", "sandbox cache"} {
		if !s.paths[want] {
			s.t.Fatalf("starter's usage does not list %q: is the usage pattern still right?\n%s%s", want, out, sbx)
		}
	}
}

// learnFlags runs each subcommand that takes flags with -h (after the job
// and call it needs to get that far) and records the flags it lists.
func (s *starterCLI) learnFlags(job, call string) {
	probes := map[string][]string{
		"run": {"run"}, "approve": {"approve", job, call}, "deny": {"deny", job, call},
		"revoke": {"revoke", job, "g0"}, "audit": {"audit", job}, "audit stats": {"audit", "stats"},
		"policy check": {"policy", "check"}, "policy replay": {"policy", "replay"},
		"policy suggest": {"policy", "suggest"}, "trust": {"trust"}, "temporal-profile": {"temporal-profile"},
		"sandbox check": {"sandbox", "check"}, "sandbox exec": {"sandbox", "exec"}, "sandbox cache": {"sandbox", "cache"},
		"say": {"say"}, "interrupt": {"interrupt", job}, "end": {"end"}, "budget": {"budget", job}, "tool": {"tool"},
		"gc": {"gc"}, "du": {"du"}, "changes": {"changes", job}, "rewind": {"rewind", job}, "fork": {"fork", job},
		"mcp list": {"mcp", "list"}, "mcp approve": {"mcp", "approve"}, "mcp revoke": {"mcp", "revoke"},
		"jobs": {"jobs"}, "follow": {"follow", job}, "schedule create": {"schedule", "create"}, "schedule list": {"schedule", "list"},
		"schedule pause": {"schedule", "pause"}, "schedule unpause": {"schedule", "unpause"},
	}
	flagLine := regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)
	for path, args := range probes {
		_, out, errOut := s.run(s.home, time.Minute, append(args, "-h")...)
		got := map[string]bool{}
		for _, m := range flagLine.FindAllStringSubmatch(out+errOut, -1) {
			got[m[1]] = true
		}
		if len(got) == 0 {
			s.t.Errorf("starter %s -h listed no flags:\n%s%s", path, out, errOut)
		}
		s.flags[path] = got
	}
}

// check says whether args (after "starter") name a subcommand and only
// flags it has.
func (s *starterCLI) check(c command, args []string) {
	s.t.Helper()
	if len(args) == 0 {
		s.t.Errorf("%s: %q: no subcommand", c.where, c.text)
		return
	}
	if alts := strings.Split(args[0], "|"); len(alts) > 1 {
		// starter approve|deny: each alternative.
		for _, a := range alts {
			s.check(c, append([]string{a}, args[1:]...))
		}
		return
	}
	path := args[0]
	rest := args[1:]
	if len(args) > 1 && s.paths[args[0]+" "+args[1]] {
		path, rest = args[0]+" "+args[1], args[2:]
	}
	if !s.paths[path] {
		s.t.Errorf("%s: %q: starter has no subcommand %q", c.where, c.text, path)
		return
	}
	for _, f := range docFlags(rest) {
		if !s.flags[path][f] {
			s.t.Errorf("%s: %q: starter %s has no flag --%s (it has: %s)", c.where, c.text, path, f, strings.Join(keys(s.flags[path]), " "))
		}
	}
}

// syncBuffer is a bytes.Buffer safe to read while a process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// background starts starter with args in dir, in a process group of its own
// that the test kills when it ends (and the kernel kills if the test dies
// first).
func (s *starterCLI) background(dir string, args ...string) (*exec.Cmd, *syncBuffer) {
	s.t.Helper()
	cmd := exec.Command(s.bin, args...)
	cmd.Dir, cmd.Env = dir, s.env
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
	})
	return cmd, out
}
