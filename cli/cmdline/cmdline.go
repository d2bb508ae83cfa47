// Package cmdline is what every command of starter shares, in cli and in
// its sub-packages: flags that may follow the positional arguments, usage
// errors and the exit status they end in, JSON output, and how the
// terminal shows a name. It imports nothing of cli: cli's sub-packages use
// it, cli uses them.
package cmdline

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/custos-dev/custos/display"
)

// UsageError is a command used wrongly (a flag, an argument): the command
// line exits 2 on one.
type UsageError struct{ Msg string }

func (u UsageError) Error() string { return u.Msg }

// Usagef is a UsageError.
func Usagef(format string, args ...any) error { return UsageError{fmt.Sprintf(format, args...)} }

// Exit prints err as the command line does and returns the exit status:
// 0 with no error, 2 for a UsageError, else 1.
func Exit(stderr io.Writer, err error) int {
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "custos: %v\n", err)
	var ue UsageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// NewFlagSet is a flag set that reports its errors (and -h) to out and
// returns them instead of exiting.
func NewFlagSet(name string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	return fs
}

// ParseInterleaved parses flags that may come before or after positional
// args; "--" ends the flags.
func ParseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, UsageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// MultiFlag collects a repeatable string flag.
type MultiFlag []string

func (m *MultiFlag) String() string     { return strings.Join(*m, ",") }
func (m *MultiFlag) Set(v string) error { *m = append(*m, v); return nil }

// Has says whether s was given.
func (m MultiFlag) Has(s string) bool {
	for _, x := range m {
		if x == s {
			return true
		}
	}
	return false
}

// WriteJSON writes v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Limits of what the terminal shows of a name (call, job, host, person) and
// of a reason, in characters: a longer one shows its head and its tail.
const (
	MaxID     = 200
	MaxReason = 500
)

// ShownID is an ID as the terminal shows it: a model or a person chose it.
func ShownID(id string) string { return display.Line(id, MaxID) }
