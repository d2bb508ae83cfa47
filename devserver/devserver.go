// Package devserver runs a real Temporal server (go.temporal.io/server) and
// its Web UI inside the current process, backed by SQLite.
//
// It is the no-Docker default for custos: `worker` starts it when no
// TEMPORAL_ADDRESS is given, and end-to-end tests start it on free ports.
// It follows what `temporal server start-dev` does (temporalio/cli
// internal/devserver), adapted to server v1.32.2: all four services in one
// process with static membership (so no gossip ports), one history shard,
// SQLite for both persistence and visibility, and the namespace pre-created
// directly in the database before the server starts.
//
// Loopback is not a boundary between the users of one machine: every port
// requires mutual TLS with certificates generated into the owner's private
// state directory (see certs.go), and the Web UI sits behind a gate that
// wants a one-time token, then a session cookie (see uigate.go). It still
// only binds loopback addresses.
package devserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/temporal"

	"github.com/custos-dev/custos/internal/statedir"
)

// The standard ports of `temporal server start-dev`. Options.Port and
// Options.UIPort use 0 for "pick a free port" (what tests want), so a caller
// that wants the well-known ports passes these explicitly.
const (
	DefaultPort   = 7233
	DefaultUIPort = 8233
)

const (
	defaultIP        = "127.0.0.1"
	defaultNamespace = "default"
	// clusterName is stored in the database on first start; it must stay the
	// same across restarts on one DB file.
	clusterName = "active"
	// readyTimeout bounds how long Start waits for the frontend to serve the
	// namespace when the caller's context has no deadline of its own.
	readyTimeout = 60 * time.Second
)

// Options configures Start. The zero value is an in-memory server with its
// UI, both on free loopback ports.
type Options struct {
	// DBFile is the SQLite database file. "" keeps everything in memory
	// (lost on Stop). A file that does not exist yet is created with the
	// schema; an existing file is reused as is, workflows and all.
	DBFile string
	// IP to bind; must be a loopback address. Default 127.0.0.1.
	IP string
	// Port is the frontend gRPC port (DefaultPort is 7233); 0 picks a free
	// port.
	Port int
	// UIPort is the Web UI HTTP port (DefaultUIPort is 8233); 0 picks a
	// free port; -1 disables the UI.
	UIPort int
	// Namespace is created if missing. Default "default".
	Namespace string
	// Retention is how long the server keeps an ended job's history (at
	// least 24h, the server's minimum; 0: DefaultRetention). It is set on
	// the namespace at every start, so a changed setting applies to an
	// existing database too. Past it, `starter status` and `starter
	// audit` read the job's files on its host.
	Retention time.Duration
	// Logger receives the server's logs. nil logs to stderr. Either way only
	// warnings and errors are passed through: the server is very chatty.
	Logger *slog.Logger
	// TLSDir holds the server's certificates (see EnsureCerts): created
	// 0700 on first start. Default: "tls" beside DBFile; for an in-memory
	// server a temporary directory, removed by Stop.
	TLSDir string
	// SearchAttributes are custom search attributes registered on the
	// namespace when it is created (as `temporal server start-dev
	// --search-attribute` does), so the UI and List filters can use them.
	// They are not added to a namespace that already exists in DBFile.
	SearchAttributes map[string]enumspb.IndexedValueType
	// Postgres, when set, replaces SQLite (DBFile must then be empty):
	// see postgres.go.
	Postgres *Postgres
}

// ErrDBInUse is returned (wrapped) by Start when another server, in this
// process or another, is running on the same DBFile.
var ErrDBInUse = errors.New("database file in use")

// Server is a running embedded Temporal server. Stop it when done.
type Server struct {
	server       temporal.Server
	dbLock       *os.File // held while running; nil for in-memory
	ui           *uiserver.Server
	uiDone       chan struct{} // closed when the UI's Start goroutine returns
	logFloor     *slog.LevelVar
	frontendAddr string
	uiAddr       string
	uiGate       *uiGate
	uiLogin      string       // login URL with the start's one-time token
	uiHTTP       *http.Server // the gate's server
	certs        TLSFiles
	clientTLS    *tls.Config
	tempTLSDir   string // removed by Stop
	ports        portSet

	stopOnce sync.Once
	stopErr  error
}

// FrontendAddr is the frontend gRPC host:port, e.g. "127.0.0.1:7233".
func (s *Server) FrontendAddr() string { return s.frontendAddr }

// UIAddr is the Web UI base URL, e.g. "http://127.0.0.1:8233", or "" when
// the UI is disabled. It answers 401 until a browser has used a login URL.
func (s *Server) UIAddr() string { return s.uiAddr }

// UILoginURL is the URL to print for the owner: UIAddr with this start's
// one-time token. "" when the UI is disabled.
func (s *Server) UILoginURL() string { return s.uiLogin }

// NewUILoginURL mints another one-time login URL.
func (s *Server) NewUILoginURL() (string, error) {
	if s.uiGate == nil {
		return "", errors.New("devserver: the Web UI is disabled")
	}
	tok, err := s.uiGate.newToken()
	if err != nil {
		return "", err
	}
	return s.uiAddr + "/?" + tokenParam + "=" + tok, nil
}

// Mount serves h under prefix (such as "/custos/", with both slashes) on
// the Web UI's address, behind the same one-time link and session cookie
// as the UI, instead of proxying those paths to the UI. It is how the
// worker serves its approval inbox on the embedded server's machine; h is
// given the request as the browser sent it, the gate's cookie included.
// A later Mount replaces an earlier one.
func (s *Server) Mount(prefix string, h http.Handler) error {
	if s.uiGate == nil {
		return errors.New("devserver: the Web UI is disabled, so there is nothing to mount on")
	}
	if !strings.HasPrefix(prefix, "/") || !strings.HasSuffix(prefix, "/") || len(prefix) < 3 {
		return fmt.Errorf("devserver: mount prefix %q: want a path like /custos/", prefix)
	}
	s.uiGate.mounted.Store(&mount{prefix: prefix, handler: h})
	return nil
}

// SessionCookie is the name of the gate's session cookie ("" with the UI
// disabled): a mounted handler binds per-session secrets to its value.
func (s *Server) SessionCookie() string {
	if s.uiGate == nil {
		return ""
	}
	return s.uiGate.cookie
}

// NewLoginURLAt mints another one-time login URL that lands on path (for
// a mounted handler) instead of the UI's start page.
func (s *Server) NewLoginURLAt(path string) (string, error) {
	u, err := s.NewUILoginURL()
	if err != nil {
		return "", err
	}
	return strings.Replace(u, "/?"+tokenParam+"=", loginPath(path)+"?"+tokenParam+"=", 1), nil
}

// loginPath is path as a login URL's path: absolute, and never "//host".
func loginPath(path string) string { return "/" + strings.TrimLeft(path, "/\\") }

// TLSFiles are the certificate files a client needs (with ServerName).
func (s *Server) TLSFiles() TLSFiles { return s.certs }

// ClientTLS is a TLS configuration that connects to this server as its
// owner; each call returns a new copy.
func (s *Server) ClientTLS() *tls.Config { return s.clientTLS.Clone() }

// DefaultDBFile returns the default database path,
// $XDG_STATE_HOME/custos/temporal.db or ~/.local/state/custos/temporal.db,
// creating its directory (0700: workflow histories hold prompts and code).
func DefaultDBFile() (string, error) {
	dir, err := DefaultStateDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("devserver: creating state directory: %w", err)
	}
	return filepath.Join(dir, "temporal.db"), nil
}

// DefaultStateDir is $XDG_STATE_HOME/custos or ~/.local/state/custos; it is
// not created here.
func DefaultStateDir() (string, error) { return statedir.Dir() }

// DefaultTLSDir is where the server on the default DB file keeps its
// certificates (DefaultStateDir/tls), and so where clients look for them.
func DefaultTLSDir() (string, error) {
	dir, err := DefaultStateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "tls"), nil
}

// prepareCerts finds or makes the certificate set for o; tempDir is set
// when it is a temporary one that Stop must remove.
func prepareCerts(o Options) (certs TLSFiles, tempDir string, err error) {
	dir := o.TLSDir
	switch {
	case dir != "":
	case o.DBFile != "":
		dir = filepath.Join(filepath.Dir(o.DBFile), "tls")
	default:
		if tempDir, err = os.MkdirTemp("", "custos-devserver-tls-"); err != nil {
			return certs, "", fmt.Errorf("devserver: certificate directory: %w", err)
		}
		dir = tempDir
	}
	if certs, err = EnsureCerts(dir, time.Now()); err != nil {
		if tempDir != "" {
			_ = os.RemoveAll(tempDir)
		}
		return certs, "", err
	}
	return certs, tempDir, nil
}

// Start starts the server and the UI and returns once the frontend serves
// the namespace, so a client can connect immediately. ctx bounds the wait
// for readiness (60 s if it has no deadline); the server runs until Stop.
func Start(ctx context.Context, o Options) (*Server, error) {
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("devserver: %w", err)
	}

	dbLock, err := claimDBFile(&o)
	if err != nil {
		return nil, err
	}
	// Until the Server owns the lock, release it on every error return.
	started := false
	defer func() {
		if !started && dbLock != nil {
			_ = dbLock.Close()
		}
	}()

	sqlConf, visConf, err := preparePersistence(o)
	if err != nil {
		return nil, err
	}

	certs, tempTLSDir, err := prepareCerts(o)
	if err != nil {
		return nil, err
	}
	defer func() {
		if !started && tempTLSDir != "" {
			_ = os.RemoveAll(tempTLSDir)
		}
	}()
	clientTLS, err := certs.ClientTLS()
	if err != nil {
		return nil, err
	}

	// Ports last: between choosing a free port and the server binding it,
	// anything else on the machine could take it, so keep that window short.
	ports, err := allocatePorts(o.IP, o.Port, o.UIPort)
	if err != nil {
		return nil, err
	}

	logFloor := new(slog.LevelVar)
	logFloor.Set(slog.LevelWarn)
	logger := serverLogger{log: o.Logger, floor: logFloor}

	srv, err := newTemporalServer(o.IP, ports, buildConfig(o.IP, ports, sqlConf, visConf, certs), logger)
	if err != nil {
		return nil, err
	}

	s := &Server{
		server:       srv,
		dbLock:       dbLock,
		logFloor:     logFloor,
		frontendAddr: net.JoinHostPort(o.IP, strconv.Itoa(ports.frontend)),
		certs:        certs,
		clientTLS:    clientTLS,
		tempTLSDir:   tempTLSDir,
		ports:        ports,
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("devserver: starting server: %w", err)
	}
	started = true // from here on, s.Stop releases the lock
	if err := s.ready(ctx, o); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// preparePersistence is the SQL configuration of the stores: PostgreSQL
// when o names it (visibility in its own database), else SQLite for both.
func preparePersistence(o Options) (sqlConf, visConf *config.SQL, err error) {
	if o.Postgres != nil {
		return preparePostgres(o)
	}
	sqlConf, err = prepareDatabase(o)
	return sqlConf, sqlConf, err
}

// ready waits for the frontend to serve the namespace, then starts the Web
// UI (when it has a port) and waits for it too.
func (s *Server) ready(ctx context.Context, o Options) error {
	if err := waitFrontend(ctx, s.frontendAddr, o.Namespace, s.clientTLS); err != nil {
		return err
	}
	if err := setRetention(ctx, s.frontendAddr, o.Namespace, o.Retention, s.clientTLS); err != nil {
		return err
	}
	if s.ports.ui > 0 {
		return s.startUI(ctx, o, s.ports)
	}
	return nil
}

// claimDBFile makes o.DBFile absolute, creates its directory and takes the
// lock that keeps a second server off the same file (nil with no file).
func claimDBFile(o *Options) (*os.File, error) {
	if o.DBFile == "" {
		return nil, nil
	}
	var err error
	if o.DBFile, err = filepath.Abs(o.DBFile); err != nil {
		return nil, fmt.Errorf("devserver: resolving DB file: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(o.DBFile), 0o700); err != nil {
		return nil, fmt.Errorf("devserver: creating DB directory: %w", err)
	}
	return lockDB(o.DBFile)
}

// newTemporalServer builds (does not start) the server with every service
// on this host, with the authorizer the config names.
func newTemporalServer(ip string, ports portSet, conf *config.Config, logger serverLogger) (temporal.Server, error) {
	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("devserver: creating authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("devserver: creating claim mapper: %w", err)
	}
	hostPort := func(port int) static.Hosts {
		return static.SingleLocalHost(net.JoinHostPort(ip, strconv.Itoa(port)))
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		// Static membership: every service is on this host, so no ringpop
		// gossip and no membership ports.
		temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: hostPort(ports.frontend),
			primitives.HistoryService:  hostPort(ports.history),
			primitives.MatchingService: hostPort(ports.matching),
			primitives.WorkerService:   hostPort(ports.worker),
		}),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynamicConfig()),
	)
	if err != nil {
		return nil, fmt.Errorf("devserver: creating server: %w", err)
	}
	return srv, nil
}

// Stop stops the UI and the server. It is safe to call more than once and
// returns the first call's result every time.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		// The server logs a burst of warnings while its services wind down
		// (lost shard ownership, canceled polls); they are expected here.
		s.logFloor.Set(slog.LevelError)
		if s.uiHTTP != nil {
			_ = s.uiHTTP.Close()
			s.forgetUIAddress()
		}
		if s.ui != nil {
			s.ui.Stop()
			<-s.uiDone
		}
		if err := s.server.Stop(); err != nil {
			s.stopErr = fmt.Errorf("devserver: stopping server: %w", err)
		}
		// Only now may another server open the file.
		if s.dbLock != nil {
			_ = s.dbLock.Close()
		}
		if s.tempTLSDir != "" {
			_ = os.RemoveAll(s.tempTLSDir)
		}
	})
	return s.stopErr
}

func (o *Options) setDefaults() error {
	if o.IP == "" || o.IP == "localhost" {
		// The server needs an IP, not a name, for its bind and host info.
		o.IP = defaultIP
	}
	ip := net.ParseIP(o.IP)
	if ip == nil {
		return fmt.Errorf("devserver: invalid IP %q", o.IP)
	}
	if !ip.IsLoopback() {
		return fmt.Errorf("devserver: IP %s is not a loopback address; the embedded server has no authentication", o.IP)
	}
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("devserver: invalid port %d", o.Port)
	}
	if o.UIPort < -1 || o.UIPort > 65535 {
		return fmt.Errorf("devserver: invalid UI port %d", o.UIPort)
	}
	if o.Namespace == "" {
		o.Namespace = defaultNamespace
	}
	if o.Postgres != nil && o.DBFile != "" {
		return errors.New("devserver: DBFile and Postgres are mutually exclusive")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return nil
}
