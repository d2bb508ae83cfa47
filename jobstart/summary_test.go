package jobstart

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/custos-dev/custos/workflows/jobapi"
)

func TestSummary(t *testing.T) {
	for _, c := range []struct {
		name string
		in   jobapi.JobInput
		want string
	}{
		{"a task's first line", jobapi.JobInput{Task: "fix the build\nthen the tests", Workspace: "/w"}, "fix the build"},
		{"an editor's session has no task", jobapi.JobInput{Workspace: "/home/ada/proj"}, "an editor's session (ACP) in /home/ada/proj"},
	} {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, Summary(c.in)) })
	}
}
