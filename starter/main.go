// Command starter is custos' CLI: run and follow jobs, approve or deny their
// calls, read status and audit, check policy, try the sandbox.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/custos-dev/custos/cli"
	"github.com/custos-dev/custos/sandbox"
)

func main() {
	sandbox.MaybeRunHelper()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	fi, _ := os.Stdin.Stat()
	app := &cli.App{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Interactive: fi != nil && fi.Mode()&os.ModeCharDevice != 0,
	}
	code := app.Main(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
