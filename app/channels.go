package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	slackapi "github.com/slack-go/slack"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/internal/answerkey"
	"github.com/custos-dev/custos/notify"
	"github.com/custos-dev/custos/notify/slack"
	"github.com/custos-dev/custos/notify/webhook"
)

// ChannelConfig says which approval channels a worker runs; nil is off.
type ChannelConfig struct {
	Slack   *slack.Config
	Webhook *webhook.Config
	// StateDir is where the workers' answer key is (internal/answerkey),
	// "" for custos' state directory: the Slack bot signs with it the
	// identities that count towards a call's approvals.
	StateDir string
}

// ChannelsFromEnv reads the channels' settings (SLACK_*, CUSTOS_SLACK_ADDR,
// CUSTOS_WEBHOOK_*). Settings that are present but wrong are an error.
func ChannelsFromEnv(getenv func(string) string) (ChannelConfig, error) {
	var cc ChannelConfig
	sc, on, err := slack.ConfigFromEnv(getenv)
	if err != nil {
		return cc, err
	}
	if on {
		cc.Slack = &sc
	}
	wc, on, err := webhook.ConfigFromEnv(getenv)
	if err != nil {
		return cc, err
	}
	if on {
		cc.Webhook = &wc
	}
	return cc, nil
}

// Channels are a worker's running approval channels: the notifiers to hand
// to Options.Notifiers and the Slack endpoint that answers jobs through c.
type Channels struct {
	Notifiers []notify.Notifier
	// SlackAddr is where the Slack endpoint listens ("" in Socket Mode or
	// without Slack).
	SlackAddr string
	bot       *slack.Bot
}

// StartChannels starts the configured channels. The Slack bot token is
// checked with auth.test: a token Slack refuses stops the worker, Slack
// being unreachable only warns (posts retry later).
func StartChannels(ctx context.Context, c client.Client, cc ChannelConfig, logger *slog.Logger) (*Channels, error) {
	if logger == nil {
		logger = slog.Default()
	}
	ch := &Channels{}
	if cc.Webhook != nil {
		ch.Notifiers = append(ch.Notifiers, webhook.New(*cc.Webhook))
		logger.Info("approval channel on", "channel", "webhook", "urls", len(cc.Webhook.URLs))
	}
	if cc.Slack != nil {
		cfg := *cc.Slack
		if cfg.AnswerKey == nil {
			cfg.AnswerKey = answerKeyFor(cc.StateDir, logger)
		}
		if err := ch.startSlack(ctx, c, cfg, logger); err != nil {
			ch.Close()
			return nil, err
		}
	}
	return ch, nil
}

func (ch *Channels) startSlack(ctx context.Context, c client.Client, cfg slack.Config, logger *slog.Logger) error {
	api := slack.NewAPI(cfg)
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	auth, err := api.AuthTestContext(actx)
	var se slackapi.SlackErrorResponse
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("slack: Slack refused %s (%s)", slack.EnvBotToken, se.Err)
	case err != nil:
		logger.Warn("slack: cannot reach Slack now; approval messages will retry", "err", err)
	default:
		logger.Info("slack: authenticated", "team", auth.Team, "bot", auth.User)
	}
	if cfg.Approvers.Empty() {
		logger.Warn("slack: " + slack.EnvApprovers + " is empty: people can deny from Slack, nobody can allow")
	}
	ch.bot = slack.NewBot(cfg, api, c, logger)
	if cfg.SocketMode() {
		ch.bot.RunSocketMode()
		logger.Info("approval channel on", "channel", "slack", "via", "socket mode", "slack_channel", cfg.Channel)
	} else {
		addr, err := ch.bot.Listen()
		if err != nil {
			return err
		}
		ch.SlackAddr = addr
		logger.Info("approval channel on", "channel", "slack", "via", "http", "addr", addr,
			"paths", slack.InteractivityPath+" "+slack.CommandsPath+" "+slack.EventsPath, "slack_channel", cfg.Channel)
	}
	ch.Notifiers = append(ch.Notifiers, slack.NewNotifier(api, cfg.Channel))
	return nil
}

// answerKeyFor reads (or makes) the workers' answer key. Without one the
// channel still works; its answers count towards no call's approvals.
func answerKeyFor(stateDir string, logger *slog.Logger) []byte {
	key, err := answerkey.Load(os.Getenv, stateDir)
	if err != nil {
		logger.Warn("no answer key: Slack and inbox answers count towards no call's approvals", "err", err)
		return nil
	}
	return key
}

// Close stops the Slack endpoint.
func (ch *Channels) Close() {
	if ch.bot != nil {
		ch.bot.Close()
	}
}
