package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/ghhooks"
	"github.com/custos-dev/custos/notify"
)

// EnvHooksAddr is where the worker serves POST /hooks/github (unset: it
// does not).
const EnvHooksAddr = "CUSTOS_HOOKS_ADDR"

// GitHubHooks is the GitHub trigger of a worker: its endpoint, when
// served, and the notifier that posts answers on issues, when
// triggers.github has a token.
type GitHubHooks struct {
	// Addr is where the endpoint listens ("" when it is not served).
	Addr      string
	Notifiers []notify.Notifier
	srv       *http.Server
}

// StartGitHubHooks reads triggers.github from the user's settings under
// userConfigDir ("" : the user's config directory) and serves the
// endpoint on addr ("" : not served). With addr set, broken settings stop
// the worker; without, they only warn (this worker takes no deliveries,
// and posts no answers).
func StartGitHubHooks(c client.Client, addr, userConfigDir string, logger *slog.Logger) (*GitHubHooks, error) {
	if logger == nil {
		logger = slog.Default()
	}
	gh := &GitHubHooks{}
	cfg, on, err := loadTriggers(userConfigDir)
	if err != nil {
		if addr != "" {
			return nil, fmt.Errorf("github hooks: %w", err)
		}
		logger.Warn("github hooks: triggers.github ignored", "err", err)
		return gh, nil
	}
	if on && cfg.Token != "" {
		gh.Notifiers = append(gh.Notifiers, ghhooks.NewNotifier(cfg, nil))
	}
	if addr == "" {
		return gh, nil
	}
	if !on {
		logger.Error("github hooks: " + EnvHooksAddr + " is set but the user's settings have no triggers.github: every delivery is refused")
	}
	jobs := &ghhooks.Jobs{Client: c, Route: func(ctx context.Context, ws string) (string, error) { return RouteJob(ctx, c, ws) }}
	mux := http.NewServeMux()
	mux.Handle(ghhooks.Path, ghhooks.NewHandler(cfg, jobs, logger))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("github hooks: listen on %s (%s): %w", addr, EnvHooksAddr, err)
	}
	gh.Addr = ln.Addr().String()
	gh.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute}
	go func() {
		if err := gh.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("github hooks: server stopped", "err", err)
		}
	}()
	logger.Info("github hooks on", "addr", gh.Addr, "path", ghhooks.Path, "repositories", len(cfg.Repositories), "answers", cfg.Token != "")
	return gh, nil
}

func loadTriggers(userConfigDir string) (ghhooks.Config, bool, error) {
	if userConfigDir == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return ghhooks.Config{}, false, nil
		}
		userConfigDir = dir
	}
	return ghhooks.Load(userConfigDir)
}

// Close stops the endpoint.
func (gh *GitHubHooks) Close() {
	if gh != nil && gh.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = gh.srv.Shutdown(ctx)
	}
}
