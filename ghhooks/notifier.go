package ghhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/notify"
)

// maxAnswer is what of an answer one comment carries (GitHub takes at
// most 65,536 characters).
const maxAnswer = 60000

// Notifier posts an issue's job's answers as comments on the issue. It is
// a notify.Notifier, so the workflow's NotifyNotice activity runs it:
// durable, and retried by Temporal when GitHub fails.
type Notifier struct {
	cfg  Config
	http *http.Client
}

// NewNotifier posts with cfg's token to cfg's API; client nil is a plain
// client with a 20 s timeout.
func NewNotifier(cfg Config, client *http.Client) *Notifier {
	if client == nil {
		client = &http.Client{Timeout: 20 * time.Second}
	}
	return &Notifier{cfg: cfg, http: client}
}

// Name is the notifier's name in jobs' events.
func (n *Notifier) Name() string { return "github" }

// Pending posts nothing: calls are answered on the other channels.
func (n *Notifier) Pending(context.Context, notify.Pending) (string, error) { return "", nil }

// Decided posts nothing.
func (n *Notifier) Decided(context.Context, notify.Decided, string) error { return nil }

// Notice posts an answer of an issue's job on the issue; other notices and
// other jobs are not GitHub's.
func (n *Notifier) Notice(ctx context.Context, nt notify.Notice) error {
	if nt.Kind != notify.KindAnswer || n.cfg.Token == "" {
		return nil
	}
	repo, issue, ok := Issue(nt.JobID, n.cfg.Repositories)
	if !ok {
		return nil
	}
	mark := fmt.Sprintf("%s job=%s at=%s -->", answerMark, nt.JobID, nt.At.UTC().Format(time.RFC3339Nano))
	if activity.IsActivity(ctx) && activity.GetInfo(ctx).Attempt > 1 {
		// An earlier attempt may have posted before it failed: once only.
		if posted, err := n.posted(ctx, repo, issue, mark, nt.At); err != nil || posted {
			return err
		}
	}
	body := fmt.Sprintf("%s\n\n<sub>custos job `%s`: mention %s in a comment to answer it.</sub>\n%s",
		cut(nt.Text, maxAnswer), nt.JobID, n.cfg.Mention, mark)
	payload, _ := json.Marshal(map[string]string{"body": body})
	resp, err := n.do(ctx, http.MethodPost, n.commentsURL(repo, issue, nil), bytes.NewReader(payload))
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// Busy posts on the issue that its comment (delivery) started nothing:
// maxRunning GitHub-started jobs are open. The answer's mark keeps the
// post from being read as a call.
func (n *Notifier) Busy(ctx context.Context, repo string, issue int, delivery string, e *BusyError) error {
	body := fmt.Sprintf("custos is busy: %d jobs started from GitHub are open (at most %d at once), so this comment started nothing. "+
		"Mention %s again once one of them has ended.\n%s busy delivery=%s -->", e.Open, e.Max, n.cfg.Mention, answerMark, delivery)
	payload, _ := json.Marshal(map[string]string{"body": body})
	resp, err := n.do(ctx, http.MethodPost, n.commentsURL(repo, issue, nil), bytes.NewReader(payload))
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// posted says whether the issue has a comment with mark since at.
func (n *Notifier) posted(ctx context.Context, repo string, issue int, mark string, at time.Time) (bool, error) {
	q := url.Values{"since": {at.Add(-time.Minute).UTC().Format(time.RFC3339)}, "per_page": {"100"}}
	resp, err := n.do(ctx, http.MethodGet, n.commentsURL(repo, issue, q), nil)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var comments []struct {
		Body string `json:"body"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 32<<20)).Decode(&comments); err != nil {
		return false, fmt.Errorf("github: the issue's comments: %w", err)
	}
	for _, c := range comments {
		if strings.Contains(c.Body, mark) {
			return true, nil
		}
	}
	return false, nil
}

func (n *Notifier) commentsURL(repo string, issue int, q url.Values) string {
	owner, name, _ := strings.Cut(repo, "/")
	u := fmt.Sprintf("%s/repos/%s/%s/issues/%d/comments", n.cfg.APIURL, url.PathEscape(owner), url.PathEscape(name), issue)
	if q != nil {
		u += "?" + q.Encode()
	}
	return u
}

// do sends one request to GitHub's API. What GitHub will refuse again
// (a bad token, an unknown issue) is not retried; the rest is.
func (n *Notifier) do(ctx context.Context, method, u string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+n.cfg.Token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("User-Agent", "custos")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := n.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("github: %s %s: %w", method, u, err)
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	err = fmt.Errorf("github: %s %s: %s: %s", method, u, resp.Status, strings.TrimSpace(string(msg)))
	switch resp.StatusCode {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusGone, http.StatusUnprocessableEntity:
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "GitHubRefused", nil)
	}
	return nil, err
}
