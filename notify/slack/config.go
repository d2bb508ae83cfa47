// Package slack is custos' Slack bot: a notifier that posts one message per
// pending tool call (with Allow / Deny / Always / Never buttons) and updates
// it with the outcome, and an inbound endpoint (HTTP or Socket Mode) that
// verifies each request, checks who clicked against SLACK_APPROVERS and
// turns the click into the job's decide Update.
package slack

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Environment variable names.
const (
	EnvBotToken      = "SLACK_BOT_TOKEN"
	EnvSigningSecret = "SLACK_SIGNING_SECRET"
	EnvChannel       = "SLACK_CHANNEL"
	EnvApprovers     = "SLACK_APPROVERS"
	EnvAPIURL        = "SLACK_API_URL"
	EnvAddr          = "CUSTOS_SLACK_ADDR"
	EnvAppToken      = "SLACK_APP_TOKEN"

	DefaultAddr   = "127.0.0.1:3000"
	DefaultAPIURL = "https://slack.com/api/"
)

// Config is the bot's configuration.
type Config struct {
	BotToken      string
	SigningSecret string
	// Channel is the ID of the channel that receives approval requests.
	Channel string
	// Approvers are Slack user IDs (U…, W…) and user-group IDs (S…).
	Approvers Approvers
	// APIURL is the Web API base URL, ending in a slash.
	APIURL string
	// Addr is the listen address of the HTTP endpoint (unused in Socket Mode).
	Addr string
	// AppToken (xapp-…) switches to Socket Mode.
	AppToken string
	// AnswerKey is the workers' key (internal/answerkey) the bot signs the
	// identities it verified with; nil: its answers count towards no
	// call's approvals (settings "approvals").
	AnswerKey []byte
}

// SocketMode reports whether requests come over Socket Mode instead of HTTP.
func (c Config) SocketMode() bool { return c.AppToken != "" }

// ConfigFromEnv reads the configuration; enabled is false when
// SLACK_BOT_TOKEN is unset. A set token with incomplete or invalid settings
// is an error, so a worker never starts with a bot that cannot work.
func ConfigFromEnv(getenv func(string) string) (c Config, enabled bool, err error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	c = Config{
		BotToken:      get(EnvBotToken),
		SigningSecret: get(EnvSigningSecret),
		Channel:       get(EnvChannel),
		APIURL:        cmp.Or(get(EnvAPIURL), DefaultAPIURL),
		Addr:          cmp.Or(get(EnvAddr), DefaultAddr),
		AppToken:      get(EnvAppToken),
	}
	if c.BotToken == "" {
		for _, k := range []string{EnvSigningSecret, EnvChannel, EnvApprovers, EnvAppToken} {
			if get(k) != "" {
				return Config{}, false, fmt.Errorf("slack: %s is set but %s is not: set the bot token or unset the Slack settings", k, EnvBotToken)
			}
		}
		return Config{}, false, nil
	}
	if c.Approvers, err = ParseApprovers(get(EnvApprovers)); err != nil {
		return Config{}, false, fmt.Errorf("slack: %s: %w", EnvApprovers, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, false, err
	}
	return c, true, nil
}

// Validate checks a configuration.
func (c Config) Validate() error {
	var errs []error
	if c.BotToken == "" {
		errs = append(errs, fmt.Errorf("%s is empty", EnvBotToken))
	}
	if c.Channel == "" {
		errs = append(errs, fmt.Errorf("%s is empty: set the ID (C…) of the channel that receives approval requests", EnvChannel))
	} else if !validID(c.Channel, "CGD") {
		errs = append(errs, fmt.Errorf("%s=%q is not a channel ID (C…, G… or D…; the name does not work)", EnvChannel, c.Channel))
	}
	if c.AppToken == "" && c.SigningSecret == "" {
		errs = append(errs, fmt.Errorf("%s is empty and %s is not set: the HTTP endpoint cannot verify requests (set the app's signing secret, or an app token for Socket Mode)", EnvSigningSecret, EnvAppToken))
	}
	if c.AppToken != "" && !strings.HasPrefix(c.AppToken, "xapp-") {
		errs = append(errs, fmt.Errorf("%s is not an app-level token (xapp-…)", EnvAppToken))
	}
	if u, err := url.Parse(c.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		errs = append(errs, fmt.Errorf("%s=%q is not an http(s) URL", EnvAPIURL, c.APIURL))
	} else if !strings.HasSuffix(c.APIURL, "/") {
		errs = append(errs, fmt.Errorf("%s=%q must end in a slash (like %s)", EnvAPIURL, c.APIURL, DefaultAPIURL))
	}
	if !c.SocketMode() {
		if _, _, err := net.SplitHostPort(c.Addr); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", EnvAddr, c.Addr, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("slack: %w", err)
	}
	return nil
}

// validID reports whether id looks like a Slack ID starting with one of
// the prefixes: upper-case letters and digits only.
func validID(id, prefixes string) bool {
	if len(id) < 2 || !strings.ContainsRune(prefixes, rune(id[0])) {
		return false
	}
	for _, r := range id {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}
