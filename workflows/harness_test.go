package workflows

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
	sdkpb "go.temporal.io/api/sdk/v1"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/worktree"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/internal/statedir"
	"github.com/custos-dev/custos/lsp"
	"github.com/custos-dev/custos/mcpservers"
	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/sandbox"
	"github.com/custos-dev/custos/settingsfile"
)

// harness runs AgentWorkflow in the test environment (time skipping) with the
// real activities: real files in a temp workspace, the real sandbox, and the
// model activity talking HTTP to a scripted OpenAI-compatible server.
type harness struct {
	t     *testing.T
	suite testsuite.WorkflowTestSuite
	env   *testsuite.TestWorkflowEnvironment
	ws    string
	oai   *demomodel.Server
	input JobInput
	// userConfigDir holds the user's own settings.json; stateDir is
	// custos' state directory (the job's transcript and audit).
	userConfigDir string
	stateDir      string
}

type harnessOpt func(*harnessConfig)

type harnessConfig struct {
	hooks    *hooks.Registry
	settings string // .custos/settings.json content
	sandbox  sandbox.Config
	// untrusted leaves the workspace out of the user's trustedWorkspaces.
	untrusted bool
	// sameHost runs the job on that harness's workspace, user settings
	// and state directory: another job of the workspace on its host.
	sameHost *harness
	// userSettings are top-level keys added to the user's settings.json;
	// notifiers the worker's channels.
	userSettings map[string]any
	notifiers    []notify.Notifier
	// stateDir replaces the test's own temporary state directory (a
	// small tmpfs the test fills).
	stateDir string
}

func withSystemHooks(r *hooks.Registry) harnessOpt { return func(c *harnessConfig) { c.hooks = r } }
func withSettings(s string) harnessOpt             { return func(c *harnessConfig) { c.settings = s } }
func withStateDir(dir string) harnessOpt           { return func(c *harnessConfig) { c.stateDir = dir } }

func newHarness(t *testing.T, handler demomodel.Handler, opts ...harnessOpt) *harness {
	t.Helper()
	var cfg harnessConfig
	for _, o := range opts {
		o(&cfg)
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	if cfg.settings != "" {
		require.NoError(t, os.MkdirAll(filepath.Join(ws, ".custos"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ws, ".custos", "settings.json"), []byte(cfg.settings), 0o644))
	}
	srv := demomodel.New(handler)
	base, err := srv.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(srv.Close)

	h := &harness{t: t, ws: ws, oai: srv, userConfigDir: userConfig(t, ws, !cfg.untrusted), stateDir: t.TempDir()}
	if cfg.stateDir != "" {
		h.stateDir = cfg.stateDir
	}
	if o := cfg.sameHost; o != nil {
		h.ws, h.userConfigDir, h.stateDir = o.ws, o.userConfigDir, o.stateDir
	}
	h.suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	h.env = h.suite.NewTestWorkflowEnvironment()
	h.env.SetTestTimeout(2 * time.Minute)
	(&Agent{Hooks: cfg.hooks}).Register(h.env)
	if cfg.sandbox.CacheDir == "" {
		// The workspace caches of a test are its own, not the user's.
		cfg.sandbox.CacheDir = t.TempDir()
	}
	sb, err := sandbox.New(cfg.sandbox)
	require.NoError(t, err)
	// Before the cache directory goes (cleanups run last first).
	t.Cleanup(func() { sandbox.WaitIdle(sb) })
	// A server starts only when a test's model calls LSP.
	servers := lsp.NewPool(activities.SandboxStarter(sb))
	t.Cleanup(servers.Close)
	set := activities.Set{
		Model:    activities.NewModel(base, "test-key", "fake-model", nil),
		Tools:    &activities.Tools{Sandbox: sb, LSPServers: servers},
		Settings: &activities.Settings{UserConfigDir: h.userConfigDir, StateDir: h.stateDir, Sandbox: sb},
		Hooks:    &activities.Hooks{},
		MCP: &activities.MCP{Pool: &mcpservers.Pool{Sandbox: sb, UserConfigDir: h.userConfigDir,
			StateDir: h.stateDir}},
	}
	t.Cleanup(set.MCP.Pool.Close)
	if len(cfg.userSettings) > 0 {
		addUserSettings(t, h.userConfigDir, cfg.userSettings)
	}
	if len(cfg.notifiers) > 0 {
		acts := &notify.Activities{Notifiers: cfg.notifiers}
		acts.Register(h.env)
		set.Settings.Notifiers = acts.Names()
	}
	set.Register(h.env)
	worktree.Register(h.env, set.Settings)
	set.RegisterBash(h.env)
	h.input = JobInput{Task: "test task", Workspace: h.ws, Once: true}
	return h
}

// run executes the workflow to completion and returns its result.
func (h *harness) run() (JobResult, error) {
	h.env.ExecuteWorkflow(WorkflowName, h.input)
	require.True(h.t, h.env.IsWorkflowCompleted(), "workflow did not complete")
	if err := h.env.GetWorkflowError(); err != nil {
		return JobResult{}, err
	}
	var res JobResult
	require.NoError(h.t, h.env.GetWorkflowResult(&res))
	return res, nil
}

// signalAt sends an approval signal after d of workflow time.
func (h *harness) signalAt(d time.Duration, callID, decision string) {
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(ApprovalSignal, ApprovalDecision{CallID: callID, Decision: decision, By: "test"})
	}, d)
}

// signalWhenAsked answers callID as soon as it waits for a person
// (looked for every 100 ms of workflow time), however long the calls
// before it take on a loaded machine.
func (h *harness) signalWhenAsked(callID, decision string) {
	var poll func()
	poll = func() {
		if slices.ContainsFunc(h.status().Pending, func(p PendingAsk) bool { return p.CallID == callID }) {
			h.env.SignalWorkflow(ApprovalSignal, ApprovalDecision{CallID: callID, Decision: decision, By: "test"})
			return
		}
		h.env.RegisterDelayedCallback(poll, 100*time.Millisecond)
	}
	h.env.RegisterDelayedCallback(poll, 100*time.Millisecond)
}

// status is the job's status query, during the run or after it.
func (h *harness) status() Status {
	h.t.Helper()
	v, err := h.env.QueryWorkflow(StatusQuery)
	require.NoError(h.t, err)
	var st Status
	require.NoError(h.t, v.Get(&st))
	return st
}

// currentDetails are the Web UI's "Current details" of the job.
func (h *harness) currentDetails() string {
	h.t.Helper()
	v, err := h.env.QueryWorkflow("__temporal_workflow_metadata")
	require.NoError(h.t, err)
	var md sdkpb.WorkflowMetadata
	require.NoError(h.t, v.Get(&md))
	return md.GetCurrentDetails()
}

// audit returns the job's audit via the query, after the run.
func (h *harness) audit() []approval.AuditRecord {
	v, err := h.env.QueryWorkflow(AuditQuery)
	require.NoError(h.t, err)
	var recs []approval.AuditRecord
	require.NoError(h.t, v.Get(&recs))
	return recs
}

// decisions returns the decision records (not events) by call ID.
func (h *harness) decisions() map[string]approval.AuditRecord {
	out := map[string]approval.AuditRecord{}
	for _, r := range h.audit() {
		if r.Event == "" {
			out[r.CallID] = r
		}
	}
	return out
}

// toolResults returns what the model was sent as tool results, by call ID,
// read from the requests the fake OpenAI server received.
func (h *harness) toolResults() map[string]string {
	out := map[string]string{}
	for _, req := range h.oai.Requests() {
		for _, m := range req.Messages {
			if m.Role == openai.ChatMessageRoleTool {
				out[m.ToolCallID] = m.Content
			}
		}
	}
	return out
}

// jobFiles are where the test job's transcript and audit are written.
func (h *harness) jobFiles() api.JobFiles {
	return api.JobFilesIn(statedir.WorkspaceDirIn(h.stateDir, h.ws), "default-test-workflow-id")
}

// transcript is the test job's transcript, "" when there is none.
func (h *harness) transcript() string {
	b, _ := os.ReadFile(h.jobFiles().Transcript)
	return string(b)
}

func (h *harness) file(rel string) string {
	b, err := os.ReadFile(filepath.Join(h.ws, rel))
	if err != nil {
		return ""
	}
	return string(b)
}

func (h *harness) writeFile(rel, content string) {
	p := filepath.Join(h.ws, rel)
	require.NoError(h.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(h.t, os.WriteFile(p, []byte(content), 0o644))
}

func call(id, tool string, args any) openai.ToolCall { return demomodel.ToolCall(id, tool, args) }

// rawCall is a tool call with arguments exactly as given, malformed or not.
func rawCall(id, tool, args string) openai.ToolCall {
	return openai.ToolCall{ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: tool, Arguments: args}}
}

// denial decodes a structured denial; ok is false if content is not one.
func denial(content string) (d struct {
	Approved *bool  `json:"approved"`
	Decision string `json:"decision"`
	Layer    string `json:"layer"`
	Rule     string `json:"rule"`
	Reason   string `json:"reason"`
}, ok bool) {
	if !strings.HasPrefix(content, "{") || json.Unmarshal([]byte(content), &d) != nil || d.Approved == nil {
		return d, false
	}
	return d, !*d.Approved
}

func withSandbox(sc sandbox.Config) harnessOpt { return func(c *harnessConfig) { c.sandbox = sc } }

func untrustedWorkspace() harnessOpt { return func(c *harnessConfig) { c.untrusted = true } }

// addUserSettings adds top-level keys to the user's settings.json.
func addUserSettings(t *testing.T, dir string, keys map[string]any) {
	file := settingsfile.UserFile(dir)
	top := map[string]any{}
	if b, err := os.ReadFile(file); err == nil {
		require.NoError(t, json.Unmarshal(b, &top))
	}
	for k, v := range keys {
		top[k] = v
	}
	b, err := json.Marshal(top)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o700))
	require.NoError(t, os.WriteFile(file, b, 0o600))
}

// userConfig is a user config dir whose settings trust ws (or not).
func userConfig(t *testing.T, ws string, trust bool) string {
	dir := t.TempDir()
	if trust {
		require.NoError(t, settingsfile.Trust(dir, ws))
	}
	return dir
}
