package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/testenv"
)

// A worker in another process on this machine (go run ./worker with its
// embedded server and Web UI): starter run, its client certificate in that
// server's TLS directory, prints the model's answer as it is written,
// relayed through the server's approval inbox, and once.
func TestRemoteWorkerStreamsToTheTerminal(t *testing.T) {
	if usingExternalServer() {
		t.Skip("runs a worker with its own embedded server and Web UI, which " + externalAddrEnv + " replaces")
	}
	words := make([]string, 40)
	for i := range words {
		words[i] = fmt.Sprintf("w%02d", i)
	}
	text := "STREAMED " + strings.Join(words, " ") + " WORD-END"
	_, base := testenv.StartModel(t, demomodel.Script(demomodel.Reply{
		Message: demomodel.Say(text).Message, ChunkSize: 8, ChunkDelay: 150 * time.Millisecond}))
	db := filepath.Join(t.TempDir(), "temporal.db")
	port, uiPort := freePort(t), freePort(t)
	env := append(testenv.ModelEnv(base), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_STATE_HOME="+testenv.StateDir(), "TEMPORAL_ADDRESS=")
	startWorkerProc(t, buildWorker(t), env, "--db", db, "--port", fmt.Sprint(port), "--ui-port", fmt.Sprint(uiPort))
	certs := devserver.TLSFilesIn(filepath.Join(filepath.Dir(db), "tls"))
	dialEventually(t, fmt.Sprintf("127.0.0.1:%d", port), certs)
	// The Web UI (and the inbox behind it) comes up after the frontend:
	// wait for it, as a person starting a second command would have.
	require.Eventually(t, func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", uiPort))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	}, pendingWait, 50*time.Millisecond, "the worker's Web UI never answered")

	outFile := filepath.Join(t.TempDir(), "out")
	out, err := os.Create(outFile)
	require.NoError(t, err)
	defer out.Close()
	ws := testenv.Workspace(t)
	cmd := exec.Command(buildStarter(t), "run", "--once", "--workspace", ws, "stream it to me")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), fmt.Sprintf("TEMPORAL_ADDRESS=127.0.0.1:%d", port),
		"TEMPORAL_TLS_CLIENT_CERT_PATH="+certs.ClientCert, "TEMPORAL_TLS_CLIENT_KEY_PATH="+certs.ClientKey,
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH="+certs.CA, "TEMPORAL_TLS_SERVER_NAME="+devserver.ServerName)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// The beginning of the answer is on the terminal while its end has not
	// been written yet: it streams.
	var partial string
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(outFile)
		partial = string(b)
		return strings.Contains(partial, "STREAMED")
	}, pendingWait, 20*time.Millisecond, "the answer never showed")
	assert.NotContains(t, partial, "WORD-END", "the answer was printed whole, not as it was written")

	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(2 * time.Minute):
		t.Fatal("starter run did not return")
	}
	b, err := os.ReadFile(outFile)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(b), "WORD-END"), "the answer is printed once:\n%s", b)
}
