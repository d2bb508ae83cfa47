// Command pgserver runs the embedded Temporal server (the same
// go.temporal.io/server as devserver, same mutual TLS) on PostgreSQL instead
// of SQLite, for the PostgreSQL end-to-end run and benchmarks
// (.ci/postgres-e2e). The schema must already be set up with Temporal's
// temporal-sql-tool. Clients connect as a deployed worker does:
// TEMPORAL_ADDRESS plus TEMPORAL_TLS_CLIENT_CERT_PATH, _CLIENT_KEY_PATH,
// _SERVER_CA_CERT_PATH and _SERVER_NAME for the files in --tls-dir.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/custos-dev/custos/devserver"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pgserver:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		pgAddr  = flag.String("pg", "", "PostgreSQL host:port (loopback)")
		pgUser  = flag.String("pg-user", "temporal", "PostgreSQL user (password: PGPASSWORD)")
		pgDB    = flag.String("pg-db", "temporal", "database of the Temporal schema")
		pgVisDB = flag.String("pg-visibility-db", "temporal_visibility", "database of the visibility schema")
		port    = flag.Int("port", 0, "frontend port (0: any free port)")
		tlsDir  = flag.String("tls-dir", "", "directory for the server's and the owner's certificates (required)")
		addrOut = flag.String("addr-file", "", "write the frontend host:port here once it serves")
	)
	flag.Parse()
	if *pgAddr == "" || *tlsDir == "" {
		return fmt.Errorf("--pg and --tls-dir are required")
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	srv, err := devserver.Start(sctx, devserver.Options{
		Port: *port, UIPort: -1, TLSDir: *tlsDir, Logger: logger,
		Postgres: &devserver.Postgres{Addr: *pgAddr, User: *pgUser, Password: os.Getenv("PGPASSWORD"),
			DB: *pgDB, VisibilityDB: *pgVisDB},
	})
	if err != nil {
		return err
	}
	defer srv.Stop()
	if *addrOut != "" {
		// Written last and renamed into place, so a reader never sees a
		// server address that does not answer yet.
		tmp := *addrOut + ".tmp"
		if err := os.WriteFile(tmp, []byte(srv.FrontendAddr()+"\n"), 0o600); err != nil {
			return fmt.Errorf("writing address file: %w", err)
		}
		if err := os.Rename(tmp, *addrOut); err != nil {
			return fmt.Errorf("writing address file: %w", err)
		}
	}
	logger.Warn("Temporal on PostgreSQL serving", "address", srv.FrontendAddr(), "postgres", *pgAddr)
	<-ctx.Done()
	return nil
}
