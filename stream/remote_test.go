package stream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A follower with the grant's token reads the answer so far, then each
// delta, until the grant ends; another hub relaying it shows the same.
func TestServerStreamsToTheGrantHolder(t *testing.T) {
	hub := NewHub(Limits{})
	srv := &Server{Hub: hub}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	srv.URL = ts.URL
	token, revoke := srv.Grant("j")
	w := hub.Begin("j", 2, 1)
	w.Think("The user greets. ")
	w.Write("Hello ")

	local := NewHub(Limits{})
	sub := local.Subscribe("j")
	defer sub.Close()
	r := NewRelayer(local, "j")
	fetched := make(chan error, 1)
	go func() { fetched <- Fetch(context.Background(), http.DefaultClient, ts.URL, "j", token, r.Put) }()

	var got, thought strings.Builder
	read := func(want string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for !strings.Contains(got.String(), want) {
			select {
			case <-sub.Ready():
				for _, c := range sub.Take() {
					if c.Thought {
						require.Empty(t, got.String(), "the reasoning comes before the text")
						thought.WriteString(c.Text)
						continue
					}
					got.WriteString(c.Text)
				}
			case <-deadline:
				t.Fatalf("never read %q, got %q", want, got.String())
			}
		}
	}
	read("Hello ")
	assert.Equal(t, "The user greets. ", thought.String(), "the reasoning is relayed as reasoning")
	w.Write("world")
	read("Hello world")
	w.End(false)
	revoke()
	select {
	case err := <-fetched:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end with its grant")
	}
	// The end of the answer was relayed before the stream closed.
	var done bool
	for _, c := range sub.Take() {
		done = done || (c.Done && !c.Failed)
	}
	assert.True(t, done, "the relayed answer ended well")
	assert.Equal(t, "Hello world", got.String())
}

// No token, a wrong one, another job's, or an ended grant's: refused.
func TestServerRefusesWithoutTheGrant(t *testing.T) {
	hub := NewHub(Limits{})
	srv := &Server{Hub: hub}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	token, revoke := srv.Grant("j")
	ctx := context.Background()
	nop := func(Chunk) { t.Error("a refused follower got a chunk") }
	for name, tc := range map[string]struct{ job, token string }{
		"no token":   {"j", ""},
		"wrong":      {"j", strings.Repeat("0", 64)},
		"other job":  {"k", token},
		"prefix off": {"j", token[:10]},
	} {
		err := Fetch(ctx, http.DefaultClient, ts.URL, tc.job, tc.token, nop)
		assert.ErrorIs(t, err, ErrRefused, name)
	}
	revoke()
	assert.ErrorIs(t, Fetch(ctx, http.DefaultClient, ts.URL, "j", token, nop), ErrRefused, "an ended grant")
	resp, err := http.Post(ts.URL+"?job=j", "text/plain", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}
