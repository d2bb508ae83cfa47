package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/internal/statedir"
	"github.com/custos-dev/custos/retention"
)

// gc is `starter gc`: what the retention settings let go from the state
// directory, removed (or, with --dry-run, listed), in as many bounded
// passes as it takes. Without a server to say which jobs are open, no
// job file is removed.
func (a *App) gc(ctx context.Context, args []string) error {
	fs := newFlagSet("gc", a.Stderr)
	dry := fs.Bool("dry-run", false, "say what would go, remove nothing")
	asJSON := fs.Bool("json", false, "the plan and what was removed, as JSON")
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	var c client.Client
	if dc, err := a.dial(ctx); err != nil {
		fmt.Fprintf(a.Stderr, "custos: %v\ncustos: without the open jobs, no transcript, audit or blob is removed\n", err)
	} else {
		c = dc
		defer c.Close()
	}
	var reps []app.GCReport
	var cur retention.Cursor
	for {
		rep, err := app.CollectState(ctx, c, app.GCOptions{DryRun: *dry, Cursor: cur})
		if err != nil {
			return err
		}
		reps = append(reps, rep)
		if rep.Plan.Done || len(reps) > 1000 {
			break
		}
		cur = rep.Plan.Next
	}
	if *asJSON {
		return writeJSON(a, reps)
	}
	writeGC(a.Stdout, reps, *dry)
	return nil
}

// writeGC prints what the passes removed (or would), per kind, and, for a
// dry run, each entry with why.
func writeGC(w io.Writer, reps []app.GCReport, dry bool) {
	files := map[retention.Kind]int{}
	bytes := map[retention.Kind]int64{}
	var errs []string
	for _, r := range reps {
		for _, e := range r.Plan.Remove {
			if dry {
				fmt.Fprintf(w, "would remove %s (%s, %s): %s\n", e.Path, e.Kind, size(e.Bytes), e.Why)
				files[e.Kind]++
				bytes[e.Kind] += e.Bytes
			}
		}
		if !dry {
			for k, n := range r.Result.Removed {
				files[k] += n
				bytes[k] += r.Result.Freed[k]
			}
			errs = append(errs, r.Result.Errors...)
		}
	}
	verb := "removed"
	if dry {
		verb = "would remove"
	}
	fmt.Fprintf(w, "state directory %s, retention: job files %s, caches %s, quarantine %s, audits %s",
		reps[0].State, days(reps[0].Policy.JobFiles), days(reps[0].Policy.Caches), days(reps[0].Policy.Quarantine), days(reps[0].Policy.Audits))
	if reps[0].Policy.MaxBytes > 0 {
		fmt.Fprintf(w, ", cap %s", size(reps[0].Policy.MaxBytes))
	}
	fmt.Fprintln(w)
	if why := reps[0].OpenJobsError; why != "" {
		fmt.Fprintf(w, "open jobs unknown (%s): no transcript, audit or blob considered\n", why)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	var all int64
	for _, k := range retention.Kinds {
		if files[k] > 0 {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t\n", verb, k, files[k], size(bytes[k]))
			all += bytes[k]
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "%s %s in all\n", map[bool]string{true: "would free", false: "freed"}[dry], size(all))
	for _, e := range errs {
		fmt.Fprintf(w, "error: %s\n", e)
	}
}

// du is `starter du`: what custos keeps, per workspace and in all.
func (a *App) du(args []string) error {
	fs := newFlagSet("du", a.Stderr)
	asJSON := fs.Bool("json", false, "as JSON")
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	state, err := statedir.Dir()
	if err != nil {
		return err
	}
	u, err := retention.Measure(state, true)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(a, u)
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"workspace"}
	for _, k := range retention.Kinds {
		head = append(head, string(k))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, ws := range u.Workspaces {
		row := []string{ws.Workspace}
		for _, k := range retention.Kinds {
			row = append(row, size(ws.Bytes[k]))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	row := []string{"all"}
	for _, k := range retention.Kinds {
		row = append(row, size(u.Kinds[k]))
	}
	fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	tw.Flush()
	fmt.Fprintf(a.Stdout, "state directory %s: %s in all (%s of it the server's database, certificates and the rest)\n", u.State, size(u.Total), size(u.Other))
	return nil
}

// size writes n bytes for people.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// days writes a retention in days when it is whole days.
func days(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
	return d.String()
}
