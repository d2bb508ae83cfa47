package policylab_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/cli/cmdline"
	"github.com/custos-dev/custos/cli/policylab"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// runApp runs one of this package's commands as starter does (cli hands
// policy, audit stats and trust to it, and ends as cmdline.Exit does) and
// returns its exit code, stdout and stderr. These tests reach no Temporal
// server: a policy replay --from temporal runs in cli's tests, on a job.
func runApp(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	noServer := errors.New("no Temporal server in policylab's tests")
	e := &policylab.Env{Stdout: &out, Stderr: &errb,
		Dial: func(context.Context) (client.Client, error) { return nil, noServer },
		Status: func(context.Context, client.Client, string) (jobapi.Status, error) {
			return jobapi.Status{}, noServer
		}}
	var err error
	switch {
	case args[0] == "policy":
		err = e.Policy(ctx, args[1:])
	case args[0] == "audit" && len(args) > 1 && args[1] == "stats":
		err = e.AuditStats(ctx, args[2:])
	case args[0] == "trust":
		err = e.Trust(args[1:])
	default:
		t.Fatalf("%q is not a command of policylab", args)
	}
	return cmdline.Exit(&errb, err), out.String(), errb.String()
}
