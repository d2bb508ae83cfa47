package devserver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The PostgreSQL store is checked before anything starts: loopback only (the
// embedded server is a single-user tool), a user, and not together with a
// SQLite file. The server itself on PostgreSQL is exercised end to end by
// .ci/postgres-e2e (make test-postgres).
func TestPostgresOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"remote host", Options{Postgres: &Postgres{Addr: "10.0.0.5:5432", User: "temporal"}}, "not a loopback IP"},
		{"host name", Options{Postgres: &Postgres{Addr: "db.internal:5432", User: "temporal"}}, "not a loopback IP"},
		{"no port", Options{Postgres: &Postgres{Addr: "127.0.0.1", User: "temporal"}}, "PostgreSQL address"},
		{"no user", Options{Postgres: &Postgres{Addr: "127.0.0.1:5432"}}, "user is empty"},
		{"with SQLite file", Options{DBFile: "x.db", Postgres: &Postgres{Addr: "127.0.0.1:5432", User: "temporal"}}, "mutually exclusive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Start(context.Background(), tc.o)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestPostgresDefaults(t *testing.T) {
	p := &Postgres{Addr: "[::1]:5432", User: "temporal"}
	require.NoError(t, p.validate())
	assert.Equal(t, "temporal", p.DB)
	assert.Equal(t, "temporal_visibility", p.VisibilityDB)
	c := p.sql(p.DB)
	assert.Equal(t, "postgres12", c.PluginName)
	assert.Equal(t, "[::1]:5432", c.ConnectAddr)
}
