// Package embeddedcmd is how a person reaches the embedded Temporal server
// from outside custos: `starter temporal-profile` (the Temporal CLI's
// flags and profile) and the one-time links `starter ui-url` and
// `starter inbox-url`. cli dispatches to it; it never imports cli.
package embeddedcmd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/custos-dev/custos/cli/cmdline"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/temporalclient"
)

// embeddedCerts are the certificates of this user's embedded server, which
// must exist (the worker or `starter run` makes them on first start).
func embeddedCerts() (devserver.TLSFiles, error) {
	dir, err := devserver.DefaultTLSDir()
	if err != nil {
		return devserver.TLSFiles{}, err
	}
	f := devserver.TLSFilesIn(dir)
	if _, err := os.Stat(f.ClientKey); errors.Is(err, fs.ErrNotExist) {
		return f, fmt.Errorf("no certificates in %s yet: start the embedded server once (go run ./worker, or starter run)", dir)
	} else if err != nil {
		return f, fmt.Errorf("embedded server certificates: %w", err)
	}
	return f, nil
}

// Env is what the commands get from the command line.
type Env struct{ Stdout, Stderr io.Writer }

// TemporalProfile prints how the owner's Temporal CLI reaches the embedded
// server and, with --write, saves it as the CLI profile "custos".
func (a Env) TemporalProfile(args []string) error {
	flags := cmdline.NewFlagSet("temporal-profile", a.Stderr)
	write := flags.Bool("write", false, "write profile "+temporalclient.ProfileName+" into the Temporal CLI's config file")
	addr := flags.String("address", temporalclient.DefaultAddress, "the embedded server's frontend address")
	file := flags.String("config-file", temporalclient.ProfileFile(), "the Temporal CLI's config file (TEMPORAL_CONFIG_FILE)")
	if rest, err := cmdline.ParseInterleaved(flags, args); err != nil {
		return err
	} else if len(rest) > 0 {
		return cmdline.Usagef("temporal-profile takes no arguments, got %q", rest)
	}
	f, err := embeddedCerts()
	if err != nil {
		return err
	}
	profile := temporalclient.EmbeddedProfile(*addr, f)
	if *write {
		if err := temporalclient.WriteProfile(*file, temporalclient.ProfileName, profile); err != nil {
			return err
		}
		fmt.Fprintf(a.Stdout, "wrote profile %q to %s\nuse it with: temporal --profile %s workflow list\n",
			temporalclient.ProfileName, *file, temporalclient.ProfileName)
		return nil
	}
	toml, err := temporalclient.ProfileTOML(temporalclient.ProfileName, profile)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "# The embedded server wants your client certificate (only you can read these files):\n")
	fmt.Fprintf(a.Stdout, "temporal workflow list %s\n\n", temporalclient.ShellJoin(f.TemporalCLIFlags(*addr)))
	fmt.Fprintf(a.Stdout, "# or, after `starter temporal-profile --write` (into %s):\n", *file)
	fmt.Fprintf(a.Stdout, "temporal --profile %s workflow list\n\n", temporalclient.ProfileName)
	fmt.Fprintf(a.Stdout, "# the profile:\n%s", toml)
	return nil
}

// LoginURL mints a new one-time login link for the running embedded
// server's Web UI that lands on path: "/" for the UI (`ui-url`), the
// approval inbox the worker serves there (`inbox-url`, app.InboxPrefix).
func (a Env) LoginURL(cmd, path string, args []string) error {
	if len(args) > 0 {
		return cmdline.Usagef("%s takes no arguments", cmd)
	}
	f, err := embeddedCerts()
	if err != nil {
		return err
	}
	u, err := devserver.MintLoginURLAt(f.Dir, path)
	if err != nil {
		return err
	}
	fmt.Fprintln(a.Stdout, u)
	return nil
}
