package app

import (
	"cmp"
	"os"
	"time"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// DefaultDeploymentName is the Worker Deployment custos workers join when
// versioning is on and no other name is given.
const DefaultDeploymentName = "custos"

// Versioning opts a worker into Worker Deployment Versioning (see
// docs/upgrades.md). With BuildID "" the worker is unversioned, as before.
type Versioning struct {
	DeploymentName string // default DefaultDeploymentName
	BuildID        string
}

// VersioningFromEnv reads CUSTOS_BUILD_ID and CUSTOS_DEPLOYMENT_NAME.
func VersioningFromEnv() Versioning {
	return Versioning{DeploymentName: os.Getenv("CUSTOS_DEPLOYMENT_NAME"), BuildID: os.Getenv("CUSTOS_BUILD_ID")}
}

// workerOptions are the SDK options every worker of the process shares:
// the interceptors that measure and log activities, then the caller's; and
// the deployment version, the same for the workflow queue and every Bash
// lane, so a pinned job's tool calls run on workers of its own release.
func workerOptions(o Options) worker.Options {
	host := o.Host
	if host == "" {
		host, _ = os.Hostname()
	}
	ics := []interceptor.WorkerInterceptor{&activityObserver{log: o.Logger, host: host}}
	wo := worker.Options{
		Interceptors: append(ics, o.Interceptors...),
		// Hundreds of jobs may wake at once (a batch of approvals): more
		// pollers than the SDK's two keep tasks from queueing behind the
		// poll round trips.
		MaxConcurrentWorkflowTaskPollers: 8,
		MaxConcurrentActivityTaskPollers: 8,
		// An activity learns it was canceled (an interrupt) only from a
		// heartbeat's answer: heartbeats reach the server at least every
		// second, so a command is killed within about a second, not
		// after the SDK's default of up to 30 s.
		MaxHeartbeatThrottleInterval:     time.Second,
		DefaultHeartbeatThrottleInterval: time.Second,
	}
	if v := o.Versioning; v.BuildID != "" {
		wo.DeploymentOptions = worker.DeploymentOptions{
			UseVersioning: true,
			Version: worker.WorkerDeploymentVersion{
				DeploymentName: cmp.Or(v.DeploymentName, DefaultDeploymentName),
				BuildID:        v.BuildID,
			},
			// A job waits hours for approvals: it finishes on the code it
			// started on, whatever is released meanwhile.
			DefaultVersioningBehavior: workflow.VersioningBehaviorPinned,
		}
	}
	return wo
}
