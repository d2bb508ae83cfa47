package temporalclient

import (
	"fmt"
	"strings"
)

// Banner is what a command prints when it has started the embedded server:
// where it is, the one-time Web UI link, and how the owner's Temporal CLI
// gets in (only the owner can read the certificate files named there).
func (e *Embedded) Banner() string {
	srv := e.Server
	var b strings.Builder
	fmt.Fprintf(&b, "custos: embedded Temporal server on %s (mutual TLS; certificates in %s)\n", srv.FrontendAddr(), srv.TLSFiles().Dir)
	if u := srv.UILoginURL(); u != "" {
		fmt.Fprintf(&b, "custos: Web UI: %s\n", u)
		b.WriteString("custos:   (a one-time link that sets a session cookie; `starter ui-url` makes another)\n")
	}
	if e.InboxURL != "" {
		fmt.Fprintf(&b, "custos: approval inbox: %s\n", e.InboxURL)
		b.WriteString("custos:   (every call waiting for you, answered with a click; one-time link, `starter inbox-url` makes another)\n")
	}
	fmt.Fprintf(&b, "custos: Temporal CLI: temporal workflow list %s\n", ShellJoin(srv.TLSFiles().TemporalCLIFlags(srv.FrontendAddr())))
	b.WriteString("custos:   (or `starter temporal-profile --write` once, then `temporal --profile custos ...`)\n")
	return b.String()
}

// ShellJoin quotes args for a POSIX shell, so printed commands can be pasted.
func ShellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellQuote(a)
	}
	return strings.Join(out, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
