package mcpservers

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/sandbox"
)

// callWithin calls tool with ctx and fails the test if the call has not
// returned after limit (a hang, not a measurement).
func (r *rig) callWithin(t *testing.T, ctx context.Context, limit time.Duration, tool string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := r.pool.Call(ctx, r.ws, "t", tool, json.RawMessage(`{}`), Limits{})
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("the call of %s had not returned after %s", tool, limit)
		return nil
	}
}

// echoAgain checks that the server answers again (a fresh one: the old one
// never answers anything any more), within 15 s (far beyond a start).
func (r *rig) echoAgain(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := r.pool.Call(ctx, r.ws, "t", "echo", json.RawMessage(`{"text":"again"}`), Limits{})
	require.NoError(t, err, "the next call is served by a server started afresh")
	assert.Equal(t, "echo: again", res.Content[0].(*mcp.TextContent).Text)
}

// A call whose context ends (an interrupt) returns at once although its
// server answers nothing any more, the server is killed, and the next call
// gets a fresh one: hang ignores the call's cancellation, freeze stops the
// whole server (SIGSTOP), deaf ignores SIGTERM and keeps writing its home.
// The sandbox's kill grace is 30 s here: the old server must die by its
// SIGTERM, continued if stopped, or at a server's own shorter grace, and
// the next call's server must start only once it is dead (one writer of
// the home at a time).
func TestCallStoppedWhileTheServerAnswersNothing(t *testing.T) {
	for _, tool := range []string{"freeze", "hang", "deaf"} {
		t.Run(tool, func(t *testing.T) {
			r := newRig(t, map[string]any{"mcpServers": map[string]any{"t": stdioServer(nil)}})
			r.pool.Sandbox = realSandboxWith(t, sandbox.Config{KillGrace: 30 * time.Second})
			r.echoAgain(t) // started
			old := r.pool.sessions[r.ws+"\x00t"]
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(500*time.Millisecond, cancel)
			begin := time.Now()
			err := r.callWithin(t, ctx, 10*time.Second, tool)
			t.Logf("the call returned after %s", time.Since(begin))
			require.ErrorIs(t, err, ErrCallStopped)
			r.echoAgain(t) // as the next turn's listing would, at once
			t.Logf("the next call was answered %s after the stopped one began", time.Since(begin))
			select {
			case <-old.proc.Done():
			default:
				t.Fatal("the next call's server started while the stopped one still ran")
			}
			res, _ := old.proc.Wait()
			t.Logf("the old server: exit %d, %s", res.ExitCode, res.KillReason)
			if tool == "deaf" {
				log := filepath.Join(HomeOf(r.state, r.ws, "t"), "deaf.log")
				before, err := os.Stat(log)
				require.NoError(t, err, "the deaf server wrote its home")
				time.Sleep(100 * time.Millisecond)
				after, err := os.Stat(log)
				require.NoError(t, err)
				assert.Equal(t, before.Size(), after.Size(), "nothing writes the home once the new server runs")
			} else {
				assert.Equal(t, 128+int(syscall.SIGTERM), res.ExitCode, "the server died of its SIGTERM, not at the SIGKILL")
			}
		})
	}
}

// A call that outlasts its server's callTimeout returns with a
// TimeoutError, the server killed and started afresh for the next call.
func TestCallTimeoutStopsACallThatNeverAnswers(t *testing.T) {
	r := newRig(t, map[string]any{"mcpServers": map[string]any{"t": stdioServer(map[string]any{"callTimeout": "1s"})}})
	err := r.callWithin(t, context.Background(), 20*time.Second, "freeze")
	var te *TimeoutError
	require.True(t, errors.As(err, &te), "got %v", err)
	assert.Equal(t, time.Second, te.After)
	assert.Contains(t, err.Error(), "no answer within 1s")
	r.echoAgain(t)
	// A call that answers in time is not cut.
	res, err := r.pool.Call(context.Background(), r.ws, "t", "sleep", json.RawMessage(`{"ms":200}`), Limits{})
	require.NoError(t, err)
	assert.False(t, res.IsError)
}

func TestCallTimeoutIsParsedStrictly(t *testing.T) {
	for _, tc := range []struct {
		value any
		want  time.Duration
		err   string
	}{
		{nil, DefaultCallTimeout, ""},
		{"90s", 90 * time.Second, ""},
		{"1h30m", 90 * time.Minute, ""},
		{300, 0, "with its unit"},
		{"5", 0, "not a duration"},
		{"-1m", 0, "not a duration"},
		{"48h", 0, "not a duration"},
	} {
		entry := map[string]any{"command": "x"}
		if tc.value != nil {
			entry["callTimeout"] = tc.value
		}
		raw, _ := json.Marshal(entry)
		s, err := parseEntry("t", raw, SourceUser, "settings.json")
		if tc.err != "" {
			require.Error(t, err, "%v", tc.value)
			assert.Contains(t, err.Error(), tc.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, s.callTimeout(), "%v", tc.value)
		assert.False(t, strings.Contains(s.Fingerprint(), "callTimeout"))
	}
	a, _ := parseEntry("t", json.RawMessage(`{"command":"x"}`), SourceUser, "f")
	b, _ := parseEntry("t", json.RawMessage(`{"command":"x","callTimeout":"1m"}`), SourceUser, "f")
	assert.Equal(t, a.Fingerprint(), b.Fingerprint(), "a timeout changes nothing a person approved")
}
