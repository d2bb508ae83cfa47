package ghhooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withAssociation is GitHub's example comment on issue n, by a commenter
// of association a ("-" leaves the field out).
func withAssociation(t *testing.T, body string, n int, a string) []byte {
	ev := exampleComment(t, body)
	if a == "-" {
		delete(ev["comment"].(map[string]any), "author_association")
	} else {
		ev["comment"].(map[string]any)["author_association"] = a
	}
	ev["issue"].(map[string]any)["number"] = n
	out, err := json.Marshal(ev)
	require.NoError(t, err)
	return out
}

func TestHandlerReadsOnlyAllowedAssociations(t *testing.T) {
	for _, a := range []string{"NONE", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "FIRST_TIMER", "MANNEQUIN", "owner", "", "-"} {
		t.Run(a, func(t *testing.T) {
			rec := &recorder{open: map[string]bool{JobID("Codertocat/Hello-World", 1): true}}
			h := NewHandler(testConfig(t), rec, nil)
			for i, n := range []int{1, 2} { // a message to a running job, and a start
				body := withAssociation(t, "@custos fix it", n, a)
				w := post(h, "issue_comment", fmt.Sprintf("d-%s-%d", a, i), body, Sign(secret, body))
				assert.Equal(t, http.StatusOK, w.Code, w.Body.String())
				assert.Contains(t, w.Body.String(), `"ignored"`)
				assert.Contains(t, w.Body.String(), "allowedAssociations")
			}
			assert.Empty(t, rec.got, "neither started nor continued a job")
		})
	}
	for _, a := range DefaultAssociations {
		rec := &recorder{}
		h := NewHandler(testConfig(t), rec, nil)
		body := withAssociation(t, "@custos fix it", 1, a)
		w := post(h, "issue_comment", "d-"+a, body, Sign(secret, body))
		assert.Equal(t, http.StatusAccepted, w.Code, a)
		assert.Contains(t, w.Body.String(), `"started"`, a)
		require.Len(t, rec.got, 1, a)
		assert.Equal(t, a, rec.got[0].Association)
	}
	// The configured lists: the global one, and a repository's own.
	cfg := testConfig(t)
	cfg.AllowedAssociations = []string{"MEMBER"}
	rec := &recorder{}
	h := NewHandler(cfg, rec, nil)
	body := withAssociation(t, "@custos fix it", 1, "OWNER")
	w := post(h, "issue_comment", "g-1", body, Sign(secret, body))
	assert.Contains(t, w.Body.String(), `"ignored"`, "OWNER is not in the configured list")
	cfg.Allowed = map[string][]string{"codertocat/hello-world": {"CONTRIBUTOR"}}
	h = NewHandler(cfg, rec, nil)
	body = withAssociation(t, "@custos fix it", 1, "CONTRIBUTOR")
	w = post(h, "issue_comment", "r-1", body, Sign(secret, body))
	assert.Contains(t, w.Body.String(), `"started"`, "the repository's own list")
	assert.Len(t, rec.got, 1)
}

// fakeIssues is a stand-in of GitHub's REST endpoint for issue comments.
func fakeIssues(t *testing.T) (*httptest.Server, func() map[string][]string) {
	var mu sync.Mutex
	posted := map[string][]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Body string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		mu.Lock()
		posted[r.URL.Path] = append(posted[r.URL.Path], in.Body)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	return srv, func() map[string][]string {
		mu.Lock()
		defer mu.Unlock()
		out := map[string][]string{}
		for k, v := range posted {
			out[k] = append([]string(nil), v...)
		}
		return out
	}
}

func TestHandlerMaxRunning(t *testing.T) {
	gh, posted := fakeIssues(t)
	cfg := testConfig(t)
	cfg.MaxRunning, cfg.Token, cfg.APIURL = 2, "t0k", gh.URL
	rec := &recorder{hidden: map[string]bool{}}
	h := NewHandler(cfg, rec, nil)
	send := func(delivery string, issue int) *httptest.ResponseRecorder {
		body := withAssociation(t, "@custos fix it", issue, "OWNER")
		return post(h, "issue_comment", delivery, body, Sign(secret, body))
	}
	require.Contains(t, send("d-1", 1).Body.String(), `"started"`)
	// Visibility has not shown job 2 yet: the endpoint counts its own start.
	rec.hidden[JobID("Codertocat/Hello-World", 2)] = true
	require.Contains(t, send("d-2", 2).Body.String(), `"started"`)

	w := send("d-3", 3)
	assert.Equal(t, http.StatusOK, w.Code, "refused with a 2xx")
	assert.Contains(t, w.Body.String(), `"busy"`)
	assert.Contains(t, w.Body.String(), "2 GitHub-started jobs are open (triggers.github.maxRunning 2)")
	assert.Equal(t, 2, rec.starts(), "the third start was refused")
	// Redelivered, and a new comment on the issue: refused, not told again.
	assert.Contains(t, send("d-3", 3).Body.String(), `"busy"`, "a refused delivery was not taken")
	assert.Contains(t, send("d-4", 3).Body.String(), `"busy"`)
	h.bg.Wait()
	got := posted()
	require.Len(t, got["/repos/Codertocat/Hello-World/issues/3/comments"], 1, "told once: %v", got)
	busy := got["/repos/Codertocat/Hello-World/issues/3/comments"][0]
	assert.Contains(t, busy, "custos is busy")
	assert.Contains(t, busy, answerMark, "its own post is never read as a call")
	assert.Len(t, got, 1, "nothing posted on the other issues")

	// A message to a running job is not a start: it goes through.
	w = send("d-5", 1)
	assert.Equal(t, http.StatusAccepted, w.Code)
	assert.Contains(t, w.Body.String(), `"message"`)

	// One job ends: the next start goes through.
	rec.mu.Lock()
	delete(rec.open, JobID("Codertocat/Hello-World", 1))
	rec.mu.Unlock()
	assert.Contains(t, send("d-3", 3).Body.String(), `"started"`, "the refused delivery, redelivered")
	assert.Equal(t, 3, rec.starts())
}

// Jobs that cannot be counted start nothing (fail closed); GitHub may
// redeliver.
func TestHandlerMaxRunningFailsClosed(t *testing.T) {
	rec := &recorder{listErr: errors.New("visibility down")}
	h := NewHandler(testConfig(t), rec, nil)
	body := withAssociation(t, "@custos fix it", 1, "OWNER")
	w := post(h, "issue_comment", "d-1", body, Sign(secret, body))
	assert.Equal(t, http.StatusBadGateway, w.Code)
	assert.Empty(t, rec.got)
	assert.True(t, strings.Contains(w.Body.String(), "redeliver"))
}
