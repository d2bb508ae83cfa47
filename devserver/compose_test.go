package devserver

// Docker is not available where these tests run, so the deployment files are
// checked by loading them the way `docker compose` does (compose-go, with
// schema validation) and by reading the Dockerfile's instructions.

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/require"
)

func loadCompose(t *testing.T, file string, env ...string) (*types.Project, error) {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{file},
		cli.WithWorkingDirectory(filepath.Dir(file)),
		// A fixed environment: the result must not depend on the shell the
		// test runs in.
		cli.WithEnv(env),
	)
	require.NoError(t, err)
	return cli.ProjectFromOptions(context.Background(), opts)
}

func TestComposeFile(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	p, err := loadCompose(t, filepath.Join(root, "docker-compose.yml"),
		"OPENAI_API_KEY=sk-from-host", "OPENAI_BASE_URL=http://llm.internal/v1")
	require.NoError(t, err)
	require.Equal(t, "custos", p.Name)

	for _, name := range []string{"postgresql", "temporal-admin-tools", "temporal", "temporal-create-namespace", "temporal-ui", "custos-worker"} {
		_, err := p.GetService(name)
		require.NoError(t, err, "service %s", name)
	}

	pg, _ := p.GetService("postgresql")
	require.True(t, strings.HasPrefix(pg.Image, "postgres:16"), pg.Image)
	require.NotNil(t, pg.HealthCheck, "temporal waits for postgres to be healthy")

	// Temporal's recommended self-hosted layout: a temporalio/admin-tools
	// schema step, then temporalio/server of the release go.mod embeds
	// (auto-setup is deprecated), then a namespace step.
	serverVersion := goModVersion(t, filepath.Join(root, "go.mod"), "go.temporal.io/server")
	schema, _ := p.GetService("temporal-admin-tools")
	require.Equal(t, "temporalio/admin-tools:"+serverVersion, schema.Image)
	require.Equal(t, types.ServiceConditionHealthy, schema.DependsOn["postgresql"].Condition)
	require.Equal(t, "postgres12", *schema.Environment["SQL_PLUGIN"])
	script := strings.Join(schema.Command, " ")
	for _, want := range []string{"temporal-sql-tool", "setup-schema -v 0.0", "update-schema", "postgresql/v12/$schema/versioned", "temporal_visibility"} {
		require.Contains(t, script, want)
	}

	temporal, _ := p.GetService("temporal")
	require.Equal(t, "temporalio/server:"+serverVersion, temporal.Image)
	require.Equal(t, types.ServiceConditionCompletedSuccessfully, temporal.DependsOn["temporal-admin-tools"].Condition)
	require.Equal(t, "postgres12", *temporal.Environment["DB"])
	require.Equal(t, "postgresql", *temporal.Environment["POSTGRES_SEEDS"])
	require.NotNil(t, temporal.HealthCheck, "the namespace step, UI and worker wait for a healthy server")
	require.Len(t, temporal.Configs, 1, "dynamic config")
	dyn := p.Configs[temporal.Configs[0].Source]
	require.Equal(t, *temporal.Environment["DYNAMIC_CONFIG_FILE_PATH"], temporal.Configs[0].Target)
	require.Contains(t, dyn.Content, "system.enableDeploymentVersions")

	ns, _ := p.GetService("temporal-create-namespace")
	require.Equal(t, "temporalio/admin-tools:"+serverVersion, ns.Image)
	require.Equal(t, types.ServiceConditionHealthy, ns.DependsOn["temporal"].Condition)
	require.Contains(t, strings.Join(ns.Command, " "), "namespace create -n default --retention 168h")

	ui, _ := p.GetService("temporal-ui")
	require.True(t, strings.HasPrefix(ui.Image, "temporalio/ui:"), ui.Image)
	require.Equal(t, "temporal:7233", *ui.Environment["TEMPORAL_ADDRESS"])
	require.Len(t, ui.Ports, 1)
	require.Equal(t, uint32(8080), ui.Ports[0].Target)
	require.Equal(t, "8080", ui.Ports[0].Published)

	w, _ := p.GetService("custos-worker")
	require.NotNil(t, w.Build, "worker is built from the repo")
	require.Equal(t, root, w.Build.Context)
	require.Equal(t, "Dockerfile", w.Build.Dockerfile)
	require.FileExists(t, filepath.Join(w.Build.Context, w.Build.Dockerfile))
	require.Equal(t, types.ServiceConditionCompletedSuccessfully, w.DependsOn["temporal-create-namespace"].Condition)
	require.Equal(t, "temporal:7233", *w.Environment["TEMPORAL_ADDRESS"])
	// OPENAI_* come from the host environment, unchanged; unset ones stay
	// unset (nil) rather than becoming empty strings.
	require.Equal(t, "sk-from-host", *w.Environment["OPENAI_API_KEY"])
	require.Equal(t, "http://llm.internal/v1", *w.Environment["OPENAI_BASE_URL"])
	require.Contains(t, w.Environment, "OPENAI_MODEL")
	require.Nil(t, w.Environment["OPENAI_MODEL"])
	require.Equal(t, "/workspace", w.WorkingDir)
	var ws *types.ServiceVolumeConfig
	for i := range w.Volumes {
		if w.Volumes[i].Target == "/workspace" {
			ws = &w.Volumes[i]
		}
	}
	require.NotNil(t, ws, "workspace volume")
	require.Equal(t, filepath.Join(root, "workspace"), ws.Source, "default workspace is ./workspace")
}

// goModVersion is module's version in the go.mod at path, without its "v".
func goModVersion(t *testing.T, path, module string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(module) + `\s+v(\S+)`).FindSubmatch(b)
	require.NotNil(t, m, "%s in go.mod", module)
	return string(m[1])
}

// TestComposeValidationIsOn guards the test above: if loading stopped
// validating against the Compose spec, a typo'd file would pass too.
func TestComposeValidationIsOn(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "docker-compose.yml")
	require.NoError(t, os.WriteFile(bad, []byte("services:\n  x:\n    image: busybox\n    imagee: typo\n"), 0o600))
	_, err := loadCompose(t, bad)
	require.ErrorContains(t, err, "imagee")
}

// dockerInstructions returns the Dockerfile's instructions with line
// continuations joined and comments dropped, e.g. "RUN apt-get ...".
func dockerInstructions(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	return out
}

func TestDockerfile(t *testing.T) {
	ins := dockerInstructions(t, filepath.Join("..", "Dockerfile"))
	goBuildWorker := regexp.MustCompile(`\bgo build\b[^&;]*\s\./worker(\s|$)`)
	aptBubblewrap := regexp.MustCompile(`\bapt-get install\b[^&;]*\bbubblewrap\b`)
	var builds, installs, stages int
	var user string
	for _, in := range ins {
		switch {
		case strings.HasPrefix(in, "FROM "):
			stages++
		case strings.HasPrefix(in, "USER "):
			user = strings.TrimSpace(strings.TrimPrefix(in, "USER "))
		case strings.HasPrefix(in, "RUN "):
			if goBuildWorker.MatchString(in) {
				builds++
			}
			if aptBubblewrap.MatchString(in) {
				installs++
			}
		}
	}
	require.Equal(t, 1, builds, "a RUN builds ./worker")
	require.Equal(t, 1, installs, "a RUN installs bubblewrap")
	require.GreaterOrEqual(t, stages, 2, "multi-stage: builder and runtime")
	require.NotEmpty(t, user, "runtime runs as a non-root user")
	require.NotContains(t, []string{"root", "0", "0:0"}, user)
}
