package app

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/notify/slack"
	"github.com/custos-dev/custos/notify/slack/slacktest"
)

func TestChannelsFromEnv(t *testing.T) {
	cases := []struct {
		name         string
		env          map[string]string
		slack, hooks bool
		errHas       string
	}{
		{name: "none", env: map[string]string{}},
		{name: "slack", env: map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s", "SLACK_CHANNEL": "C1"}, slack: true},
		{name: "webhooks", env: map[string]string{"CUSTOS_WEBHOOK_URLS": "https://h.example/x", "CUSTOS_WEBHOOK_SECRET": "0123456789abcdef"}, hooks: true},
		{name: "broken slack settings stop the worker", env: map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_CHANNEL": "C1"}, errHas: "SLACK_SIGNING_SECRET"},
		{name: "broken webhook settings stop the worker", env: map[string]string{"CUSTOS_WEBHOOK_URLS": "https://h.example/x"}, errHas: "CUSTOS_WEBHOOK_SECRET"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cc, err := ChannelsFromEnv(func(k string) string { return tc.env[k] })
			if tc.errHas != "" {
				require.ErrorContains(t, err, tc.errHas)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.slack, cc.Slack != nil)
			assert.Equal(t, tc.hooks, cc.Webhook != nil)
		})
	}
}

func TestStartChannels(t *testing.T) {
	fake, err := slacktest.New("xoxb-good", "C0APPROVALS")
	require.NoError(t, err)
	t.Cleanup(fake.Close)
	quiet := slog.New(slog.DiscardHandler)
	cfg := slack.Config{BotToken: "xoxb-good", SigningSecret: "s", Channel: "C0APPROVALS", APIURL: fake.URL, Addr: "127.0.0.1:0"}

	// A token Slack refuses stops the worker at start.
	bad := cfg
	bad.BotToken = "xoxb-revoked"
	_, err = StartChannels(context.Background(), nil, ChannelConfig{Slack: &bad}, quiet)
	require.ErrorContains(t, err, "Slack refused SLACK_BOT_TOKEN (invalid_auth)")

	ch, err := StartChannels(context.Background(), nil, ChannelConfig{Slack: &cfg}, quiet)
	require.NoError(t, err)
	require.Len(t, ch.Notifiers, 1)
	assert.Equal(t, "slack", ch.Notifiers[0].Name())
	require.NotEmpty(t, ch.SlackAddr)
	// The endpoint listens, and refuses what is not signed.
	res, err := slacktest.Post("http://"+ch.SlackAddr+slack.InteractivityPath, "", time.Now(), slacktest.Interaction("{}"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
	ch.Close()
	_, err = slacktest.Post("http://"+ch.SlackAddr+slack.InteractivityPath, "", time.Now(), slacktest.Interaction("{}"))
	assert.Error(t, err, "closed: nothing listens any more")
}
