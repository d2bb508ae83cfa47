package ghhooks

import (
	"container/list"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// account is a user or bot as a payload names it.
type account struct {
	Login string `json:"login"`
	Type  string `json:"type"`
}

// issueCommentEvent is what custos reads of an issue_comment payload.
type issueCommentEvent struct {
	Action string `json:"action"`
	Issue  struct {
		Number      int             `json:"number"`
		Title       string          `json:"title"`
		Body        *string         `json:"body"`
		HTMLURL     string          `json:"html_url"`
		User        account         `json:"user"`
		PullRequest json.RawMessage `json:"pull_request"`
	} `json:"issue"`
	Comment struct {
		Body              string  `json:"body"`
		User              account `json:"user"`
		AuthorAssociation string  `json:"author_association"`
	} `json:"comment"`
	Repository struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	Sender account `json:"sender"`
}

// answerMark is in every comment custos posts: a comment that carries it
// is never read as a call on custos (a job's answer that names the
// mention must not start another turn).
const answerMark = "<!-- custos-answer"

// comment reads an issue_comment payload: the comment to dispatch, or why
// it is ignored (why != ""), or an error for a payload that is not one.
func (h *Handler) comment(payload []byte) (Comment, string, error) {
	var e issueCommentEvent
	if err := json.Unmarshal(payload, &e); err != nil {
		return Comment{}, "", err
	}
	if e.Issue.Number <= 0 || e.Repository.FullName == "" || e.Sender.Login == "" {
		return Comment{}, "", fmt.Errorf("no issue, repository or sender")
	}
	ws, known := h.cfg.Repositories[strings.ToLower(e.Repository.FullName)]
	switch {
	case e.Action != "created":
		return Comment{}, fmt.Sprintf("action %q (only created comments are read)", e.Action), nil
	case e.Sender.Type == "Bot" || e.Comment.User.Type == "Bot":
		return Comment{}, fmt.Sprintf("comment by a bot (%s)", e.Sender.Login), nil
	case strings.Contains(e.Comment.Body, answerMark):
		return Comment{}, "custos' own answer", nil
	case !known:
		return Comment{}, fmt.Sprintf("repository %s is not in triggers.github.repositories", e.Repository.FullName), nil
	case !Mentions(e.Comment.Body, h.cfg.Mention):
		return Comment{}, "the comment does not mention " + h.cfg.Mention, nil
	case !slices.Contains(h.cfg.AllowedFor(e.Repository.FullName), e.Comment.AuthorAssociation):
		// Deny by default: a missing or unknown association is no one's.
		return Comment{}, fmt.Sprintf("the comment's author @%s is %q to the repository, not one of triggers.github's allowedAssociations (%s)",
			e.Comment.User.Login, e.Comment.AuthorAssociation, strings.Join(h.cfg.AllowedFor(e.Repository.FullName), ", ")), nil
	}
	c := Comment{Repo: e.Repository.FullName, Workspace: ws, Issue: e.Issue.Number, Title: e.Issue.Title,
		IssueAuthor: e.Issue.User.Login, IssueURL: e.Issue.HTMLURL, PullRequest: len(e.Issue.PullRequest) > 0 && string(e.Issue.PullRequest) != "null",
		Author: e.Comment.User.Login, Association: e.Comment.AuthorAssociation, Text: e.Comment.Body}
	if e.Issue.Body != nil {
		c.Body = *e.Issue.Body
	}
	if c.Author == "" {
		c.Author = e.Sender.Login
	}
	return c, "", nil
}

// recent remembers the last n deliveries taken, so a redelivery to this
// worker counts once without asking Temporal (which counts it once too).
type recent struct {
	mu    sync.Mutex
	n     int
	order *list.List
	index map[string]*list.Element
}

func newRecent(n int) *recent {
	return &recent{n: n, order: list.New(), index: map[string]*list.Element{}}
}

func (r *recent) has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.index[id]
	return ok
}

func (r *recent) add(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.index[id]; ok {
		return
	}
	r.index[id] = r.order.PushFront(id)
	for r.order.Len() > r.n {
		last := r.order.Back()
		r.order.Remove(last)
		delete(r.index, last.Value.(string))
	}
}
