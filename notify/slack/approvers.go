package slack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
)

// Approvers is the parsed SLACK_APPROVERS: who may allow, always or never.
// Anyone in the channel may deny.
type Approvers struct {
	Users  []string // U… and W… (Enterprise Grid) user IDs
	Groups []string // S… user-group IDs
}

// ParseApprovers parses a comma-separated list of user and user-group IDs.
// Anything else (a name, an @handle, a channel ID) is an error: a typo must
// not silently leave the bot without approvers or, worse, match someone.
func ParseApprovers(s string) (Approvers, error) {
	var a Approvers
	for _, f := range strings.Split(s, ",") {
		id := strings.TrimSpace(f)
		switch {
		case id == "":
			continue
		case validID(id, "UW"):
			a.Users = append(a.Users, id)
		case validID(id, "S"):
			a.Groups = append(a.Groups, id)
		default:
			return Approvers{}, fmt.Errorf("%q is not a Slack user ID (U…, W…) or user-group ID (S…)", id)
		}
	}
	return a, nil
}

// Empty reports whether nobody may approve.
func (a Approvers) Empty() bool { return len(a.Users) == 0 && len(a.Groups) == 0 }

// groupCacheTTL: membership changes reach the bot within this time, and a
// burst of clicks costs one usergroups.users.list call per group.
const groupCacheTTL = 30 * time.Second

// approverCheck answers "may this user approve?", reading group membership
// through the Web API and caching it briefly.
type approverCheck struct {
	set Approvers
	api *slack.Client
	now func() time.Time

	mu    sync.Mutex
	cache map[string]groupMembers
}

type groupMembers struct {
	users []string
	at    time.Time
}

func newApproverCheck(set Approvers, api *slack.Client) *approverCheck {
	return &approverCheck{set: set, api: api, now: time.Now, cache: map[string]groupMembers{}}
}

// IsApprover reports whether user is listed, directly or through a group.
// A failed group lookup is an error: the caller refuses (fails closed).
func (a *approverCheck) IsApprover(ctx context.Context, user string) (bool, error) {
	if user == "" {
		return false, nil
	}
	if slices.Contains(a.set.Users, user) {
		return true, nil
	}
	for _, g := range a.set.Groups {
		members, err := a.members(ctx, g)
		if err != nil {
			return false, err
		}
		if slices.Contains(members, user) {
			return true, nil
		}
	}
	return false, nil
}

func (a *approverCheck) members(ctx context.Context, group string) ([]string, error) {
	a.mu.Lock()
	c, ok := a.cache[group]
	a.mu.Unlock()
	if ok && a.now().Sub(c.at) < groupCacheTTL {
		return c.users, nil
	}
	users, err := a.api.GetUserGroupMembersContext(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("members of user group %s: %w", group, err)
	}
	a.mu.Lock()
	a.cache[group] = groupMembers{users: users, at: a.now()}
	a.mu.Unlock()
	return users, nil
}
