package devserver

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"time"

	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	sqliteschema "go.temporal.io/server/schema/sqlite"
)

// portSet is every port the embedded server and UI listen on. Metrics and
// pprof stay off: nothing in custos reads them, and fewer ports means fewer
// chances to collide with something else on the machine. The frontend's
// HTTP API is on because the server warns at every start without it (Nexus
// needs it), and it is handy for curl-level debugging.
type portSet struct {
	frontend, frontendHTTP, history, matching, worker int
	ui                                                int // 0 when the UI is disabled
	// uiBackend is the ui-server's own port (mTLS, only the UI's gate
	// dials it); the public ui port is the gate's.
	uiBackend int
}

// allocatePorts resolves the requested ports (0 = any free port, uiPort -1 =
// no UI) into a concrete, collision-free set. All listeners are held open
// together while choosing so the kernel cannot hand out the same port
// twice; they are closed just before the server binds them. An explicitly
// requested port that is busy is reported here, with a clear error, instead
// of deep inside server startup (or, for the UI, as an os.Exit from the UI
// server's logger).
func allocatePorts(ip string, port, uiPort int) (portSet, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	take := func(what string, want int) (int, error) {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(want)))
		if err != nil {
			return 0, fmt.Errorf("devserver: %s port %d on %s is not available: %w", what, want, ip, err)
		}
		held = append(held, l)
		return l.Addr().(*net.TCPAddr).Port, nil
	}

	var ps portSet
	var err error
	if ps.frontend, err = take("frontend", port); err != nil {
		return ps, err
	}
	if uiPort != -1 {
		if ps.ui, err = take("UI", uiPort); err != nil {
			return ps, err
		}
		if ps.uiBackend, err = take("UI backend", 0); err != nil {
			return ps, err
		}
	}
	for _, p := range []*int{&ps.frontendHTTP, &ps.history, &ps.matching, &ps.worker} {
		if *p, err = take("internal service", 0); err != nil {
			return ps, err
		}
	}
	return ps, nil
}

// prepareDatabase returns the SQLite persistence config, creating the schema
// if DBFile is new and the namespace if it is missing.
func prepareDatabase(o Options) (*config.SQL, error) {
	conf := &config.SQL{PluginName: sqliteplugin.PluginName}
	if o.DBFile == "" {
		// The SQLite plugin creates the schema itself for memory mode. The
		// plugin pools connections per DSN for the life of the process, so a
		// random name keeps two in-memory servers in one process apart.
		conf.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
		conf.DatabaseName = "custos-" + strconv.FormatUint(rand.Uint64(), 36)
	} else {
		path := o.DBFile // made absolute by Start
		conf.ConnectAttributes = map[string]string{"mode": "rwc"}
		conf.DatabaseName = path
		if err := setupIfNew(conf, path); err != nil {
			return nil, err
		}
	}

	// The namespace is written straight into the database before the server
	// starts (as the CLI does) so it exists the moment the frontend is up;
	// registering it through the API would race with the namespace cache.
	// Retention is 24h, the minimum the server accepts.
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, o.Namespace, false, o.SearchAttributes)
	if err != nil {
		return nil, fmt.Errorf("devserver: namespace %q: %w", o.Namespace, err)
	}
	if err := sqliteschema.CreateNamespaces(conf, ns); err != nil {
		return nil, fmt.Errorf("devserver: creating namespace %q: %w", o.Namespace, err)
	}
	return conf, nil
}

// setupIfNew creates the schema when path does not exist yet. An existing
// file is trusted to hold a schema from an earlier run: setting it up again
// would fail on existing tables.
func setupIfNew(conf *config.SQL, path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("devserver: checking DB file: %w", err)
	}
	// Create the file ourselves so it is private (0600): histories hold
	// prompts, code and command output. SQLite happily adopts an empty file.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("devserver: creating DB file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("devserver: creating DB file: %w", err)
	}
	if err := sqliteschema.SetupSchema(conf); err != nil {
		// Without this, the half-initialised file would be taken for a
		// complete one on the next start.
		_ = os.Remove(path)
		return fmt.Errorf("devserver: setting up schema in %s: %w", path, err)
	}
	return nil
}

func buildConfig(ip string, ps portSet, sqlConf, visConf *config.SQL, certs TLSFiles) *config.Config {
	frontend := net.JoinHostPort(ip, strconv.Itoa(ps.frontend))
	service := func(port int) config.Service {
		var s config.Service
		s.RPC.GRPCPort = port
		s.RPC.BindOnIP = ip
		return s
	}

	var conf config.Config
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = ip

	// SQLite keeps both in one store (one file, one connection pool);
	// PostgreSQL has a database for each, as Temporal's schema tool sets up.
	store, visStore := "sqlite-default", "sqlite-default"
	if visConf != sqlConf {
		store, visStore = "default", "visibility"
	}
	conf.Persistence.DefaultStore = store
	conf.Persistence.VisibilityStore = visStore
	// One shard: a single process gains nothing from more, and each shard
	// costs goroutines and SQLite writes.
	conf.Persistence.NumHistoryShards = 1
	conf.Persistence.DataStores = map[string]config.DataStore{store: {SQL: sqlConf}, visStore: {SQL: visConf}}

	conf.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             frontend,
				HTTPAddress:            net.JoinHostPort(ip, strconv.Itoa(ps.frontendHTTP)),
				// ClusterID left empty: the server generates one on first
				// start and keeps the stored one afterwards.
			},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	frontendService := service(ps.frontend)
	frontendService.RPC.HTTPPort = ps.frontendHTTP
	conf.Services = map[string]config.Service{
		"frontend": frontendService,
		"history":  service(ps.history),
		"matching": service(ps.matching),
		"worker":   service(ps.worker),
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	// The server's internal worker service (system workflows such as
	// namespace deletion) dials the frontend through this address.
	conf.PublicClient.HostPort = frontend
	conf.Global.TLS = tlsConfig(certs)
	return &conf
}

// tlsConfig requires mutual TLS on every port of the server, not only the
// frontend: the history and matching ports are on loopback too, and their
// APIs can signal a workflow just as well. The system worker (inside the
// server) dials the frontend with the owner's client certificate; history and
// matching dial each other with the server certificate.
func tlsConfig(f TLSFiles) config.RootTLS {
	server := config.ServerTLS{
		CertFile:          f.ServerCert,
		KeyFile:           f.ServerKey,
		ClientCAFiles:     []string{f.CA},
		RequireClientAuth: true,
	}
	client := config.ClientTLS{ServerName: ServerName, RootCAFiles: []string{f.CA}}
	return config.RootTLS{
		Internode: config.GroupTLS{Server: server, Client: client},
		Frontend:  config.GroupTLS{Server: server, Client: client},
		SystemWorker: config.WorkerTLS{
			CertFile: f.ClientCert,
			KeyFile:  f.ClientKey,
			Client:   client,
		},
	}
}

// dynamicConfig mirrors the dev-server defaults of the Temporal CLI, keeping
// the ones that matter for a single-user, single-process server.
func dynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		// Search attributes and Nexus endpoints become visible immediately
		// instead of after a cache refresh; they change rarely, so the extra
		// reads are cheap and tests don't need to sleep.
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): true,
		dynamicconfig.ForceNexusEndpointRefreshOnRead.Key():         true,
		// With the caches above bypassed, raise the persistence rate limits
		// in the CLI's proportions so they are never what slows a job down.
		dynamicconfig.FrontendPersistenceMaxQPS.Key(): 10000,
		dynamicconfig.HistoryPersistenceMaxQPS.Key():  45000,
		// The UI and `starter status` list workflows often; the default
		// visibility rate limit is sized for shared clusters.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		// Mutable-state cache: enough for every open job on one machine.
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): 8096,
		// The transfer queue hands every new workflow and activity task to
		// matching; at the default 20 reads a second a job's every step
		// waited on a 50 ms grid (an activity's round trip about 41 ms, a
		// turn 155). On one machine the reads are cheap and happen only
		// when there is work.
		dynamicconfig.TransferProcessorMaxPollRPS.Key(): 1000,
		// Workflow updates are on by default in v1.32; pinned so a default
		// change cannot silently break the approval flow if it uses them.
		dynamicconfig.FrontendEnableUpdateWorkflowExecution.Key():              true,
		dynamicconfig.FrontendEnableUpdateWorkflowExecutionAsyncAccepted.Key(): true,
	}
}
