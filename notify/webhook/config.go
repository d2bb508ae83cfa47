// Package webhook posts custos' approval events to URLs a team chooses
// (Teams, Discord and PagerDuty relays, dashboards): a signed JSON POST when
// a tool call starts waiting and when it is decided.
package webhook

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Environment variable names.
const (
	EnvURLs   = "CUSTOS_WEBHOOK_URLS"
	EnvSecret = "CUSTOS_WEBHOOK_SECRET"
)

// DefaultTimeout bounds one request; the notification activity retries.
const DefaultTimeout = 10 * time.Second

// Config names the receivers and the signing secret.
type Config struct {
	URLs   []string
	Secret string
	// Timeout bounds each request (DefaultTimeout when 0).
	Timeout time.Duration
}

// ConfigFromEnv reads CUSTOS_WEBHOOK_URLS (comma-separated) and
// CUSTOS_WEBHOOK_SECRET; enabled is false when no URL is set. URLs without
// a secret are an error: receivers could not tell our requests from
// anyone's.
func ConfigFromEnv(getenv func(string) string) (c Config, enabled bool, err error) {
	for _, u := range strings.Split(getenv(EnvURLs), ",") {
		if u = strings.TrimSpace(u); u != "" {
			c.URLs = append(c.URLs, u)
		}
	}
	c.Secret = strings.TrimSpace(getenv(EnvSecret))
	if len(c.URLs) == 0 {
		if c.Secret != "" {
			return Config{}, false, fmt.Errorf("webhook: %s is set but %s is empty", EnvSecret, EnvURLs)
		}
		return Config{}, false, nil
	}
	if err := c.Validate(); err != nil {
		return Config{}, false, err
	}
	return c, true, nil
}

// Validate checks the URLs and the secret.
func (c Config) Validate() error {
	var errs []error
	if len(c.URLs) == 0 {
		errs = append(errs, fmt.Errorf("%s names no URL", EnvURLs))
	}
	for _, raw := range c.URLs {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s: %q is not an http(s) URL", EnvURLs, raw))
		} else if u.User != nil {
			errs = append(errs, fmt.Errorf("%s: %q carries credentials in the URL; receivers authenticate requests by their signature", EnvURLs, u.Redacted()))
		}
	}
	if len(c.Secret) < 16 {
		errs = append(errs, fmt.Errorf("%s must be set to a secret of at least 16 characters (receivers verify each request with it)", EnvSecret))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	return nil
}
