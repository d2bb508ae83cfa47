// Package cli is custos' command line: start and follow jobs, approve or deny
// their calls, read status and audit, check policy. starter/main.go is a thin
// wrapper around Main.
package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/cli/cmdline"
	"github.com/custos-dev/custos/cli/sandboxcmd"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/jobevents"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/stream"
	"github.com/custos-dev/custos/temporalclient"
)

// App carries the streams and the environment of one invocation.
type App struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Interactive is true when Stdin is a terminal: run then prompts.
	Interactive bool
	Logger      *slog.Logger

	// inProcess is set when this process runs the job's server and worker.
	inProcess bool
	// hub is the in-process worker's model answers as they are written
	// (nil: no worker here, or streaming off); live prints a job's.
	hub *stream.Hub
	// src is the followed job's events; out renders them (the terminal's
	// lines, or JSON lines with json set: --json).
	src  *jobevents.Source
	out  renderer
	json bool
	// started is the job run started, for --json's first event.
	started *jobevents.Job
}

const usage = `custos — a durable coding agent on Temporal

usage:
  starter run [--workspace DIR] [--mode M] [--approval-timeout 60s] [--max-turns N] [--max-tokens N] [--once] [--detach] [--json] "task"
                                     a job: after each answer it waits for your next message (--once: it ends)
  starter say JOB "text" [--detach] [--json]
                                     the job's next message; sent while it works, it reaches the model
                                     after the running tools' results; to an ended job, it goes on from
                                     its transcript ([--workspace DIR] when the server no longer has it)
  starter interrupt JOB ["text"]     stop what the job runs now (model call, commands); the model gets the text
  starter end JOB [--reason R]       end a job
  starter tool [JOB] TOOL 'JSON' [--workspace DIR] [--mode M]
                                     one tool call of your own, through the same six layers (in JOB: the
                                     model is told its result with the next message)
  starter budget JOB [--tokens N] [--per-message N]
                                     the job's token budget (0 removes a cap); a job that reached it goes on
  starter changes JOB [--turn N]     what each turn changed, a diff per file, with the tool call that changed it
  starter rewind JOB --to TURN [--files|--conversation] [--force] [--wait]
                                     the files the job changed after TURN put back, the conversation cut there
  starter fork JOB --at TURN [--worktree DIR] [--id ID] "text"
                                     a new job with JOB's conversation up to TURN and your message, in the same
                                     workspace or a new git worktree with the files as they were at TURN
  starter follow JOB [--json]        follow a job, resuming it in-process if no server runs
  starter watch [JOB]                attach to a running job (no JOB: every job waiting for approval) and prompt
  starter status JOB                 turn, mode, pending approvals, usage
  starter jobs [--json] [--status S] [--workspace DIR]
                                     every job: status (working, waiting for a person or a message, parked,
                                     ended), workspace, start, last activity, the calls that wait
  starter schedule create NAME (--cron EXPR | --every DUR) [--workspace DIR] [--mode M] [--max-tokens N]
                  [--approval-timeout D] [--overlap skip|buffer_one|buffer_all|cancel_other|terminate_other|allow_all] "task"
                                     a job on a Temporal Schedule: each run is a job NAME-<time>, asked like any;
                                     one due while the last works or waits is skipped (--overlap skip)
  starter schedule list [--json]     custos' schedules: spec, state, next run, last job
  starter schedule describe|trigger|pause|unpause|delete NAME [--note N]
  starter approve JOB CALL [--always] [--reason R]
  starter approve JOB CALL --for 30m|--until T [--scope job|workspace] [--rule R]
                                     allow, and let the rule allow later calls for a while (a grant)
  starter grants JOB                 the live grants of a job (and of its workspace)
  starter revoke JOB GRANT           end a grant now, everywhere it applies
  starter deny JOB CALL [--never] [--reason R]
  starter mode JOB MODE              default, acceptEdits, dontAsk, plan, bypass
  starter audit JOB [--json]         every decision, with the layer that made it
  starter audit stats [--since 7d] [--json]  prompts, who answers, waits, timeouts, rules that decide
  starter retry JOB                  a job waiting for the model endpoint (refused key, no quota …) calls it again now
  starter cancel JOB
  starter policy check --tool T --input JSON [--mode M] [--workspace DIR]
  starter policy replay --settings NEW.json [--since 7d] [--workspace DIR] [--job ID] [--json]
                                     what proposed settings would change over the recorded calls (exit 1: a past denial now allowed)
  starter policy suggest [--since 7d] [--workspace DIR] [--job ID] [--min 3] [--write workspace|user]
                                     the narrowest allow rules the recorded answers support, with their evidence
  starter trust [DIR]                let DIR's .custos settings widen the policy (allow rules, hooks, modes, domains)
  starter mcp list [--workspace DIR] the workspace's MCP servers: used, and offered by its .mcp.json
  starter mcp approve|revoke NAME [--workspace DIR]
                                     start a .mcp.json server as its entry is now (a change needs approval again)
  starter sandbox exec|check ...
  starter gc [--dry-run] [--json]    remove what the retention settings let go from custos' state directory
                                     (ended jobs' transcripts and blobs, old audits, unused caches, quarantine)
  starter du [--json]                what custos keeps in its state directory, per workspace and in all
  starter temporal-profile [--write] how your temporal CLI reaches the embedded server (mutual TLS)
  starter ui-url                     a new one-time link to the embedded server's Web UI
  starter inbox-url                  a new one-time link to the approval inbox (every waiting call, in a browser)
  starter acp                        an Agent Client Protocol agent on stdin/stdout, for editors (docs/editors.md)

Temporal: as the temporal CLI: the profile TEMPORAL_PROFILE (default "default") of
TEMPORAL_CONFIG_FILE (default ~/.config/temporalio/temporal.toml), then TEMPORAL_ADDRESS,
TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS, TEMPORAL_TLS_CLIENT_CERT_PATH,
TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH, TEMPORAL_TLS_SERVER_NAME.
No address (or the profile temporal-profile --write makes): your embedded server on
127.0.0.1:7233, over mutual TLS with the certificates in ~/.local/state/custos/tls;
started if none runs.
Model: OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL (no key: offline demo model).
`

// Main runs one command and returns the process exit code.
func (a *App) Main(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.Stderr, usage)
		return 2
	}
	handled, err := a.jobCommand(ctx, args)
	if !handled {
		switch args[0] {
		case "watch":
			err = a.watch(ctx, args[1:])
		case "policy":
			err = a.policy(ctx, args[1:])
		case "trust":
			err = a.trust(args[1:])
		case "mcp":
			err = a.mcp(args[1:])
		case "temporal-profile":
			err = a.temporalProfile(args[1:])
		case "ui-url":
			err = a.loginURL("ui-url", "/", args[1:])
		case "inbox-url":
			err = a.loginURL("inbox-url", app.InboxPrefix, args[1:])
		case "sandbox":
			return sandboxcmd.Main(args[1:], a.Stdout, a.Stderr)
		case "jobs":
			err = a.jobs(ctx, args[1:])
		case "acp":
			err = a.acp(ctx, args[1:])
		case "schedule":
			err = a.schedule(ctx, args[1:])
		case "gc":
			err = a.gc(ctx, args[1:])
		case "du":
			err = a.du(args[1:])
		case "help", "-h", "--help":
			fmt.Fprint(a.Stdout, usage)
			return 0
		default:
			fmt.Fprintf(a.Stderr, "unknown command %q\n\n%s", args[0], usage)
			return 2
		}
	}
	var je jobExit
	if errors.As(err, &je) {
		fmt.Fprintf(a.Stderr, "custos: %v\n", err)
		return je.code()
	}
	return cmdline.Exit(a.Stderr, err)
}

// jobCommand runs the commands that start, follow or act on a job; it
// reports false for any other command.
func (a *App) jobCommand(ctx context.Context, args []string) (bool, error) {
	var err error
	switch args[0] {
	case "run":
		err = a.run(ctx, args[1:])
	case "follow":
		err = a.followJob(ctx, args[1:])
	case "status":
		err = a.withJob(ctx, args[1:], "status", func(c client.Client, id string, _ []string) error {
			return a.status(ctx, c, id)
		})
	case "approve", "deny":
		verb := args[0]
		err = a.withJob(ctx, args[1:], verb, func(c client.Client, id string, rest []string) error {
			return a.decide(ctx, c, id, verb, rest)
		})
	case "grants", "revoke":
		err = a.grantCommand(ctx, args[0], args[1:])
	case "mode":
		err = a.withJob(ctx, args[1:], "mode", func(c client.Client, id string, rest []string) error {
			return a.setMode(ctx, c, id, rest)
		})
	case "retry":
		err = a.withJob(ctx, args[1:], "retry", func(c client.Client, id string, _ []string) error {
			return a.retry(ctx, c, id)
		})
	case "audit":
		if len(args) > 1 && args[1] == "stats" {
			err = a.auditStats(ctx, args[2:])
			break
		}
		err = a.withJob(ctx, args[1:], "audit", func(c client.Client, id string, rest []string) error {
			return a.audit(ctx, c, id, rest)
		})
	case "say":
		err = a.say(ctx, args[1:])
	case "interrupt":
		err = a.withJob(ctx, args[1:], "interrupt", func(c client.Client, id string, rest []string) error {
			return a.interrupt(ctx, c, id, rest)
		})
	case "end":
		err = a.end(ctx, args[1:])
	case "tool":
		err = a.tool(ctx, args[1:])
	case "changes":
		err = a.changes(ctx, args[1:])
	case "rewind":
		err = a.rewind(ctx, args[1:])
	case "fork":
		err = a.fork(ctx, args[1:])
	case "budget":
		err = a.withJob(ctx, args[1:], "budget", func(c client.Client, id string, rest []string) error {
			return a.budget(ctx, c, id, rest)
		})
	case "cancel":
		err = a.withJob(ctx, args[1:], "cancel", func(c client.Client, id string, _ []string) error {
			if err := c.CancelWorkflow(ctx, id, ""); err != nil {
				return fmt.Errorf("cancel %s: %w", id, err)
			}
			fmt.Fprintf(a.Stdout, "cancel requested for %s\n", id)
			return nil
		})
	default:
		return false, nil
	}
	return true, err
}

// withJob parses "JOB [args...]" and runs fn with a client on an existing server.
func (a *App) withJob(ctx context.Context, args []string, verb string, fn func(client.Client, string, []string) error) error {
	if len(args) == 0 || args[0] == "" || args[0][0] == '-' {
		return usagef("%s: the job (workflow) ID comes first", verb)
	}
	c, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(c, args[0], args[1:])
}

// dial connects to the configured server without starting one.
func (a *App) dial(ctx context.Context) (client.Client, error) {
	opts, _, err := temporalclient.Load(a.quietLogger())
	if err != nil {
		return nil, err
	}
	c, err := temporalclient.Dial(ctx, opts, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("%w (is a worker running? start one with: go run ./worker)", err)
	}
	return c, nil
}

// session is a client plus, when no server was reachable, the embedded
// server and in-process workers this command started.
type session struct {
	client   client.Client
	embedded *temporalclient.Embedded
	workers  *app.Workers
	stopDemo func()
	demo     bool
}

func (s *session) Close() {
	if s.workers != nil {
		s.workers.Stop()
	}
	if s.stopDemo != nil {
		s.stopDemo()
	}
	if s.embedded != nil {
		s.embedded.Close()
	} else if s.client != nil {
		s.client.Close()
	}
}

// connectOrEmbed connects to the configured address, or to a server already on
// 127.0.0.1:7233, or else starts the embedded server and a worker in-process
// so that one command is the whole quick start.
func (a *App) connectOrEmbed(ctx context.Context, wo app.Options) (*session, error) {
	logger := a.quietLogger()
	opts, set, err := temporalclient.Load(logger)
	if err != nil {
		return nil, err
	}
	wait := 3 * time.Second
	if set {
		wait = 30 * time.Second
	}
	if c, err := temporalclient.Dial(ctx, opts, wait); err == nil {
		fmt.Fprintf(a.Stderr, "custos: using the Temporal server at %s (its workers run the job)\n", opts.HostPort)
		return &session{client: c}, nil
	} else if set {
		return nil, err
	}
	fmt.Fprintln(a.Stderr, "custos: no Temporal server on 127.0.0.1:7233; starting an embedded one with a worker in this process")
	retention, err := devserver.RetentionFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	emb, err := temporalclient.StartEmbedded(ctx, devserver.Options{Port: devserver.DefaultPort, UIPort: devserver.DefaultUIPort, Retention: retention}, logger)
	if err != nil {
		return nil, err
	}
	s := &session{client: emb.Client, embedded: emb}
	fmt.Fprint(a.Stderr, emb.Banner())
	wo.Logger = logger
	if s.stopDemo, s.demo, err = app.UseDemoModel(&wo); err != nil {
		s.Close()
		return nil, err
	}
	if s.demo {
		fmt.Fprintln(a.Stderr, "custos: no OPENAI_API_KEY: using the built-in offline demo model")
	}
	if s.workers, err = app.Start(emb.Client, wo); err != nil {
		s.Close()
		return nil, err
	}
	a.hub = s.workers.Stream
	if name, why := s.workers.Sandbox.Backend(); name != sandbox.BackendBwrap {
		fmt.Fprintln(a.Stderr, noSandboxLine(why))
	}
	return s, nil
}

// noSandboxLine tells, before a job starts on a worker in this process,
// that its Bash calls will be refused and the one command that gets the
// sandbox: a newcomer's first run should show it.
func noSandboxLine(why string) string {
	fix := "then check with: go run ./starter sandbox check"
	if why == sandbox.WhyNoBwrap {
		fix = "get it with: make run (installs bubblewrap as root), or sudo apt-get install bubblewrap"
	}
	return fmt.Sprintf("custos: no sandbox here (%s), so this job's Bash calls will be refused; %s", why, fix)
}

func (a *App) quietLogger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.New(slog.NewTextHandler(a.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// followJob follows a job; like run, with no server reachable it starts the
// embedded one (same SQLite file) and a worker in-process, so a job paused
// when its `starter run` stopped goes on.
func (a *App) followJob(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "" || args[0][0] == '-' {
		return usagef("follow: the job (workflow) ID comes first")
	}
	fs := newFlagSet("follow", a.Stderr)
	jsonOut := jsonFlag(fs)
	if pos, err := parseInterleaved(fs, args[1:]); err != nil || len(pos) > 0 {
		return cmp.Or(err, usagef("follow: starter follow JOB [--json]"))
	}
	a.useJSON(*jsonOut)
	s, err := a.connectOrEmbed(ctx, defaultModelOptions())
	if err != nil {
		return err
	}
	defer s.Close()
	a.inProcess = s.workers != nil
	return a.follow(ctx, s.client, args[0], 0)
}
