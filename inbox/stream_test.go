package inbox

import (
	"bufio"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/jobevents"
	"github.com/custos-dev/custos/stream"
)

// The job's stream serves the job's events (package jobevents, as the
// terminal and --json get them): the text the model activity publishes,
// as it is published, over a real HTTP connection, and only to a
// signed-in person.
func TestJobStream(t *testing.T) {
	const tok = "tok-0123456789abcdef0123456789abcdef"
	hub := stream.NewHub(stream.Limits{})
	g := NewGate(GateConfig{Tokens: map[string]string{tok: "alice"}}, false)
	h, err := NewHandler(NewCollector(nil, 0, 0, nil), nil, Options{SessionCookie: GateCookie, Identify: g.Identify, Stream: hub})
	require.NoError(t, err)
	srv := httptest.NewServer(g.Wrap(h))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/custos/jobs/job1/stream")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no session, no stream")

	// Sign in the way a person does: the token link sets the cookie.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	resp, err = c.Get(srv.URL + "/custos/?token=" + tok)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	w := hub.Begin("job1", 4, 1)
	w.Write("Hello ")
	resp, err = c.Get(srv.URL + "/custos/jobs/job1/stream")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	events := readJobEvents(t, resp.Body)
	next := func() jobevents.Text {
		select {
		case e := <-events:
			text, ok := e.(jobevents.Text)
			require.True(t, ok, "a %s event, want text", e.Type())
			return text
		case <-time.After(5 * time.Second):
			t.Fatal("no event within 5 s")
		}
		return jobevents.Text{}
	}
	first := next()
	assert.True(t, first.Begin, "a late page gets the text so far, as the answer's beginning")
	assert.Equal(t, "Hello ", first.Text)
	assert.Equal(t, 4, first.Turn)
	w.Write("<b>world</b>")
	assert.Equal(t, "<b>world</b>", next().Text, "sent as data; the page sets it as text")
	w.End(false)
	assert.True(t, next().End)

	page, err := c.Get(srv.URL + "/custos/jobs/job1")
	require.NoError(t, err)
	defer page.Body.Close()
	require.Equal(t, http.StatusOK, page.StatusCode)
	assert.Contains(t, page.Header.Get("Content-Security-Policy"), "script-src 'self'")
}

// readJobEvents reads the stream's "job-event" events, each checked
// against the events' schema.
func readJobEvents(t *testing.T, body io.Reader) <-chan jobevents.Event {
	events := make(chan jobevents.Event, 10)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(body)
		name := ""
		for sc.Scan() {
			if n, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				name = n
			}
			d, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			assert.Equal(t, "job-event", name)
			assert.NoError(t, jobevents.Validate([]byte(d)), d)
			e, err := jobevents.Unmarshal([]byte(d))
			if assert.NoError(t, err, d) {
				events <- e
			}
		}
	}()
	return events
}

// Without a hub (streaming off) the stream says so instead of hanging.
func TestJobStreamOff(t *testing.T) {
	h, err := NewHandler(NewCollector(nil, 0, 0, nil), nil, Options{SessionCookie: "sess"})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/custos/jobs/job1/stream", nil))
	assert.Equal(t, http.StatusNotFound, rec.Code)
	assert.Contains(t, rec.Body.String(), "no model answers")
}
