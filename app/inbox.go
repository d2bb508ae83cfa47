package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/inbox"
	"github.com/custos-dev/custos/stream"
	"github.com/custos-dev/custos/temporalclient"
)

// InboxPrefix is where the approval inbox is served on the embedded
// server's Web UI address (and on a deployed worker's own address).
const InboxPrefix = "/custos/"

// StartInbox serves the approval inbox until ctx ends. With the embedded
// server (emb set, its Web UI on) it is mounted behind the UI's gate,
// so the one-time link and session cookie that open the UI open it too,
// and it records the link in emb for the banner. A deployed worker serves
// it only when the operator sets CUSTOS_INBOX_ADDR and tokens (see
// inbox.GateConfigFromEnv); otherwise there is none.
//
// stateDir is where the workers' answer key is ("" for custos' state
// directory): a deployed inbox signs with it the people its tokens name.
// hub (nil: none) is this process's model answers as they are written,
// which the job pages show.
func StartInbox(ctx context.Context, c client.Client, emb *temporalclient.Embedded, getenv func(string) string, stateDir string, hub *stream.Hub, banner io.Writer, logger *slog.Logger) error {
	k := inbox.NewCollector(c, 0, 0, logger)
	if emb != nil {
		srv := emb.Server
		if srv.UIAddr() == "" {
			return nil
		}
		h, err := inbox.NewHandler(k, c, inbox.Options{Prefix: InboxPrefix, SessionCookie: srv.SessionCookie(), DefaultBy: OSUser(), Stream: hub, Logger: logger})
		if err != nil {
			return err
		}
		if err := srv.Mount(InboxPrefix, h); err != nil {
			return err
		}
		if emb.InboxURL, err = srv.NewLoginURLAt(InboxPrefix); err != nil {
			return err
		}
		go k.Run(ctx)
		return nil
	}
	cfg, enabled, err := inbox.GateConfigFromEnv(getenv)
	if err != nil || !enabled {
		return err
	}
	g := inbox.NewGate(cfg, cfg.CertFile != "")
	h, err := inbox.NewHandler(k, c, inbox.Options{Prefix: InboxPrefix, SessionCookie: inbox.GateCookie, Identify: g.Identify,
		AnswerKey: answerKeyFor(stateDir, logger), Stream: hub, Logger: logger})
	if err != nil {
		return err
	}
	addr, err := inbox.ServeGate(ctx, cfg, g.Wrap(h), logger)
	if err != nil {
		return err
	}
	go k.Run(ctx)
	scheme := "http"
	if cfg.CertFile != "" {
		scheme = "https"
	}
	fmt.Fprintf(banner, "custos: approval inbox: %s://%s%s?token=… (a token from %s or %s)\n", scheme, addr, InboxPrefix, inbox.EnvTokens, inbox.EnvTokensFile)
	return nil
}

// OSUser names the person running this process for the audit: $USER,
// else the account name, else "someone". It is who answers from a
// terminal (the starter) and from the embedded server's inbox unless the
// person types another name (the account the worker runs as is the only
// one that can open its link).
func OSUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "someone"
}
