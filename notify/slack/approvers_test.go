package slack

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/notify/slack/slacktest"
)

func TestParseApprovers(t *testing.T) {
	cases := []struct {
		in     string
		want   Approvers
		errHas string
	}{
		{in: "", want: Approvers{}},
		{in: "U123ABC", want: Approvers{Users: []string{"U123ABC"}}},
		{in: " U1 , W2,S3 ,, ", want: Approvers{Users: []string{"U1", "W2"}, Groups: []string{"S3"}}},
		{in: "@alice", errHas: `"@alice"`},
		{in: "alice", errHas: `"alice"`},
		{in: "u123", errHas: `"u123"`},   // IDs are upper case; a lower-case one is a typo
		{in: "C123", errHas: `"C123"`},   // a channel is not a person
		{in: "U12 3", errHas: `"U12 3"`}, // no spaces inside an ID
		{in: "U", errHas: `"U"`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseApprovers(tc.in)
			if tc.errHas != "" {
				require.ErrorContains(t, err, tc.errHas)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func fakeSlack(t *testing.T) *slacktest.Server {
	t.Helper()
	s, err := slacktest.New("xoxb-test", "C0APPROVALS")
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func testAPI(s *slacktest.Server) Config {
	return Config{BotToken: s.Token, APIURL: s.URL, Channel: "C0APPROVALS", SigningSecret: testSecret}
}

func TestApproverCheck(t *testing.T) {
	s := fakeSlack(t)
	s.SetGroup("S0LEADS", "U0LEAD1", "U0LEAD2")
	set, err := ParseApprovers("U0ALICE,S0LEADS")
	require.NoError(t, err)
	check := newApproverCheck(set, NewAPI(testAPI(s)))
	ctx := context.Background()
	cases := []struct {
		user string
		want bool
	}{
		{"U0ALICE", true},    // listed by ID
		{"U0LEAD2", true},    // member of a listed group
		{"U0MALLORY", false}, // neither
		{"", false},
		{"u0alice", false}, // IDs are compared exactly
	}
	for _, tc := range cases {
		got, err := check.IsApprover(ctx, tc.user)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, tc.user)
	}
	// The group was read once for all those checks: the cache holds it.
	assert.Len(t, s.Calls("usergroups.users.list"), 1)
	assert.Equal(t, "S0LEADS", s.Calls("usergroups.users.list")[0].Params["usergroup"])

	// A change of membership shows once the cache has expired.
	s.SetGroup("S0LEADS", "U0LEAD1")
	ok, err := check.IsApprover(ctx, "U0LEAD2")
	require.NoError(t, err)
	assert.True(t, ok, "within the cache's lifetime the old membership holds")
	check.now = func() time.Time { return time.Now().Add(groupCacheTTL + time.Second) }
	ok, err = check.IsApprover(ctx, "U0LEAD2")
	require.NoError(t, err)
	assert.False(t, ok, "removed from the group, no longer an approver")
}

// A group that cannot be read is an error, and the bot refuses: it never
// lets someone approve on an unknown answer.
func TestApproverCheckFailsClosed(t *testing.T) {
	s := fakeSlack(t)
	set, err := ParseApprovers("S0GONE")
	require.NoError(t, err)
	b := NewBot(Config{Approvers: set}, NewAPI(testAPI(s)), nil, slog.New(slog.DiscardHandler))
	defer b.Close()
	_, err = b.approvers.IsApprover(context.Background(), "U0ANY")
	require.ErrorContains(t, err, "no_such_subteam")
	assert.Contains(t, b.answerRefusal(context.Background(), "U0ANY", "allow"), "could not check SLACK_APPROVERS")

	s.SetGroup("S0GONE", "U0ANY")
	assert.Empty(t, b.answerRefusal(context.Background(), "U0ANY", "allow"), "with the group readable the member may approve")
}

// Anyone may deny; only approvers may allow, always or never.
func TestAnswerRefusal(t *testing.T) {
	s := fakeSlack(t)
	set, err := ParseApprovers("U0ALICE")
	require.NoError(t, err)
	b := NewBot(Config{Approvers: set}, NewAPI(testAPI(s)), nil, slog.New(slog.DiscardHandler))
	defer b.Close()
	for _, tc := range []struct {
		user, decision, want string
	}{
		{"U0ALICE", "allow", ""},
		{"U0ALICE", "always", ""},
		{"U0ALICE", "never", ""},
		{"U0ALICE", "deny", ""},
		{"U0BOB", "deny", ""},
		{"U0BOB", "allow", NotApprover},
		{"U0BOB", "always", NotApprover},
		{"U0BOB", "never", NotApprover},
		{"U0BOB", "something", NotApprover}, // anything but deny needs an approver
	} {
		assert.Equal(t, tc.want, b.answerRefusal(context.Background(), tc.user, tc.decision), "%s %s", tc.user, tc.decision)
	}
	// Widening a job's mode needs an approver too; narrowing does not.
	for mode, wide := range map[string]bool{"default": false, "plan": false, "acceptEdits": true, "dontAsk": true, "bypass": true} {
		m, err := approval.ParseMode(mode)
		require.NoError(t, err)
		assert.Equal(t, wide, widens(m), mode)
	}
}
