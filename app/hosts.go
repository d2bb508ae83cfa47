package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/worktree"
	"github.com/custos-dev/custos/sandbox/hostfs"
)

// HostsTaskQueue is polled by every worker that has a host, with the host's
// name and workspace roots as its identity: describing it lists the live
// hosts, through Temporal itself, so a starter on any machine can route a
// job to the host that holds its workspace.
const HostsTaskQueue = "custos-hosts"

const hostIdentityPrefix = "custos-host "

// hostLiveness is how recently a host's worker must have polled to count as
// live (a waiting poll is renewed every minute).
const hostLiveness = 90 * time.Second

// Host is a worker host and the workspace roots it holds.
type Host struct {
	Name     string    `json:"host"`
	Roots    []string  `json:"roots"`
	LastSeen time.Time `json:"-"`
}

// hostIdentity names the host and its roots; its workers poll with it, so
// discovery and every activity's history record say where it ran.
func hostIdentity(o Options) (string, error) {
	roots, err := canonicalRoots(o.Workspaces)
	if err != nil {
		return "", err
	}
	id, _ := json.Marshal(Host{Name: o.Host, Roots: roots})
	o.Logger.Info("host", "host", o.Host, "workspaces", strings.Join(roots, ", "))
	return hostIdentityPrefix + string(id), nil
}

// hostWorkers are the host's workspace queue and its discovery poller.
func hostWorkers(c client.Client, base worker.Options, identity, host string, set activities.Set) []worker.Worker {
	ho := base
	ho.Identity = identity
	hw := worker.New(c, api.HostQueue(host), ho)
	set.Register(hw)
	worktree.Register(hw, set.Settings)
	do := ho
	do.MaxConcurrentActivityExecutionSize = 1
	do.MaxConcurrentActivityTaskPollers = 1
	disc := worker.New(c, HostsTaskQueue, do)
	disc.RegisterActivityWithOptions(func(context.Context) error { return nil }, activity.RegisterOptions{Name: "HostInfo"})
	return []worker.Worker{hw, disc}
}

func canonicalRoots(roots []string) ([]string, error) {
	if len(roots) == 0 {
		roots = []string{"/"}
	}
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return nil, fmt.Errorf("workspace root %s: %w", r, err)
		}
		out = append(out, abs)
	}
	return out, nil
}

// LiveHosts lists the hosts whose workers polled recently.
func LiveHosts(ctx context.Context, c client.Client) ([]Host, error) {
	resp, err := c.DescribeTaskQueue(ctx, HostsTaskQueue, enums.TASK_QUEUE_TYPE_ACTIVITY)
	if err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	seen := map[string]Host{}
	for _, p := range resp.GetPollers() {
		id, ok := strings.CutPrefix(p.GetIdentity(), hostIdentityPrefix)
		if !ok {
			continue
		}
		var h Host
		if json.Unmarshal([]byte(id), &h) != nil || h.Name == "" {
			continue
		}
		h.LastSeen = p.GetLastAccessTime().AsTime()
		if time.Since(h.LastSeen) > hostLiveness {
			continue
		}
		if old, ok := seen[h.Name]; !ok || old.LastSeen.Before(h.LastSeen) {
			seen[h.Name] = h
		}
	}
	out := make([]Host, 0, len(seen))
	for _, h := range seen {
		out = append(out, h)
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Name < out[k].Name })
	return out, nil
}

// RouteJob names the live host that holds the workspace ws, or "" when
// the workers name no hosts; a workspace no live worker holds is refused.
// `starter run` and the GitHub trigger route a new job with it.
func RouteJob(ctx context.Context, c client.Client, ws string) (string, error) {
	hosts, err := LiveHosts(ctx, c)
	if err != nil || len(hosts) == 0 {
		return "", err
	}
	h, err := Route(hosts, ws)
	if err != nil {
		return "", fmt.Errorf("cannot start the job: %w", err)
	}
	return h.Name, nil
}

// ErrNoHost is a workspace no live worker holds.
var ErrNoHost = errors.New("no live worker holds this workspace")

// Route picks the host whose workspace roots hold dir (the longest root
// wins), or says which hosts there are.
func Route(hosts []Host, dir string) (Host, error) {
	best, bestLen := Host{}, -1
	for _, h := range hosts {
		for _, r := range h.Roots {
			if _, ok := hostfs.Within(r, dir); ok && len(r) > bestLen {
				best, bestLen = h, len(r)
			}
		}
	}
	if bestLen >= 0 {
		return best, nil
	}
	var names []string
	for _, h := range hosts {
		names = append(names, fmt.Sprintf("%s (%s)", h.Name, strings.Join(h.Roots, ", ")))
	}
	return Host{}, fmt.Errorf("%s: %w; live hosts: %s", dir, ErrNoHost, joinOrNone(names))
}

func joinOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "; ")
}

// HostName is the default host name: CUSTOS_HOST, else the machine's name.
func HostName() string {
	if h := os.Getenv("CUSTOS_HOST"); h != "" {
		return h
	}
	h, _ := os.Hostname()
	return h
}
