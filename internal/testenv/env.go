package testenv

import (
	"fmt"
	"os"
	"path/filepath"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/devserver"
)

// Env is one embedded server with a client, a scripted model and custos
// workers on it: everything a job needs. A server takes seconds to start, so
// a package's tests may share one, started by the first test that needs it
// and stopped in TestMain; it belongs to no single test, so its functions
// return errors instead of failing one.
type Env struct {
	Server  *devserver.Server
	Client  client.Client
	Model   *demomodel.Server
	Workers *app.Workers
	// Dir holds the server's SQLite file and the workers' user config
	// directory; Stop removes it.
	Dir string
}

// StartEnv starts an Env whose model answers with model, in a new temporary
// directory. On error, what had started is stopped again.
func StartEnv(model demomodel.Handler) (*Env, error) {
	e := &Env{}
	if err := e.start(model); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

func (e *Env) start(model demomodel.Handler) error {
	dir, err := os.MkdirTemp("", "custos-testenv-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	e.Dir = dir
	e.Server, err = startServer(devserver.Options{DBFile: filepath.Join(dir, "temporal.db"), UIPort: -1})
	if err != nil {
		return err
	}
	e.Model = demomodel.New(model)
	base, err := e.Model.Start("127.0.0.1:0")
	if err != nil {
		e.Model = nil
		return fmt.Errorf("start the scripted model: %w", err)
	}
	e.Client, err = client.Dial(ClientOptions(e.Server.FrontendAddr(), e.Server.ClientTLS()))
	if err != nil {
		return fmt.Errorf("dial %s: %w", e.Server.FrontendAddr(), err)
	}
	userConfig := filepath.Join(dir, "config")
	if err := os.MkdirAll(userConfig, 0o755); err != nil {
		return fmt.Errorf("config dir: %w", err)
	}
	e.Workers, err = app.Start(e.Client, WorkerOptions(base, app.Options{UserConfigDir: userConfig}))
	if err != nil {
		return fmt.Errorf("start workers: %w", err)
	}
	return nil
}

// Stop stops what runs (the workers first, the server last) and removes Dir.
// A nil Env (StartEnv never called, or failed) is fine.
func (e *Env) Stop() {
	if e == nil {
		return
	}
	if e.Workers != nil {
		e.Workers.Stop()
	}
	if e.Client != nil {
		e.Client.Close()
	}
	if e.Model != nil {
		e.Model.Close()
	}
	if e.Server != nil {
		e.Server.Stop()
	}
	if e.Dir != "" {
		_ = os.RemoveAll(e.Dir)
	}
}
