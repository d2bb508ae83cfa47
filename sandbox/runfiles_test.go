package sandbox

import (
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/sandbox/masks"
	"github.com/custos-dev/custos/sandbox/sysview"
)

// Each of the child's files sits where ExtraFiles makes it the fd the
// profile names; closeChild closes exactly the child's files (the status
// reader then sees EOF), close the rest, and closing again does nothing.
func TestRunFiles(t *testing.T) {
	f, err := openRunFiles(bwrapProfile{}, nil)
	require.NoError(t, err)
	defer f.close()
	require.NoError(t, f.feedPlan(bwrapProfile{}), "without the step there is no plan to feed")
	files := f.child()
	require.Len(t, files, 4)
	read := func(fd int) string {
		b, err := io.ReadAll(files[fd-3])
		require.NoError(t, err)
		return string(b)
	}
	passwd, group := sysview.Identity()
	prog, err := seccompProgram()
	require.NoError(t, err)
	assert.Equal(t, passwd, read(fdPasswd))
	assert.Equal(t, group, read(fdGroup))
	assert.Equal(t, string(prog), read(fdSeccomp))
	_, err = files[fdStatus-3].Write([]byte(`{"child-pid": 7}`))
	require.NoError(t, err)

	statusR := f.statusR
	f.closeChild()
	for i, c := range files {
		assert.ErrorIs(t, c.Close(), os.ErrClosed, "child file %d", i)
	}
	b, err := io.ReadAll(statusR)
	require.NoError(t, err)
	assert.Equal(t, `{"child-pid": 7}`, string(b))

	f.close()
	assert.ErrorIs(t, statusR.Close(), os.ErrClosed)
	f.close()

	// With the /etc view holding them, there are no passwd and group
	// files to hand over (bwrapArgs mounts none).
	f, err = openRunFiles(bwrapProfile{IdentityInSystem: true}, nil)
	require.NoError(t, err)
	defer f.close()
	files = f.child()
	assert.Nil(t, files[fdPasswd-3])
	assert.Nil(t, files[fdGroup-3])
	assert.NotNil(t, files[fdSeccomp-3])
}

// With the mount step the child also gets the step's plan (what
// stepMounts makes of the profile, ended, once feedPlan writes it), its
// status pipe and its binary; the binary is the worker's, shared by every
// run, so closing a run's files leaves it open.
func TestRunFilesWithTheMountStep(t *testing.T) {
	exe, err := os.Open(os.Args[0])
	require.NoError(t, err)
	defer exe.Close()
	p := bwrapProfile{Step: true, Masks: masks.Plan{Pins: []string{"/w/a"}, Masks: []masks.Mask{{Path: "/w/a/f", Kind: masks.Hide}}}, Env: []string{"A=1"}}
	f, err := openRunFiles(p, &mountStep{exe: exe})
	require.NoError(t, err)
	defer f.close()
	files := f.child()
	require.Len(t, files, 7)
	require.NoError(t, f.feedPlan(p))
	plan, err := io.ReadAll(files[fdStepPlan-3])
	require.NoError(t, err)
	assert.Equal(t, "B/w/a\x00F/w/a/f\x00VA=1\x00Z\x00", string(plan))
	assert.Same(t, exe, files[fdStepExe-3])
	_, err = files[fdStepStatus-3].Write([]byte("mount over /w/a/f: denied"))
	require.NoError(t, err)
	stepR := f.stepR
	f.closeChild()
	assert.ErrorContains(t, stepFailed(stepR), "mount step failed, the command did not run: mount over /w/a/f: denied")
	f.close()
	_, err = exe.Stat()
	assert.NoError(t, err, "the step's binary stays open")
}

// A plan that cannot be made, or that run drops because its planning
// failed after bubblewrap started, reaches the step as nothing at all (the
// step refuses a plan without its end); a plan of the same files is never
// written twice.
func TestRunFilesPlanDropped(t *testing.T) {
	exe, err := os.Open(os.Args[0])
	require.NoError(t, err)
	defer exe.Close()
	tests := []struct {
		name string
		p    bwrapProfile
		feed func(*runFiles, bwrapProfile) error
	}{
		{"dropped", bwrapProfile{Step: true, Env: []string{"A=1"}}, func(f *runFiles, _ bwrapProfile) error { f.dropPlan(); return nil }},
		{"a NUL in a path", bwrapProfile{Step: true, Masks: masks.Plan{Masks: []masks.Mask{{Path: "/w/a\x00b", Kind: masks.Hide}}}}, (*runFiles).feedPlan},
		{"fed after a drop", bwrapProfile{Step: true, Env: []string{"A=1"}}, func(f *runFiles, p bwrapProfile) error { f.dropPlan(); return f.feedPlan(p) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := openRunFiles(tc.p, &mountStep{exe: exe})
			require.NoError(t, err)
			defer f.close()
			files := f.child()
			err = tc.feed(f, tc.p)
			if tc.name == "a NUL in a path" {
				assert.ErrorContains(t, err, "NUL")
			} else {
				assert.NoError(t, err)
			}
			plan, err := io.ReadAll(files[fdStepPlan-3])
			require.NoError(t, err)
			assert.Empty(t, plan)
		})
	}
}
