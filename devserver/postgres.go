package devserver

import (
	"errors"
	"fmt"
	"net"

	"go.temporal.io/server/common/config"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql" // registers postgres12
	sqliteschema "go.temporal.io/server/schema/sqlite"
)

// Postgres points the server at a PostgreSQL whose two databases already
// hold Temporal's schema (set up with Temporal's own temporal-sql-tool, as
// an operator would; see .ci/postgres-e2e). The server then keeps nothing on
// local disk but its certificates, so it can be stopped and started again
// on the same databases.
type Postgres struct {
	// Addr is host:port of the PostgreSQL server; it must be on loopback
	// (the embedded server is a test and single-user tool, not a cluster).
	Addr           string
	User, Password string
	// DB and VisibilityDB are the database names; default "temporal" and
	// "temporal_visibility", the names Temporal's own setup uses.
	DB, VisibilityDB string
}

func (p *Postgres) validate() error {
	host, _, err := net.SplitHostPort(p.Addr)
	if err != nil {
		return fmt.Errorf("devserver: PostgreSQL address %q: %w", p.Addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("devserver: PostgreSQL address %q is not a loopback IP", p.Addr)
	}
	if p.User == "" {
		return errors.New("devserver: PostgreSQL user is empty")
	}
	if p.DB == "" {
		p.DB = "temporal"
	}
	if p.VisibilityDB == "" {
		p.VisibilityDB = "temporal_visibility"
	}
	return nil
}

func (p *Postgres) sql(db string) *config.SQL {
	return &config.SQL{
		PluginName:      "postgres12",
		DatabaseName:    db,
		ConnectAddr:     p.Addr,
		ConnectProtocol: "tcp",
		User:            p.User,
		Password:        p.Password,
		// One process and a handful of workers: a small pool is plenty and
		// leaves PostgreSQL's default 100 connections for restarts.
		MaxConns:     20,
		MaxIdleConns: 20,
	}
}

// preparePostgres returns the persistence and visibility configs and
// creates the namespace if it is missing. The namespace is written into the
// database before the server starts, as for SQLite: the writer
// (schema/sqlite.CreateNamespaces) goes through the generic SQL plugin
// interface, so it works for any registered plugin.
func preparePostgres(o Options) (store, visibility *config.SQL, err error) {
	p := o.Postgres
	if err := p.validate(); err != nil {
		return nil, nil, err
	}
	store, visibility = p.sql(p.DB), p.sql(p.VisibilityDB)
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, o.Namespace, false, o.SearchAttributes)
	if err != nil {
		return nil, nil, fmt.Errorf("devserver: namespace %q: %w", o.Namespace, err)
	}
	if err := sqliteschema.CreateNamespaces(store, ns); err != nil {
		return nil, nil, fmt.Errorf("devserver: creating namespace %q in PostgreSQL %s/%s: %w", o.Namespace, p.Addr, p.DB, err)
	}
	return store, visibility, nil
}
