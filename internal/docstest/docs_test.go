package docstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/custos-dev/custos/internal/testbin"
)

// quickStart is the README's first sh fence under "## Quick start".
func quickStart(t *testing.T) []command {
	t.Helper()
	readme := pages(t)[0]
	fences, _ := readme.fences()
	start := -1
	for i, l := range readme.lines {
		if strings.TrimSpace(l) == "## Quick start" {
			start = i + 1
		}
	}
	if start < 0 {
		t.Fatal(`README.md has no "## Quick start" heading`)
	}
	for _, f := range fences {
		if f.line > start && f.lang == "sh" {
			var out []command
			for _, c := range (page{path: readme.path, lines: readme.lines}).shellCommands() {
				if strings.HasPrefix(c.where, "README.md:") && lineOf(c.where) > f.line && lineOf(c.where) <= f.line+len(f.lines) {
					out = append(out, c)
				}
			}
			return out
		}
	}
	t.Fatal("README.md's quick start has no sh fence")
	return nil
}

func lineOf(where string) int {
	_, n, _ := strings.Cut(where, ":")
	i := 0
	for _, r := range n {
		i = i*10 + int(r-'0')
	}
	return i
}

// makeRunExpands is what `make run` runs after installing bubblewrap: the
// recipe of its run target, as make prints it.
func makeRunExpands(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("make", "-n", "-o", "sandbox-deps", "run")
	cmd.Dir = root
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GO=") && !strings.HasPrefix(kv, "TASK=") && !strings.HasPrefix(kv, "MAKEFLAGS=") && !strings.HasPrefix(kv, "MFLAGS=") && !strings.HasPrefix(kv, "MAKELEVEL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n run: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// The README's quick start: `make run` is the job it says, the other
// commands are what CI runs.
func TestQuickStartCommands(t *testing.T) {
	qs := quickStart(t)
	var texts []string
	for _, c := range qs {
		texts = append(texts, strings.Join(c.words, " "))
	}
	if len(qs) < 2 || texts[0] != "make run" || texts[1] != "make test" {
		t.Fatalf("the quick start's commands are %q; want make run (the main job) and make test (every test) first", texts)
	}
	recipe := makeRunExpands(t)
	const want = `go run ./starter run "summarise this repository and suggest one improvement"`
	if recipe != want {
		t.Errorf("make run runs %q; the README and this test say %q", recipe, want)
	}
	readme := strings.Join(pages(t)[0].lines, "\n")
	if !strings.Contains(readme, "`"+want+"`") {
		t.Errorf("README.md no longer says that make run runs `%s`", want)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	ciLines := map[string]bool{}
	for _, l := range strings.Split(string(ci), "\n") {
		ciLines[strings.TrimSpace(l)] = true
	}
	for _, c := range texts[1:] {
		if !ciLines[c] {
			t.Errorf(".ci/run does not run the README's %q", c)
		}
	}
}

// TestCommandsInDocs runs the README's main job as `make run` does (the
// offline demo model, the embedded server, a worker in the same process) in
// a workspace and a network namespace of its own (netns_test.go), answers
// its calls with the documented `starter status`, `approve`, `deny` and
// `audit`, then checks every command of README.md and docs/*.md: the cheap
// ones run (in that namespace too), the rest must name real make targets,
// starter subcommands and flags, worker flags, Temporal CLI commands and
// flags, tests, benchmarks and scripts.
func TestCommandsInDocs(t *testing.T) {
	if dir := os.Getenv(driverEnv); dir != "" {
		// This is the test binary re-executed in a network namespace of its
		// own: run the quick start and report back.
		driveQuickStart(t, dir)
		return
	}
	// make run's embedded server has fixed ports, 127.0.0.1:7233 and 8233,
	// which belong to whoever runs custos by hand: the job runs where
	// 127.0.0.1 is a loopback of its own.
	bwrap := needBwrap(t)
	s := newStarter(t)
	job, cheap := s.quickStartInPrivateNetwork(bwrap)

	temporalCLI, terr := testbin.TemporalCLI()
	if terr != nil && os.Getenv("CI") != "" {
		t.Fatal(terr)
	}
	workerFlags := goFlags(t, "worker")
	targets := makeTargets(t)
	n := 0
	for _, p := range pages(t) {
		for _, c := range p.shellCommands() {
			n++
			w := c.words
			for len(w) > 0 && regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`).MatchString(w[0]) {
				w = w[1:]
			}
			if len(w) == 0 {
				t.Errorf("%s: %q: only assignments", c.where, c.text)
				continue
			}
			switch {
			case w[0] == "make":
				for _, tg := range w[1:] {
					// make's own options and variables (rules.md's examples of
					// commands a rule judges: make -n CC=sh) are not targets.
					if !strings.Contains(tg, "=") && !strings.HasPrefix(tg, "-") && !targets[tg] {
						t.Errorf("%s: %q: the Makefile has no target %q", c.where, c.text, tg)
					}
				}
			case w[0] == "starter":
				s.check(c, w[1:])
			case len(w) > 2 && w[0] == "go" && w[1] == "run" && w[2] == "./starter":
				s.check(c, w[3:])
			case len(w) > 2 && w[0] == "go" && w[1] == "run" && w[2] == "./worker":
				for _, f := range docFlags(w[3:]) {
					if !workerFlags[f] {
						t.Errorf("%s: %q: the worker has no flag --%s", c.where, c.text, f)
					}
				}
			case len(w) > 1 && w[0] == "go" && w[1] == "test":
				checkGoTest(t, c, w[2:])
			case w[0] == "docker":
				checkDocker(t, s, c, w)
			case w[0] == "temporal":
				if terr != nil {
					t.Logf("%s: %q not checked: %v", c.where, c.text, terr)
					continue
				}
				checkTemporal(t, temporalCLI, c, w[1:])
			case strings.HasPrefix(w[0], "scripts/") || strings.HasPrefix(w[0], ".ci/"):
				if st, err := os.Stat(filepath.Join(root, w[0])); err != nil || st.Mode()&0o111 == 0 {
					t.Errorf("%s: %q: %s is not an executable file of the repository", c.where, c.text, w[0])
				}
			case w[0] == "export" || w[0] == "mkdir" || w[0] == "mv":
				// Plain shell around the documented commands: nothing of custos' to check.
			default:
				t.Errorf("%s: %q: this test does not know how to check a %q command: teach it (commands_test.go)", c.where, c.text, w[0])
			}
		}
	}
	if n < 60 {
		t.Errorf("only %d commands found in the docs: is the extraction still right?", n)
	}
	t.Logf("job %s ran; %d documented commands checked; run: %s", job, n, strings.Join(keys(cheap), "; "))
}

// runQuickStartJob runs the README's main job and answers it with the
// documented commands; it returns the job's ID.
func (s *starterCLI) runQuickStartJob() string {
	t := s.t
	recipe := makeRunExpands(t)
	args := words(recipe)
	if len(args) < 4 || strings.Join(args[:3], " ") != "go run ./starter" {
		t.Fatalf("make run runs %q, not go run ./starter …", recipe)
	}
	ws := filepath.Join(s.home, "project")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# a project\n\nIt says hello.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// `go run ./starter run "…"` in the workspace: a job on the current directory.
	run, out := s.background(ws, args[3:]...)
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()

	var job string
	jobRe := regexp.MustCompile(`custos: job (\S+) started in ` + regexp.QuoteMeta(ws))
	waitFor(t, 2*time.Minute, out, func() bool {
		m := jobRe.FindStringSubmatch(out.String())
		if m != nil {
			job = m[1]
		}
		return m != nil
	}, "the job to start")
	for _, want := range []string{"starting an embedded one with a worker in this process", "using the built-in offline demo model", "Web UI: http://127.0.0.1:8233/?token="} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("make run's output does not say %q:\n%s", want, out.String())
		}
	}

	write := s.pending(job, "Write", out)
	s.learnFlags(job, write)
	// starter approve JOB CALL
	if code, o, e := s.run(s.home, time.Minute, "approve", job, write); code != 0 || !strings.Contains(o, "allowed Write") {
		t.Fatalf("starter approve %s %s: exit %d\n%s%s", job, write, code, o, e)
	}
	bash := s.pending(job, "Bash", out)
	// starter audit JOB, while the job runs
	if code, o, e := s.run(s.home, time.Minute, "audit", job); code != 0 || !strings.Contains(o, write) {
		t.Errorf("starter audit %s: exit %d, no %s in it\n%s%s", job, code, write, o, e)
	}
	// starter deny JOB CALL [--reason R]
	if code, o, e := s.run(s.home, time.Minute, "deny", job, bash, "--reason", "the docs test says no"); code != 0 || !strings.Contains(o, "denied Bash") {
		t.Fatalf("starter deny %s %s: exit %d\n%s%s", job, bash, code, o, e)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("make run's job: %v\n%s", err, out.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("make run's job did not end:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(ws, "CUSTOS_DEMO.md")); err != nil {
		t.Errorf("the approved Write did not write CUSTOS_DEMO.md: %v\n%s", err, out.String())
	}
	return job
}

// pending asks `starter status JOB` until a call of tool waits, and returns its ID.
func (s *starterCLI) pending(job, tool string, out *syncBuffer) string {
	re := regexp.MustCompile(`(?m)^pending:\s+(\S+): ` + tool + `[: ]`)
	var call string
	waitFor(s.t, time.Minute, out, func() bool {
		code, o, _ := s.run(s.home, time.Minute, "status", job)
		if m := re.FindStringSubmatch(o); code == 0 && m != nil {
			call = m[1]
			return true
		}
		return false
	}, "a "+tool+" call to wait for approval")
	return call
}

func waitFor(t *testing.T, within time.Duration, out *syncBuffer, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; the job said:\n%s", within, what, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// runCheapCommands runs, in a state directory with no server, the documented
// commands that need none; ran collects what ran.
func (s *starterCLI) runCheapCommands(ran map[string]bool) {
	t := s.t
	ws := filepath.Join(s.home, "src", "svc")
	if err := os.MkdirAll(filepath.Join(ws, ".custos"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".custos", "settings.json"), []byte(`{"permissions": {"allow": ["Bash(ls:*)"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"policy", "check", "--tool", "Bash", "--input", `{"command":"rm -rf ~/"}`}, `"decision":"deny"`},
		{[]string{"policy", "replay", "--settings", ".custos/settings.json", "--since", "30d", "--workspace", "."}, ""},
		{[]string{"policy", "suggest", "--min", "3"}, "rules covering at least 3 approvals"},
		{[]string{"audit", "stats", "--since", "7d"}, "calls in"},
		{[]string{"trust", ws}, ""},
		{[]string{"sandbox", "check", "--workspace", ws}, ""},
		{[]string{"sandbox", "cache", "--workspace", ws}, ""},
		{[]string{"temporal-profile"}, "--tls-server-name localhost"},
		{[]string{"help"}, "usage:"},
	} {
		code, o, e := s.run(ws, time.Minute, tc.args...)
		if code != 0 || !strings.Contains(o+e, tc.want) {
			t.Errorf("starter %q: exit %d, want 0 and %q in:\n%s%s", tc.args, code, tc.want, o, e)
		}
		ran["starter "+strings.Join(tc.args[:min(2, len(tc.args))], " ")] = true
	}
}

// checkDocker: docker compose exec names a service of docker-compose.yml,
// and `custos` there is the starter the Dockerfile builds.
func checkDocker(t *testing.T, s *starterCLI, c command, w []string) {
	t.Helper()
	compose, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(w) < 3 || w[1] != "compose" {
		t.Errorf("%s: %q: only docker compose is documented", c.where, c.text)
		return
	}
	if w[2] != "exec" {
		return
	}
	if len(w) < 5 || !regexp.MustCompile(`(?m)^  `+regexp.QuoteMeta(w[3])+`:`).Match(compose) {
		t.Errorf("%s: %q: docker-compose.yml has no service %q", c.where, c.text, w[3])
		return
	}
	docker, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if w[4] != "custos" || !strings.Contains(string(docker), "-o /out/custos ./starter") {
		t.Errorf("%s: %q: the image's custos is not ./starter", c.where, c.text)
		return
	}
	s.check(c, w[5:])
}

// checkTemporal: the Temporal CLI has the command and its flags.
func checkTemporal(t *testing.T, cli string, c command, args []string) {
	t.Helper()
	var path []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			break
		}
		path = append(path, a)
	}
	out, err := exec.Command(cli, append(append([]string{}, path...), "--help")...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "temporal "+strings.Join(path, " ")) {
		t.Errorf("%s: %q: the Temporal CLI has no command %q: %v\n%s", c.where, c.text, strings.Join(path, " "), err, out)
		return
	}
	for _, f := range docFlags(args[len(path):]) {
		if !strings.Contains(string(out), "--"+f) {
			t.Errorf("%s: %q: temporal %s has no flag --%s", c.where, c.text, strings.Join(path, " "), f)
		}
	}
}
