package cli

import (
	"flag"
	"io"

	"github.com/custos-dev/custos/cli/cmdline"
)

// What every command shares lives in cli/cmdline, for cli and for its
// sub-packages alike (they never import cli); these are cli's names for it.

type usageError = cmdline.UsageError

func usagef(format string, args ...any) error { return cmdline.Usagef(format, args...) }

func newFlagSet(name string, out io.Writer) *flag.FlagSet { return cmdline.NewFlagSet(name, out) }

func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	return cmdline.ParseInterleaved(fs, args)
}
