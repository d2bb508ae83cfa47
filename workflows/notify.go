package workflows

import "github.com/custos-dev/custos/workflows/notices"

// notices is what of the job its notices to the worker's channels
// (workflows/notices) read.
func (j *job) notices() notices.Host {
	return notices.Host{Job: j.id, Workspace: j.in.Workspace, Parent: j.in.Parent,
		State: func() *State { return j.st }, Audit: j.audit, Emit: j.emit, Background: &j.bg}
}
