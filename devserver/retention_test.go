package devserver

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// The namespace's retention of ended jobs is the setting at every start:
// a new database gets it, and a changed setting applies to an existing one.
func TestRetentionIsSetAtEveryStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server twice")
	}
	dbFile := filepath.Join(t.TempDir(), "temporal.db")
	for _, tc := range []struct {
		set, want time.Duration
	}{
		{set: 72 * time.Hour, want: 72 * time.Hour},
		{set: 0, want: DefaultRetention},
		{set: time.Hour, want: 24 * time.Hour}, // the server's minimum
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		srv, err := Start(ctx, Options{DBFile: dbFile, UIPort: -1, Logger: quietLogger(), Retention: tc.set})
		require.NoError(t, err)
		c, err := client.DialContext(ctx, client.Options{HostPort: srv.FrontendAddr(), Logger: sdklog.NewStructuredLogger(quietLogger()),
			ConnectionOptions: client.ConnectionOptions{TLS: srv.ClientTLS()}})
		require.NoError(t, err)
		ns, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
		require.NoError(t, err)
		assert.Equal(t, tc.want, ns.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(), "set %s", tc.set)
		c.Close()
		require.NoError(t, srv.Stop())
		cancel()
	}
}

func TestRetentionFromEnv(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want time.Duration
		bad  bool
	}{
		{v: "", want: 0},
		{v: "720h", want: 720 * time.Hour},
		{v: "1h", bad: true},
		{v: "a month", bad: true},
	} {
		got, err := RetentionFromEnv(func(string) string { return tc.v })
		if tc.bad {
			assert.Error(t, err, tc.v)
			continue
		}
		require.NoError(t, err, tc.v)
		assert.Equal(t, tc.want, got, tc.v)
	}
}
