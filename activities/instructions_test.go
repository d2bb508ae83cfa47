package activities

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/internal/statedir"
)

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// loadIn runs LoadSettings for a job in ws with the user's config in cfg.
func loadIn(t *testing.T, ws, cfg, workDir string) api.LoadSettingsResult {
	t.Helper()
	s := &Settings{UserConfigDir: cfg, StateDir: t.TempDir()}
	res, err := s.LoadSettings(context.Background(), api.LoadSettingsRequest{Workspace: ws, JobID: "job-1", WorkDir: workDir})
	require.NoError(t, err)
	return res
}

func TestLoadSettingsReadsProjectInstructions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		user    string
		workDir string
		want    []string // files given, in order
		text    []string // in the text
		not     []string // not in the text
	}{
		{name: "AGENTS.md at the root", files: map[string]string{"AGENTS.md": "run make check"},
			want: []string{"AGENTS.md"}, text: []string{"## AGENTS.md", "run make check"}},
		{name: "CLAUDE.md when there is no AGENTS.md", files: map[string]string{"CLAUDE.md": "claude rules"},
			want: []string{"CLAUDE.md"}, text: []string{"claude rules"}},
		{name: "AGENTS.md wins over CLAUDE.md", files: map[string]string{"AGENTS.md": "agents", "CLAUDE.md": "claude"},
			want: []string{"AGENTS.md"}, text: []string{"agents"}, not: []string{"claude"}},
		{name: "root down to the working directory, nearest last",
			files:   map[string]string{"AGENTS.md": "root rules", "svc/AGENTS.md": "svc rules", "svc/api/CLAUDE.md": "api rules", "other/AGENTS.md": "other rules"},
			workDir: "svc/api", want: []string{"AGENTS.md", "svc/AGENTS.md", "svc/api/CLAUDE.md"},
			text: []string{"root rules", "svc rules", "api rules"}, not: []string{"other rules"}},
		{name: "a working directory that climbs out stays at the root", files: map[string]string{"AGENTS.md": "root"},
			workDir: "../../etc", want: []string{"AGENTS.md"}},
		{name: "the user's own first", files: map[string]string{"AGENTS.md": "project-rule"}, user: "user-rule",
			want: []string{"custos/AGENTS.md", "AGENTS.md"}, text: []string{"user-rule", "project-rule"}},
		{name: "none", files: map[string]string{"README.md": "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := canonTemp(t)
			writeTree(t, ws, tc.files)
			cfg := t.TempDir()
			if tc.user != "" {
				writeTree(t, cfg, map[string]string{"custos/AGENTS.md": tc.user})
			}
			in := loadIn(t, ws, cfg, tc.workDir).Instructions
			var got []string
			for _, f := range in.Files {
				got = append(got, f.Path)
				assert.Equal(t, f.Bytes, f.Given, "nothing cut")
			}
			require.Len(t, got, len(tc.want), "%v", got)
			for i, w := range tc.want {
				assert.Contains(t, got[i], w)
			}
			for _, s := range tc.text {
				assert.Contains(t, in.Text, s)
			}
			for _, s := range tc.not {
				assert.NotContains(t, in.Text, s)
			}
			if len(tc.want) > 1 {
				assert.Less(t, strings.Index(in.Text, tc.text[0]), strings.Index(in.Text, tc.text[len(tc.text)-1]), "in order")
			}
		})
	}
}

// An instruction file is read as a Read would be: one that leads out of
// the workspace, or that a deny rule covers, is not given to the model.
func TestLoadSettingsInstructionsStayInTheWorkspace(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "id_rsa")
	require.NoError(t, os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600))
	ws := canonTemp(t)
	require.NoError(t, os.Symlink(secret, filepath.Join(ws, "AGENTS.md")))
	writeTree(t, ws, map[string]string{"sub/AGENTS.md": "hidden by a rule",
		".custos/settings.json": `{"permissions":{"deny":["Read(sub/**)"]}}`})
	res := loadIn(t, ws, t.TempDir(), "sub") // deny rules count even untrusted
	assert.NotContains(t, res.Instructions.Text, "PRIVATE KEY")
	assert.NotContains(t, res.Instructions.Text, "hidden by a rule")
	assert.Empty(t, res.Instructions.Files)
	require.Len(t, res.Instructions.Skipped, 2, "%v", res.Instructions.Skipped)
	assert.Contains(t, res.Instructions.Skipped[0], "AGENTS.md")
	assert.Contains(t, res.Instructions.Skipped[1], "sub/AGENTS.md")
}

func TestLoadSettingsCapsInstructions(t *testing.T) {
	ws := canonTemp(t)
	big := strings.Repeat("é", api.MaxInstructionBytes) // 2 bytes each: twice the cap
	writeTree(t, ws, map[string]string{"AGENTS.md": big, "sub/AGENTS.md": "never reached"})
	in := loadIn(t, ws, t.TempDir(), "sub").Instructions
	require.Len(t, in.Files, 2)
	assert.Equal(t, len(big), in.Files[0].Bytes)
	assert.LessOrEqual(t, in.Files[0].Given, api.MaxInstructionBytes)
	assert.Equal(t, 0, in.Files[1].Given)
	assert.Contains(t, in.Text, "[custos: cut here; the file has")
	assert.Less(t, len(in.Text), api.MaxInstructionBytes+1024)
	assert.True(t, strings.ToValidUTF8(in.Text, "?") == in.Text, "cut on a character boundary")
}

// A job's transcript and audit are kept in the state directory, owner-only,
// and nothing of them in the workspace.
func TestJobFilesLeaveTheWorkspace(t *testing.T) {
	ws := canonTemp(t)
	state := t.TempDir()
	s := &Settings{UserConfigDir: t.TempDir(), StateDir: state}
	res, err := s.LoadSettings(context.Background(), api.LoadSettingsRequest{Workspace: ws, JobID: "job/1"})
	require.NoError(t, err)
	dir := statedir.WorkspaceDirIn(state, ws)
	assert.Equal(t, api.JobFilesIn(dir, "job/1"), res.Files)
	require.NoError(t, SaveSession(context.Background(), api.SaveSessionRequest{Workspace: ws, JobID: "job/1", Files: res.Files,
		Messages: msgs("system", "task")}))
	for _, p := range []string{res.Files.Transcript, filepath.Dir(res.Files.Transcript), filepath.Dir(res.Files.Audit)} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		assert.Zero(t, fi.Mode().Perm()&0o077, "%s is the owner's alone: %v", p, fi.Mode())
	}
	name, err := os.ReadFile(filepath.Join(dir, "workspace"))
	require.NoError(t, err)
	assert.Equal(t, ws+"\n", string(name), "the directory says whose it is")
	_, err = os.Stat(filepath.Join(ws, ".custos"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing of the job in the workspace")
}

func TestHostFactsGit(t *testing.T) {
	plain := canonTemp(t)
	assert.Equal(t, "", gitBranch(plain))
	repo := canonTemp(t)
	writeTree(t, repo, map[string]string{".git/HEAD": "ref: refs/heads/feature/x\n", "sub/f": ""})
	assert.Equal(t, "feature/x", gitBranch(filepath.Join(repo, "sub")))
	detached := canonTemp(t)
	writeTree(t, detached, map[string]string{".git/HEAD": "0123456789abcdef0123456789abcdef01234567\n"})
	assert.Equal(t, "detached HEAD", gitBranch(detached))
	wt := canonTemp(t)
	writeTree(t, wt, map[string]string{".git": "gitdir: " + filepath.Join(repo, ".git") + "\n"})
	assert.Equal(t, "feature/x", gitBranch(wt))
	assert.Contains(t, osName(), "/")
}

// canonTemp is a temporary directory by its real name.
func canonTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return d
}

// A workspace that holds custos' own directories (a home directory as the
// workspace) never lets a tool or a command at them: the client
// certificate there would let a command answer its own approvals, the
// transcripts hold what every job read.
func TestCustosOwnDirectoriesInsideTheWorkspace(t *testing.T) {
	sb := realSandbox(t)
	home := canonTemp(t) // the workspace is the home directory
	state := filepath.Join(home, ".local", "state", "custos")
	cfg := filepath.Join(home, ".config")
	writeTree(t, home, map[string]string{
		".local/state/custos/tls/client-key.pem": "PRIVATE KEY",
		".config/custos/settings.json":           `{}`,
		"project/main.go":                        "package main",
	})
	s := &Settings{UserConfigDir: cfg, StateDir: state, Sandbox: sb}
	res, err := s.LoadSettings(context.Background(), api.LoadSettingsRequest{Workspace: home, JobID: "j"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{state, filepath.Join(cfg, "custos")}, res.Env.Private)
	p, err := approval.Compile(res.Settings, res.Env)
	require.NoError(t, err)

	for _, c := range []approval.Call{
		{Tool: "Read", Input: json.RawMessage(`{"file_path":".local/state/custos/tls/client-key.pem"}`)},
		{Tool: "Write", Input: json.RawMessage(`{"file_path":".config/custos/settings.json","content":"{}"}`)},
		{Tool: "Edit", Input: json.RawMessage(`{"file_path":".local/state/custos/x","old_string":"a","new_string":"b"}`)},
		{Tool: "Bash", Input: json.RawMessage(`{"command":"cat .local/state/custos/tls/client-key.pem"}`)},
	} {
		v := p.Evaluate(c, approval.ModeBypass)
		assert.Equal(t, approval.Deny, v.Decision, "%s %s even in bypass mode: %+v", c.Tool, c.Input, v)
	}
	v := p.Evaluate(approval.Call{Tool: "Read", Input: json.RawMessage(`{"file_path":"project/main.go"}`)}, approval.ModeDefault)
	assert.Equal(t, approval.Allow, v.Decision, "the rest of the workspace is as before")

	// A command the policy let through still sees nothing there.
	readDeny, editDeny := p.SandboxDenies()
	tools := &Tools{Sandbox: sb}
	out, err := tools.Bash(context.Background(), api.ToolRequest{Workspace: home, CallID: "b",
		Input:    json.RawMessage(`{"command":"cat .local/state/custos/tls/client-key.pem; ls -A .config/custos; echo done"}`),
		ReadDeny: readDeny, EditDeny: editDeny})
	require.NoError(t, err)
	assert.NotContains(t, out.Output, "PRIVATE KEY")
	assert.NotContains(t, out.Output, "settings.json")
	assert.Contains(t, out.Output, "done")
	g, err := tools.Glob(context.Background(), api.ToolRequest{Workspace: home, Input: json.RawMessage(`{"pattern":"**/*"}`), ReadDeny: readDeny})
	require.NoError(t, err)
	assert.NotContains(t, g.Output, "client-key.pem")
	assert.Contains(t, g.Output, "project/main.go")
}
